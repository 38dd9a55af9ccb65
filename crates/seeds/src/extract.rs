//! Which pods count and at which address (seeds.md § Which pods count, § Named container port,
//! § Output): the per-pod verdict, the per-resolve accumulation into sorted unique addresses,
//! and the report of what was skipped.
//!
//! Pure layer: no I/O, no clock, no logging (warnings are returned as values for `warn`). It
//! must never drop a skipped pod from the report, and never yield more than one address per pod.

use std::collections::BTreeSet;
use std::net::{AddrParseError, IpAddr, SocketAddr};

use crate::config::Port;
use crate::filter::{Filter, IpFamily};
use crate::lean::{LeanContainer, LeanPod, LeanPort};

/// Why a matched pod contributes no address. Each skipped pod has exactly one reason: the first
/// check it fails, in the order of the variants (seeds.md § Which pods count).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SkipReason {
    /// `metadata.deletionTimestamp` is present.
    Terminating,
    /// `status.phase` is `Succeeded` or `Failed`.
    Finished,
    /// Neither `status.podIP` nor the first `status.podIPs[].ip` is non-empty (with an IP
    /// family: no entry of either is non-empty).
    NoAddress,
    /// The address is neither IPv4 nor IPv6 (with an IP family: no address of that family
    /// parses, and one of the pod's addresses does not parse at all).
    UnparsableAddress,
    /// An IP family is configured and none of the pod's addresses belongs to it.
    NoFamilyAddress,
    /// No container port has the configured name.
    MissingPortName,
    /// The first container port of the configured name is outside 1–65535.
    PortOutOfRange,
    /// Running containers are required and the serving container is not running yet.
    NotRunning,
}

impl SkipReason {
    /// Every reason, in check order.
    pub const ALL: [SkipReason; 8] = [
        SkipReason::Terminating,
        SkipReason::Finished,
        SkipReason::NoAddress,
        SkipReason::UnparsableAddress,
        SkipReason::NoFamilyAddress,
        SkipReason::MissingPortName,
        SkipReason::PortOutOfRange,
        SkipReason::NotRunning,
    ];

    /// The reason's wire name, as used in JSON output (`no_address`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            SkipReason::Terminating => "terminating",
            SkipReason::Finished => "finished",
            SkipReason::NoAddress => "no_address",
            SkipReason::UnparsableAddress => "unparsable_address",
            SkipReason::NoFamilyAddress => "no_family_address",
            SkipReason::MissingPortName => "missing_port_name",
            SkipReason::PortOutOfRange => "port_out_of_range",
            SkipReason::NotRunning => "not_running",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// How many pods were skipped for each reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SkipCounts([usize; SkipReason::ALL.len()]);

impl SkipCounts {
    /// The count for one reason.
    pub fn get(&self, reason: SkipReason) -> usize {
        self.0[reason.index()]
    }

    /// Every reason with its count, in check order (zero counts included).
    pub fn iter(&self) -> impl Iterator<Item = (SkipReason, usize)> + '_ {
        SkipReason::ALL
            .into_iter()
            .map(|reason| (reason, self.get(reason)))
    }

    /// The sum over all reasons.
    pub fn total(&self) -> usize {
        self.0.iter().sum()
    }

    fn record(&mut self, reason: SkipReason) {
        self.0[reason.index()] += 1;
    }
}

/// What one resolve saw (seeds.md § The zero-address diagnostic).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Pods the selector matched (every pod listed, skipped or not).
    pub matched: usize,
    /// Skipped pods by reason.
    pub skipped: SkipCounts,
    /// The distinct port names declared by pods skipped as `missing_port_name`, sorted.
    pub port_names_seen: BTreeSet<String>,
}

/// A skip worth a warning (seeds.md § Logging), with the detail that makes it "the same"
/// warning across resolves.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WarningDetail {
    /// The pod's address does not parse.
    UnparsableAddress {
        /// The address as the pod reports it.
        ip: String,
        /// The parser's complaint.
        error: String,
    },
    /// The named port's number is outside 1–65535.
    PortOutOfRange {
        /// The configured name.
        port_name: String,
        /// The declared number.
        container_port: i64,
    },
    /// No container port of the configured name.
    MissingPortName {
        /// The configured name.
        port_name: String,
        /// The names the pod does declare, sorted and distinct.
        declared: BTreeSet<String>,
    },
}

/// One pod's warning.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PodWarning {
    /// The pod's identity for warn-once: its uid, else its name (one listing is one namespace,
    /// where names are unique).
    pub key: String,
    /// The pod's name for the log line, `<unnamed>` when absent.
    pub pod: String,
    /// What is wrong.
    pub detail: WarningDetail,
}

/// The outcome for one pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// The pod contributes this address.
    Address(SocketAddr),
    /// The pod is skipped, with the warning the skip deserves, if any.
    Skipped(SkipReason, Option<WarningDetail>),
}

