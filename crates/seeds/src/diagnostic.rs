//! The zero-address diagnostic (seeds.md § The zero-address diagnostic) and the JSON form of the
//! report.
//!
//! Pure layer: turns a [`Report`] into the message a person reads. It decides nothing about pods
//! and must not log (the caller decides what to do with the error).

use std::fmt;

use serde::ser::{Serialize, SerializeMap, Serializer};

use crate::config::Port;
use crate::extract::{Report, SkipCounts, SkipReason};
use crate::filter::Filter;

/// How many declared port names the message lists before "and N more".
pub const PORT_NAMES_SHOWN: usize = 16;

/// Zero addresses: an error, never an empty success (seeds.md § The consumer contract).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoAddresses {
    /// The label selector as configured.
    pub selector: String,
    /// The namespace that was listed.
    pub namespace: String,
    /// The configured port (its name appears in the message).
    pub port: Port,
    /// The filter the pods were judged with (its IP family appears in the message).
    pub filter: Filter,
    /// What the resolve saw.
    pub report: Report,
}

impl fmt::Display for NoAddresses {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let report = &self.report;
        let noun = if report.matched == 1 { "pod" } else { "pods" };
        write!(
            f,
            "no pod address for selector {} in namespace {}: {} {noun} matched",
            self.selector, self.namespace, report.matched
        )?;
        if report.matched == 0 {
            return f.write_str(" (check the selector and the namespace)");
        }
        let port_name = match &self.port {
            Port::Name(name) => name.as_str(),
            Port::Number(_) => "",
        };
        let parts: Vec<String> = report
            .skipped
            .iter()
            .filter(|&(_, count)| count > 0)
            .map(|(reason, count)| describe_skips(reason, count, port_name, self.filter, report))
            .collect();
        if !parts.is_empty() {
            write!(f, "; skipped {}", parts.join(", "))?;
        }
        Ok(())
    }
}

impl std::error::Error for NoAddresses {}

fn describe_skips(
    reason: SkipReason,
    count: usize,
    port_name: &str,
    filter: Filter,
    report: &Report,
) -> String {
    match reason {
        SkipReason::Terminating => format!("{count} terminating"),
        SkipReason::Finished => format!("{count} finished"),
        SkipReason::NoAddress => format!("{count} without an address yet"),
        SkipReason::UnparsableAddress => format!("{count} with an unparsable address"),
        SkipReason::NoFamilyAddress => match filter.ip_family {
            Some(family) => format!("{count} without an {family} address"),
            None => format!("{count} without an address of the requested family"),
        },
        SkipReason::MissingPortName => format!(
            "{count} without a container port named {port_name} ({})",
            describe_port_names(report)
        ),
        SkipReason::PortOutOfRange => {
            format!("{count} with container port {port_name} out of range")
        }
        SkipReason::NotRunning => {
            format!("{count} whose serving container is not running yet")
        }
    }
}

fn describe_port_names(report: &Report) -> String {
    let seen = &report.port_names_seen;
    if seen.is_empty() {
        return "no named ports declared".to_owned();
    }
    let shown: Vec<&str> = seen
        .iter()
        .take(PORT_NAMES_SHOWN)
        .map(String::as_str)
        .collect();
    let mut text = format!("ports seen: {}", shown.join(", "));
    if seen.len() > PORT_NAMES_SHOWN {
        text.push_str(&format!(", and {} more", seen.len() - PORT_NAMES_SHOWN));
    }
    text
}

/// `{"terminating":0,"finished":0,…}`: all eight keys, always, in check order.
impl Serialize for SkipCounts {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(SkipReason::ALL.len()))?;
        for (reason, count) in self.iter() {
            map.serialize_entry(reason.as_str(), &count)?;
        }
        map.end()
    }
}

/// `{"matched":5,"skipped":{…},"port_names_seen":["http","metrics"]}`.
impl Serialize for Report {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(3))?;
        map.serialize_entry("matched", &self.matched)?;
        map.serialize_entry("skipped", &self.skipped)?;
        map.serialize_entry("port_names_seen", &self.port_names_seen)?;
        map.end()
    }
}
