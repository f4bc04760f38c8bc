//! The SSRF guard for webhook targets: which URLs may be registered and which addresses
//! may be connected to. Checked twice: when a config is registered (the URL's shape, any
//! literal address, and where its host name resolves now, so a caller learns at once that
//! a webhook could never fire) and at connect time, where [`GuardedResolver`] resolves the
//! name again and hands the HTTP client only the addresses it checked, so a rebinding DNS
//! answer cannot slip a private address in between the check and the connection.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use ipnet::IpNet;
use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// What an operator trusts beyond the public internet (`--webhook-allow`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AddressPolicy {
    pub allowed_nets: Vec<IpNet>,
    /// Host names (lower case) whose every address is trusted.
    pub allowed_hosts: Vec<String>,
}

impl AddressPolicy {
    /// Parses a comma-separated allowlist of CIDRs, addresses and host names.
    pub fn parse(list: &str) -> Result<AddressPolicy, String> {
        let mut policy = AddressPolicy::default();
        for item in list.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            if let Ok(net) = item.parse::<IpNet>() {
                policy.allowed_nets.push(net);
            } else if let Ok(ip) = item.parse::<IpAddr>() {
                policy.allowed_nets.push(IpNet::from(ip));
            } else if item
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
            {
                policy.allowed_hosts.push(item.to_ascii_lowercase());
            } else {
                return Err(format!(
                    "webhook allowlist entry \"{item}\" is neither a CIDR, an address nor a host name"
                ));
            }
        }
        Ok(policy)
    }

    /// Whether a connection to `ip` is allowed: a public unicast address, or one the
    /// operator allowed.
    pub fn allows_ip(&self, ip: IpAddr) -> bool {
        is_public(ip) || self.allowed_nets.iter().any(|net| net.contains(&ip))
    }

    fn allows_host(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        self.allowed_hosts.contains(&host)
    }

    /// Checks a webhook URL before it is stored.
    pub fn check_url(&self, raw: &str) -> Result<Url, String> {
        if raw.chars().any(|c| c.is_control()) {
            return Err("must not contain control characters".into());
        }
        let url = Url::parse(raw).map_err(|e| format!("is not a valid URL: {e}"))?;
        if url.scheme() != "http" && url.scheme() != "https" {
            return Err(format!("must use http or https, not {}", url.scheme()));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err("must not carry credentials; use the config's authentication".into());
        }
        match url.host() {
            None => Err("needs a host".into()),
            Some(url::Host::Ipv4(ip)) => self.check_literal(IpAddr::V4(ip)).map(|()| url.clone()),
            Some(url::Host::Ipv6(ip)) => self.check_literal(IpAddr::V6(ip)).map(|()| url.clone()),
            Some(url::Host::Domain(_)) => Ok(url.clone()),
        }
    }

    /// Checks a webhook URL at registration: [`Self::check_url`], then the addresses its
    /// host name resolves to now. A name that does not resolve, or resolves to an address
    /// the policy does not allow, is refused here rather than at every delivery.
    pub async fn check_target(&self, raw: &str) -> Result<Url, String> {
        let url = self.check_url(raw)?;
        if let Some(url::Host::Domain(host)) = url.host() {
            let port = url.port_or_known_default().unwrap_or(443);
            self.resolve_allowed(host, port).await?;
        }
        Ok(url)
    }

    /// The addresses `host` resolves to, if the policy allows every one of them.
    async fn resolve_allowed(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, String> {
        let lookup = tokio::net::lookup_host((host, port));
        let resolved: Vec<SocketAddr> = match tokio::time::timeout(LOOKUP_TIMEOUT, lookup).await {
            Ok(Ok(addresses)) => addresses.collect(),
            Ok(Err(e)) => return Err(format!("names a host, {host}, that does not resolve ({e})")),
            Err(_) => {
                return Err(format!(
                    "names a host, {host}, that did not resolve within {}s",
                    LOOKUP_TIMEOUT.as_secs()
                ));
            }
        };
        if resolved.is_empty() {
            return Err(format!("names a host, {host}, that resolves to no address"));
        }
        if self.allows_host(host) {
            return Ok(resolved);
        }
        let refused: Vec<IpAddr> = resolved
            .iter()
            .map(SocketAddr::ip)
            .filter(|ip| !self.allows_ip(*ip))
            .collect();
        if refused.is_empty() {
            return Ok(resolved);
        }
        // A name with one private address among public ones is refused outright: which
        // one a client would pick is not ours to guess.
        let which = if refused.len() == resolved.len() {
            "only to addresses"
        } else {
            "to addresses among others"
        };
        Err(format!(
            "names a host, {host}, that resolves {which} that are not public ({}); an operator can allow them with --webhook-allow",
            refused
                .iter()
                .map(IpAddr::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }

    fn check_literal(&self, ip: IpAddr) -> Result<(), String> {
        if self.allows_ip(ip) {
            Ok(())
        } else {
            Err(format!(
                "points at {ip}, which is not a public address (an operator can allow it with --webhook-allow)"
            ))
        }
    }
}

/// How long a webhook host's name may take to resolve, at registration and at delivery.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(5);

/// Whether an address is globally routable unicast: not loopback, private (RFC 1918),
/// link-local, CGNAT, multicast, unspecified, broadcast, documentation, benchmarking or
/// reserved, nor an IPv6 ULA/link-local, nor an IPv4-mapped or -compatible form of those.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_public_v4(v4),
            None => is_public_v6(v6),
        },
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    let cgnat = a == 100 && (64..128).contains(&b);
    let protocol_assignments = a == 192 && b == 0 && c == 0;
    let benchmarking = a == 198 && (b == 18 || b == 19);
    let reserved = a >= 240;
    let this_network = a == 0;
    !(ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_multicast()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_documentation()
        || cgnat
        || protocol_assignments
        || benchmarking
        || reserved
        || this_network)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    let documentation = first == 0x2001 && ip.segments()[1] == 0x0db8;
    // ::/96 (deprecated IPv4-compatible), 64:ff9b::/96 NAT64 and 100::/64 discard are not
    // direct public targets either.
    let compatible = ip.segments()[..6].iter().all(|s| *s == 0);
    let nat64 = first == 0x0064 && ip.segments()[1] == 0xff9b;
    let discard = first == 0x0100 && ip.segments()[1..4].iter().all(|s| *s == 0);
    !(ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || ip.is_unique_local()
        || ip.is_unicast_link_local()
        || documentation
        || compatible
        || nat64
        || discard)
}

/// A resolver for the HTTP client that only ever returns addresses the policy allows.
#[derive(Clone, Debug)]
pub struct GuardedResolver {
    policy: Arc<AddressPolicy>,
}

impl GuardedResolver {
    pub fn new(policy: Arc<AddressPolicy>) -> GuardedResolver {
        GuardedResolver { policy }
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy.clone();
        Box::pin(async move {
            // The HTTP client puts the URL's port on the addresses it is handed.
            match policy.resolve_allowed(name.as_str(), 0).await {
                Ok(allowed) => {
                    let addrs: Addrs = Box::new(allowed.into_iter());
                    Ok(addrs)
                }
                Err(reason) => {
                    let err: Box<dyn std::error::Error + Send + Sync> = reason.into();
                    Err(err)
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_addresses() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "240.0.0.1",
            "::1",
            "fc00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::",
            "2001:db8::1",
        ] {
            assert!(!is_public(private.parse().unwrap()), "{private}");
        }
        for public in [
            "8.8.8.8",
            "1.1.1.1",
            "2606:4700:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert!(is_public(public.parse().unwrap()), "{public}");
        }
    }

    #[test]
    fn urls_are_checked_before_storing() {
        let strict = AddressPolicy::default();
        assert!(strict.check_url("https://example.com/hook").is_ok());
        for bad in [
            "ftp://example.com/x",
            "https://user:pass@example.com/x",
            "http://127.0.0.1/x",
            "http://2130706433/x",
            "http://0177.0.0.1/x",
            "http://0x7f.1/x",
            "http://[::ffff:127.0.0.1]/x",
            "http://[fe80::1]/x",
            "http://169.254.169.254/latest/meta-data",
            "https://example.com/x\r\nX-Injected: 1",
            "not a url",
        ] {
            assert!(strict.check_url(bad).is_err(), "{bad}");
        }
        let local = AddressPolicy::parse("127.0.0.0/8, ::1, localhost").unwrap();
        assert!(local.check_url("http://127.0.0.1:9/hook").is_ok());
        assert!(local.check_url("http://10.0.0.1/hook").is_err());
        assert!(AddressPolicy::parse("not/a cidr").is_err());
    }

    #[tokio::test]
    async fn resolver_refuses_private_answers() {
        let strict = GuardedResolver::new(Arc::new(AddressPolicy::default()));
        let err = strict
            .resolve("localhost".parse().unwrap())
            .await
            .err()
            .unwrap();
        assert!(err.to_string().contains("not public"), "{err}");
        let trusting = GuardedResolver::new(Arc::new(AddressPolicy::parse("localhost").unwrap()));
        assert!(trusting.resolve("localhost".parse().unwrap()).await.is_ok());
        let by_net =
            GuardedResolver::new(Arc::new(AddressPolicy::parse("127.0.0.0/8,::1").unwrap()));
        assert!(by_net.resolve("localhost".parse().unwrap()).await.is_ok());
    }

    #[tokio::test]
    async fn registration_resolves_the_host_name() {
        let strict = AddressPolicy::default();
        let loopback = strict
            .check_target("http://localhost:9/x")
            .await
            .unwrap_err();
        assert!(
            loopback.contains("localhost") && loopback.contains("not public"),
            "{loopback}"
        );
        let unresolvable = strict
            .check_target("https://no-such-host.invalid/x")
            .await
            .unwrap_err();
        assert!(unresolvable.contains("does not resolve"), "{unresolvable}");
        assert!(strict.check_target("http://127.0.0.1/x").await.is_err());
        let local = AddressPolicy::parse("127.0.0.0/8,::1").unwrap();
        assert!(local.check_target("http://localhost:9/x").await.is_ok());
        assert!(local.check_target("http://127.0.0.1:9/x").await.is_ok());
        let by_name = AddressPolicy::parse("localhost").unwrap();
        assert!(by_name.check_target("http://localhost:9/x").await.is_ok());
    }
}
