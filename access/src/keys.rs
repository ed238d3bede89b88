//! API keys as the access layer uses them: permissions, kinds, IP rules.

use std::net::IpAddr;
use std::str::FromStr;

use rand::Rng;

/// What a key may do.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Permission {
    /// Read account data (balances, orders) and query the index.
    Read,
    /// Place and cancel orders.
    Trade,
    /// Withdraw funds.
    Withdraw,
}

impl Permission {
    const fn bit(self) -> u8 {
        match self {
            Self::Read => 1,
            Self::Trade => 2,
            Self::Withdraw => 4,
        }
    }
}

/// A set of permissions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Permissions(u8);

impl Permissions {
    /// From stored bits (unknown bits dropped).
    pub fn from_bits(bits: u8) -> Self {
        Self(bits & 0b111)
    }

    /// The stored bits.
    pub fn bits(self) -> u8 {
        self.0
    }

    /// Whether `permission` is granted.
    pub fn allows(self, permission: Permission) -> bool {
        self.0 & permission.bit() != 0
    }

    /// The granted permissions, in order.
    pub fn list(self) -> Vec<Permission> {
        [Permission::Read, Permission::Trade, Permission::Withdraw]
            .into_iter()
            .filter(|p| self.allows(*p))
            .collect()
    }
}

impl FromIterator<Permission> for Permissions {
    fn from_iter<I: IntoIterator<Item = Permission>>(iter: I) -> Self {
        Self(iter.into_iter().fold(0, |bits, p| bits | p.bit()))
    }
}

/// How requests made with a key are signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyKind {
    /// HMAC-SHA256 with a server-generated secret.
    Hmac,
    /// Ed25519 with a client-registered public key.
    Ed25519,
}

impl KeyKind {
    /// The stored tag.
    pub fn tag(self) -> u8 {
        match self {
            Self::Hmac => 0,
            Self::Ed25519 => 1,
        }
    }

    /// From the stored tag.
    pub fn from_tag(tag: u8) -> Option<Self> {
        match tag {
            0 => Some(Self::Hmac),
            1 => Some(Self::Ed25519),
            _ => None,
        }
    }
}

/// One entry of an IP allow-list: an address or a CIDR block, v4 or v6.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpRule {
    network: IpAddr,
    prefix: u8,
}

/// An IP rule that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not an IP address or CIDR block: {0:?}")]
pub struct BadIpRule(pub String);

impl FromStr for IpRule {
    type Err = BadIpRule;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || BadIpRule(text.to_owned());
        let (address, prefix) = match text.split_once('/') {
            Some((address, prefix)) => (address, Some(prefix)),
            None => (text, None),
        };
        let network: IpAddr = address.trim().parse().map_err(|_| bad())?;
        let max = if network.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(p) => p
                .trim()
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(bad)?,
            None => max,
        };
        Ok(Self {
            network: mask(network, prefix),
            prefix,
        })
    }
}

impl std::fmt::Display for IpRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let max = if self.network.is_ipv4() { 32 } else { 128 };
        if self.prefix == max {
            write!(f, "{}", self.network)
        } else {
            write!(f, "{}/{}", self.network, self.prefix)
        }
    }
}

fn mask(address: IpAddr, prefix: u8) -> IpAddr {
    match address {
        IpAddr::V4(v4) => {
            let bits = u32::from(v4);
            let mask = if prefix == 0 {
                0
            } else {
                u32::MAX << (32 - prefix)
            };
            IpAddr::V4((bits & mask).into())
        }
        IpAddr::V6(v6) => {
            let bits = u128::from(v6);
            let mask = if prefix == 0 {
                0
            } else {
                u128::MAX << (128 - prefix)
            };
            IpAddr::V6((bits & mask).into())
        }
    }
}

impl IpRule {
    /// Whether `ip` falls in this rule. IPv4-mapped IPv6 addresses match v4 rules.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
            v4 => v4,
        };
        ip.is_ipv4() == self.network.is_ipv4() && mask(ip, self.prefix) == self.network
    }
}

const ALPHANUMERIC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// 64 random alphanumerics from the OS-seeded generator: key ids and HMAC secrets.
pub fn random_token() -> String {
    let mut rng = rand::rng();
    (0..64)
        .map(|_| ALPHANUMERIC[rng.random_range(0..ALPHANUMERIC.len())] as char)
        .collect()
}

/// Whether `text` has the shape of a key id (so a malformed one is told apart from an unknown one).
pub fn is_key_id_shaped(text: &str) -> bool {
    (1..=128).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(text: &str) -> IpRule {
        text.parse().unwrap()
    }

    #[test]
    fn addresses_and_cidrs_match_v4_and_v6() {
        assert!(rule("10.9.9.9").contains("10.9.9.9".parse().unwrap()));
        assert!(!rule("10.9.9.9").contains("127.0.0.1".parse().unwrap()));
        assert!(rule("10.0.0.0/8").contains("10.200.1.2".parse().unwrap()));
        assert!(!rule("10.0.0.0/8").contains("11.0.0.1".parse().unwrap()));
        assert!(rule("0.0.0.0/0").contains("8.8.8.8".parse().unwrap()));
        assert!(rule("2001:db8::/32").contains("2001:db8:1::5".parse().unwrap()));
        assert!(!rule("2001:db8::/32").contains("2001:db9::1".parse().unwrap()));
        assert!(
            rule("127.0.0.1").contains("::ffff:127.0.0.1".parse().unwrap()),
            "v4-mapped"
        );
        assert!(!rule("::1").contains("127.0.0.1".parse().unwrap()));
        assert_eq!(rule("10.1.2.3/8").to_string(), "10.0.0.0/8");
    }

    #[test]
    fn bad_rules_are_refused() {
        for bad in [
            "",
            "10.0.0.0/33",
            "::/129",
            "10.0.0",
            "host.example",
            "10.0.0.0/x",
        ] {
            assert!(bad.parse::<IpRule>().is_err(), "{bad}");
        }
    }

    #[test]
    fn permissions_round_trip_through_bits() {
        let set: Permissions = [Permission::Read, Permission::Withdraw]
            .into_iter()
            .collect();
        assert!(set.allows(Permission::Read) && !set.allows(Permission::Trade));
        assert_eq!(Permissions::from_bits(set.bits()), set);
        assert_eq!(set.list(), vec![Permission::Read, Permission::Withdraw]);
    }

    #[test]
    fn tokens_are_64_alphanumerics_and_differ() {
        let a = random_token();
        assert_eq!(a.len(), 64);
        assert!(is_key_id_shaped(&a));
        assert_ne!(a, random_token());
        assert!(!is_key_id_shaped("has space"));
    }
}
