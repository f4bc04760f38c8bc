//! RFC 3339 text of a UTC time, written into a buffer on the stack: every stored task,
//! status and event carries timestamps, and chrono's own formatting allocates a `String`
//! for each (or goes through `core::fmt`). The text is chrono's, byte for byte (the
//! tests compare them); chrono still does the calendar.

use chrono::{DateTime, Datelike, SecondsFormat, Timelike, Utc};

/// How many fractional digits the text has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fraction {
    /// Always three: `SecondsFormat::Millis` (what the A2A wire forms carry).
    Millis,
    /// None, three, six or nine, the fewest that hold the time exactly:
    /// `SecondsFormat::AutoSi` (chrono's serde form).
    AutoSi,
}

impl Fraction {
    fn seconds_format(self) -> SecondsFormat {
        match self {
            Fraction::Millis => SecondsFormat::Millis,
            Fraction::AutoSi => SecondsFormat::AutoSi,
        }
    }
}

/// `ts` as RFC 3339 text with a `Z`, handed to `with`: written on the stack, or by
/// chrono for a year that does not fit four digits.
pub fn with_text<R>(ts: &DateTime<Utc>, fraction: Fraction, with: impl FnOnce(&str) -> R) -> R {
    match Rfc3339::of(ts, fraction) {
        Some(text) => with(text.as_str()),
        None => with(&ts.to_rfc3339_opts(fraction.seconds_format(), true)),
    }
}

/// The text, at most `YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ`.
#[derive(Clone, Copy, Debug)]
pub struct Rfc3339 {
    bytes: [u8; 30],
    len: usize,
}

impl Rfc3339 {
    /// `ts` as text with a `Z`; `None` for a year outside 0–9999, which does not fit
    /// four digits (chrono then writes a sign: let it).
    pub fn of(ts: &DateTime<Utc>, fraction: Fraction) -> Option<Rfc3339> {
        // Read from the UTC time as stored: a `DateTime`'s own accessors apply its
        // offset again for each field.
        let naive = ts.naive_utc();
        let (date, time) = (naive.date(), naive.time());
        let year = u32::try_from(date.year()).ok().filter(|y| *y <= 9999)?;
        // A leap second is second 59 with a nanosecond count past 1e9; chrono writes 60.
        let (second, nanos) = match time.nanosecond() {
            leap @ 1_000_000_000.. => (time.second() + 1, leap - 1_000_000_000),
            nanos => (time.second(), nanos),
        };
        let mut text = Rfc3339 {
            bytes: *b"0000-00-00T00:00:00.000000000Z",
            len: 0,
        };
        text.put(0, year, 4);
        text.put(5, date.month(), 2);
        text.put(8, date.day(), 2);
        text.put(11, time.hour(), 2);
        text.put(14, time.minute(), 2);
        text.put(17, second, 2);
        let digits = match fraction {
            Fraction::Millis => 3,
            Fraction::AutoSi if nanos == 0 => 0,
            Fraction::AutoSi if nanos % 1_000_000 == 0 => 3,
            Fraction::AutoSi if nanos % 1_000 == 0 => 6,
            Fraction::AutoSi => 9,
        };
        let end = match digits {
            0 => 19,
            _ => {
                text.put(20, nanos / 10u32.pow(9 - digits), digits as usize);
                20 + digits as usize
            }
        };
        text.bytes[end] = b'Z';
        text.len = end + 1;
        Some(text)
    }

    pub fn as_str(&self) -> &str {
        // Only ASCII digits and separators are ever written.
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or_default()
    }

    /// Writes `value` as `width` decimal digits at `at`.
    fn put(&mut self, at: usize, mut value: u32, width: usize) {
        for slot in self.bytes[at..at + width].iter_mut().rev() {
            *slot = b'0' + (value % 10) as u8;
            value /= 10;
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::{NaiveDate, TimeZone};

    use super::*;

    fn times() -> Vec<DateTime<Utc>> {
        let mut times = vec![
            Utc.with_ymd_and_hms(0, 1, 1, 0, 0, 0).unwrap(),
            Utc.with_ymd_and_hms(9999, 12, 31, 23, 59, 59).unwrap(),
        ];
        let base = Utc.with_ymd_and_hms(2026, 11, 29, 6, 7, 8).unwrap();
        for nanos in [999_999_999, 120_000_000, 120_400_000, 120_400_500, 5, 1_000] {
            times.push(base + chrono::Duration::nanoseconds(nanos));
        }
        // Leap seconds, with and without a fraction past them.
        for nanos in [1_000_000_000, 1_234_000_000, 1_000_000_007] {
            let leap = NaiveDate::from_ymd_opt(2016, 12, 31)
                .and_then(|d| d.and_hms_nano_opt(23, 59, 59, nanos))
                .unwrap();
            times.push(Utc.from_utc_datetime(&leap));
        }
        let mut at = Utc.with_ymd_and_hms(1970, 1, 1, 0, 0, 0).unwrap();
        for step in 0..2000_i64 {
            at += chrono::Duration::nanoseconds(1_234_567_891_000_000 + step % 7 * 1_001);
            times.push(at);
        }
        times
    }

    #[test]
    fn millis_are_chronos_millis() {
        for ts in times() {
            let text = Rfc3339::of(&ts, Fraction::Millis).expect("a four-digit year");
            assert_eq!(
                text.as_str(),
                ts.to_rfc3339_opts(SecondsFormat::Millis, true)
            );
        }
    }

    #[test]
    fn auto_si_is_chronos_serde_form() {
        for ts in times() {
            let text = Rfc3339::of(&ts, Fraction::AutoSi).expect("a four-digit year");
            let chronos = serde_json::to_string(&ts).unwrap();
            assert_eq!(format!("\"{}\"", text.as_str()), chronos);
        }
    }

    #[test]
    fn a_year_past_four_digits_is_left_to_chrono() {
        let far = Utc.with_ymd_and_hms(10000, 1, 1, 0, 0, 0).unwrap();
        assert!(Rfc3339::of(&far, Fraction::Millis).is_none());
        let before =
            Utc.with_ymd_and_hms(-1, 1, 1, 0, 0, 0).unwrap() + chrono::Duration::milliseconds(5);
        assert!(Rfc3339::of(&before, Fraction::AutoSi).is_none());
        for ts in [far, before] {
            let millis = with_text(&ts, Fraction::Millis, str::to_owned);
            assert_eq!(millis, ts.to_rfc3339_opts(SecondsFormat::Millis, true));
            let auto_si = with_text(&ts, Fraction::AutoSi, |text| format!("\"{text}\""));
            assert_eq!(auto_si, serde_json::to_string(&ts).unwrap());
        }
    }

    #[test]
    fn with_text_hands_over_the_stack_text() {
        for ts in times() {
            for fraction in [Fraction::Millis, Fraction::AutoSi] {
                let text = with_text(&ts, fraction, str::to_owned);
                assert_eq!(text, ts.to_rfc3339_opts(fraction.seconds_format(), true));
            }
        }
    }
}
