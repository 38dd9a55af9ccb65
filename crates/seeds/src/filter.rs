//! The two opt-in narrowings of which pods count and at which address (seeds.md § Address family
//! and running containers): `IpFamily` (take the pod's first address of one family instead of
//! its primary one) and `require_running` (skip pods whose serving container is not running
//! yet), bundled as [`Filter`].
//!
//! Pure layer: plain values and their parsing; the rules that apply them live in `extract`. It
//! lives outside [`Pods`](crate::Pods) so that every existing `Pods` literal and the serde form of
//! `Pods` stay as they are (the same reason `SeedsOptions` of `PodSeeds` lives outside it).

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

/// An IP address family, for dual-stack clusters whose peers talk one family only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum IpFamily {
    /// IPv4 (`10.0.0.1`).
    Ipv4,
    /// IPv6 (`fd00::1`).
    Ipv6,
}

impl IpFamily {
    /// Every family, in the order they are listed in messages.
    pub const ALL: [IpFamily; 2] = [IpFamily::Ipv4, IpFamily::Ipv6];

    /// The family's name as written on the command line and in the serde form: `ipv4`, `ipv6`.
    pub fn as_str(self) -> &'static str {
        match self {
            IpFamily::Ipv4 => "ipv4",
            IpFamily::Ipv6 => "ipv6",
        }
    }

    /// Whether `ip` belongs to this family. An IPv4-mapped IPv6 address (`::ffff:10.0.0.1`) is
    /// IPv6 here, as it is on the wire: the pod reported it in that form.
    pub fn contains(self, ip: &IpAddr) -> bool {
        match self {
            IpFamily::Ipv4 => ip.is_ipv4(),
            IpFamily::Ipv6 => ip.is_ipv6(),
        }
    }
}

impl fmt::Display for IpFamily {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A family name other than `ipv4` or `ipv6`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown IP family {given:?}: use ipv4 or ipv6")]
pub struct UnknownIpFamily {
    /// The text as given.
    pub given: String,
}

impl FromStr for IpFamily {
    type Err = UnknownIpFamily;

    /// `ipv4` or `ipv6`, exactly (lower case, no whitespace), as the serde form accepts them.
    fn from_str(text: &str) -> Result<Self, UnknownIpFamily> {
        IpFamily::ALL
            .into_iter()
            .find(|family| family.as_str() == text)
            .ok_or_else(|| UnknownIpFamily {
                given: text.to_owned(),
            })
    }
}

/// Opt-in narrowings of seeds.md § Which pods count. The default is none of them: the primary
/// address of every live pod with an address, whatever its containers are doing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct Filter {
    /// Take the pod's first address of this family (from `status.podIP`, then
    /// `status.podIPs[]`) instead of its primary address; a pod without one is skipped as
    /// `no_family_address`.
    #[cfg_attr(feature = "serde", serde(default))]
    pub ip_family: Option<IpFamily>,
    /// Skip pods whose serving container is not running yet, as `not_running`. The serving
    /// container is the one declaring the named port (`Port::Name`) or the first one declaring
    /// the fixed port's number (`Port::Number`); when no container declares that number, at
    /// least one of the searched containers (regular containers and native sidecars) must run.
    #[cfg_attr(feature = "serde", serde(default))]
    pub require_running: bool,
}