/// Decides one pod with no [`Filter`]: the checks of seeds.md § Which pods count, in order.
pub fn evaluate(pod: &LeanPod, port: &Port) -> Verdict {
    evaluate_with(pod, port, &Filter::default())
}

/// Decides one pod: the checks of seeds.md § Which pods count, in order, narrowed by `filter`
/// (seeds.md § Address family and running containers).
pub fn evaluate_with(pod: &LeanPod, port: &Port, filter: &Filter) -> Verdict {
    if pod.terminating {
        return Verdict::Skipped(SkipReason::Terminating, None);
    }
    if pod.finished {
        return Verdict::Skipped(SkipReason::Finished, None);
    }
    let ip = match choose_address(pod, filter.ip_family) {
        Ok(ip) => ip,
        Err(skip) => return skip,
    };
    let (number, named) = match port {
        Port::Number(number) => (number.get(), None),
        Port::Name(name) => match find_named_port(pod, name) {
            Some((container, found)) => match u16::try_from(found.container_port) {
                Ok(number) if number != 0 => (number, Some(container)),
                _ => {
                    let detail = WarningDetail::PortOutOfRange {
                        port_name: name.clone(),
                        container_port: found.container_port,
                    };
                    return Verdict::Skipped(SkipReason::PortOutOfRange, Some(detail));
                }
            },
            None => {
                let detail = WarningDetail::MissingPortName {
                    port_name: name.clone(),
                    declared: declared_port_names(pod),
                };
                return Verdict::Skipped(SkipReason::MissingPortName, Some(detail));
            }
        },
    };
    if filter.require_running && !serving_is_running(pod, named, number) {
        // Not warned: a starting container is normal, like a starting pod without an address.
        return Verdict::Skipped(SkipReason::NotRunning, None);
    }
    Verdict::Address(SocketAddr::new(ip, number))
}

/// The pod's address: without a family its primary address (`status.podIP` if non-empty, else
/// the first `status.podIPs[].ip` if non-empty); with one, the first address of that family
/// among `status.podIP` and then every `status.podIPs[].ip`.
fn choose_address(pod: &LeanPod, family: Option<IpFamily>) -> Result<IpAddr, Verdict> {
    let Some(family) = family else {
        let Some(text) = primary_address(pod) else {
            return Err(Verdict::Skipped(SkipReason::NoAddress, None));
        };
        return text.parse().map_err(|error| unparsable(text, &error));
    };
    let mut candidates = non_empty(&pod.pod_ip)
        .into_iter()
        .chain(
            pod.pod_ips
                .iter()
                .map(String::as_str)
                .filter(|ip| !ip.is_empty()),
        )
        .peekable();
    if candidates.peek().is_none() {
        return Err(Verdict::Skipped(SkipReason::NoAddress, None));
    }
    let mut first_unparsable = None;
    for text in candidates {
        match text.parse::<IpAddr>() {
            Ok(ip) if family.contains(&ip) => return Ok(ip),
            Ok(_) => {}
            Err(error) => {
                first_unparsable.get_or_insert((text, error));
            }
        }
    }
    // An address that does not parse may be the one of the wanted family: report it (with its
    // warning) rather than claim the pod has no address of that family.
    Err(match first_unparsable {
        Some((text, error)) => unparsable(text, &error),
        None => Verdict::Skipped(SkipReason::NoFamilyAddress, None),
    })
}

fn unparsable(text: &str, error: &AddrParseError) -> Verdict {
    let detail = WarningDetail::UnparsableAddress {
        ip: text.to_owned(),
        error: format!("{error}"),
    };
    Verdict::Skipped(SkipReason::UnparsableAddress, Some(detail))
}

/// `status.podIP` if non-empty, else the first `status.podIPs[].ip` if non-empty.
fn primary_address(pod: &LeanPod) -> Option<&str> {
    non_empty(&pod.pod_ip).or_else(|| {
        pod.pod_ips
            .first()
            .map(String::as_str)
            .filter(|ip| !ip.is_empty())
    })
}

fn non_empty(ip: &Option<String>) -> Option<&str> {
    ip.as_deref().filter(|ip| !ip.is_empty())
}

/// The containers searched for a port: regular containers, then native sidecars.
fn searched_containers(pod: &LeanPod) -> impl Iterator<Item = &LeanContainer> {
    let sidecars = pod
        .init_containers
        .iter()
        .filter(|init| init.restart_always);
    pod.containers.iter().chain(sidecars)
}

fn find_named_port<'p>(pod: &'p LeanPod, name: &str) -> Option<(&'p LeanContainer, &'p LeanPort)> {
    searched_containers(pod).find_map(|container| {
        container
            .ports
            .iter()
            .find(|port| port.name.as_deref() == Some(name))
            .map(|port| (container, port))
    })
}

