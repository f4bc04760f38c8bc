//! Protocol version negotiation (spec §3.6, digest §1.2).

use crate::error::{A2AError, ErrorKind};

/// The A2A versions Switchboard speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Version {
    V0_3,
    V1_0,
}

impl Version {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V0_3 => "0.3",
            Self::V1_0 => "1.0",
        }
    }

    /// Reads an `A2A-Version` value: missing or empty means 0.3 (spec §3.6.2); the patch
    /// number is ignored; anything else is `VersionNotSupportedError`.
    pub fn negotiate(header: Option<&str>) -> Result<Version, A2AError> {
        let raw = header.map(str::trim).unwrap_or_default();
        if raw.is_empty() {
            return Ok(Self::V0_3);
        }
        let mut numbers = raw.split('.');
        let major = numbers.next().and_then(|m| m.trim().parse::<u32>().ok());
        let minor = numbers
            .next()
            .map(|m| m.trim().parse::<u32>().ok())
            .unwrap_or(Some(0));
        match (major, minor) {
            (Some(1), Some(0)) => Ok(Self::V1_0),
            (Some(0), Some(3)) => Ok(Self::V0_3),
            _ => Err(A2AError::new(
                ErrorKind::VersionNotSupported,
                format!("A2A-Version \"{raw}\" is not supported; this server speaks 1.0 and 0.3"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation() {
        assert_eq!(Version::negotiate(None).unwrap(), Version::V0_3);
        assert_eq!(Version::negotiate(Some(" ")).unwrap(), Version::V0_3);
        assert_eq!(Version::negotiate(Some("1.0")).unwrap(), Version::V1_0);
        assert_eq!(Version::negotiate(Some("1.0.3")).unwrap(), Version::V1_0);
        assert_eq!(Version::negotiate(Some("1")).unwrap(), Version::V1_0);
        assert_eq!(Version::negotiate(Some("0.3.0")).unwrap(), Version::V0_3);
        let err = Version::negotiate(Some("2.0")).unwrap_err();
        assert_eq!(err.kind.jsonrpc_code(), -32009);
        assert!(Version::negotiate(Some("abc")).is_err());
    }
}
