//! Server CPU time and resident memory from `/proc`, summed over a set of processes.

use std::time::Duration;

/// Clock ticks per second of `/proc/PID/stat` times (USER_HZ, 100 on Linux).
const TICKS_PER_SECOND: u64 = 100;

/// utime + stime of one process.
fn cpu_ticks(pid: u32) -> anyhow::Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    let after = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .ok_or_else(|| anyhow::anyhow!("/proc/{pid}/stat: unexpected format"))?;
    let fields: Vec<&str> = after.split_whitespace().collect();
    // After the name: state is field 3, utime 14, stime 15 (1-based in proc(5)).
    let field = |n: usize| -> anyhow::Result<u64> {
        Ok(fields
            .get(n - 3)
            .ok_or_else(|| anyhow::anyhow!("/proc/{pid}/stat: too few fields"))?
            .parse()?)
    };
    Ok(field(14)? + field(15)?)
}

/// CPU time used so far by all of `pids`.
pub fn cpu_time(pids: &[u32]) -> anyhow::Result<Duration> {
    let mut ticks = 0;
    for pid in pids {
        ticks += cpu_ticks(*pid)?;
    }
    Ok(Duration::from_millis(ticks * 1000 / TICKS_PER_SECOND))
}

/// Resident set size of all of `pids`, in bytes.
pub fn rss_bytes(pids: &[u32]) -> anyhow::Result<u64> {
    let mut total = 0;
    for pid in pids {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
        let kb: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .ok_or_else(|| anyhow::anyhow!("/proc/{pid}/status has no VmRSS"))?;
        total += kb * 1024;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_process() -> anyhow::Result<()> {
        let me = std::process::id();
        let before = cpu_time(&[me])?;
        let mut x = 0u64;
        for i in 0..30_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(cpu_time(&[me])? >= before);
        assert!(rss_bytes(&[me])? > 1024 * 1024);
        assert!(cpu_time(&[u32::MAX]).is_err());
        Ok(())
    }
}