/// The first searched container declaring `containerPort` = `number` (any name, any protocol).
fn container_with_number(pod: &LeanPod, number: u16) -> Option<&LeanContainer> {
    searched_containers(pod).find(|container| {
        container
            .ports
            .iter()
            .any(|port| port.container_port == i64::from(number))
    })
}

/// The serving container runs: the one declaring the named port (`named`), else the first one
/// declaring `number`; with none identified, at least one searched container runs.
fn serving_is_running(pod: &LeanPod, named: Option<&LeanContainer>, number: u16) -> bool {
    let runs = |container: &LeanContainer| {
        container
            .name
            .as_deref()
            .is_some_and(|name| pod.running_containers.iter().any(|running| running == name))
    };
    match named.or_else(|| container_with_number(pod, number)) {
        Some(container) => runs(container),
        None => searched_containers(pod).any(runs),
    }
}

fn declared_port_names(pod: &LeanPod) -> BTreeSet<String> {
    searched_containers(pod)
        .flat_map(|container| container.ports.iter())
        .filter_map(|port| port.name.clone())
        .collect()
}

/// Accumulates verdicts over the pages of one listing.
#[derive(Debug, Clone)]
pub struct Extractor<'p> {
    port: &'p Port,
    filter: Filter,
    addresses: BTreeSet<SocketAddr>,
    report: Report,
    warnings: Vec<PodWarning>,
}

/// The result of one listing: the addresses, sorted ascending and unique (IPv4 before IPv6,
/// then by address, then by port), the report, and the warnings the skips deserve.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extraction {
    /// The seed addresses.
    pub addresses: Vec<SocketAddr>,
    /// What was matched and skipped.
    pub report: Report,
    /// One entry per warned skip, before warn-once filtering.
    pub warnings: Vec<PodWarning>,
    /// The filter the pods were judged with (the zero-address diagnostic names its family).
    pub filter: Filter,
}

impl<'p> Extractor<'p> {
    /// An empty accumulation for this port, with no [`Filter`].
    pub fn new(port: &'p Port) -> Self {
        Self::with_filter(port, Filter::default())
    }

    /// An empty accumulation for this port and filter.
    pub fn with_filter(port: &'p Port, filter: Filter) -> Self {
        Extractor {
            port,
            filter,
            addresses: BTreeSet::new(),
            report: Report::default(),
            warnings: Vec::new(),
        }
    }

    /// Adds one pod.
    pub fn add(&mut self, pod: &LeanPod) {
        self.report.matched += 1;
        match evaluate_with(pod, self.port, &self.filter) {
            Verdict::Address(address) => {
                self.addresses.insert(address);
            }
            Verdict::Skipped(reason, detail) => {
                self.report.skipped.record(reason);
                if let Some(detail) = detail {
                    if let WarningDetail::MissingPortName { declared, .. } = &detail {
                        self.report.port_names_seen.extend(declared.iter().cloned());
                    }
                    self.warnings.push(PodWarning {
                        key: pod_key(pod),
                        pod: pod_name(pod).to_owned(),
                        detail,
                    });
                }
            }
        }
    }

    /// Adds every pod of a page.
    pub fn add_all<'a>(&mut self, pods: impl IntoIterator<Item = &'a LeanPod>) {
        pods.into_iter().for_each(|pod| self.add(pod));
    }

    /// The sorted, unique addresses and the report.
    pub fn finish(self) -> Extraction {
        Extraction {
            addresses: self.addresses.into_iter().collect(),
            report: self.report,
            warnings: self.warnings,
            filter: self.filter,
        }
    }
}

/// Applies the rules to a whole listing at once, with no [`Filter`].
pub fn extract<'a>(pods: impl IntoIterator<Item = &'a LeanPod>, port: &Port) -> Extraction {
    extract_with(pods, port, Filter::default())
}

/// Applies the rules, narrowed by `filter`, to a whole listing at once.
pub fn extract_with<'a>(
    pods: impl IntoIterator<Item = &'a LeanPod>,
    port: &Port,
    filter: Filter,
) -> Extraction {
    let mut extractor = Extractor::with_filter(port, filter);
    extractor.add_all(pods);
    extractor.finish()
}

/// The pod's name for messages, `<unnamed>` when it has none.
pub fn pod_name(pod: &LeanPod) -> &str {
    pod.name.as_deref().unwrap_or("<unnamed>")
}

/// The pod's identity for warn-once: its uid, else its name.
fn pod_key(pod: &LeanPod) -> String {
    match pod.uid.as_deref().filter(|uid| !uid.is_empty()) {
        Some(uid) => format!("uid:{uid}"),
        None => format!("name:{}", pod_name(pod)),
    }
}
