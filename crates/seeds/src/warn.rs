//! Warn-once memory and the log lines of a resolve (seeds.md § Logging).
//!
//! Pure decision plus `tracing` output: which warnings are new since the previous resolve is
//! decided over plain values; emitting them is a `tracing` call. It must not log the errors a
//! resolve returns (the caller decides), and its memory must stay bounded by the last resolve.

use std::collections::HashSet;

use crate::extract::{Extraction, PodWarning, Report, WarningDetail};

/// Remembers the warnings of the previous completed resolve.
#[derive(Debug, Clone, Default)]
pub struct WarnOnce {
    previous: HashSet<PodWarning>,
}

impl WarnOnce {
    /// An empty memory: every warning of the first resolve is new.
    pub fn new() -> Self {
        Self::default()
    }

    /// The warnings not emitted by the previous resolve (same pod, reason and detail), in input
    /// order. The memory becomes exactly this resolve's warnings, so a pod that recovers and
    /// relapses, or whose detail changes, warns again.
    pub fn fresh(&mut self, warnings: &[PodWarning]) -> Vec<PodWarning> {
        let fresh = warnings
            .iter()
            .filter(|warning| !self.previous.contains(*warning))
            .cloned()
            .collect();
        self.previous = warnings.iter().cloned().collect();
        fresh
    }

    /// Emits the fresh warnings of a completed resolve and its debug summary line.
    pub fn log(&mut self, extraction: &Extraction, pages: usize) {
        for warning in self.fresh(&extraction.warnings) {
            log_warning(&warning);
        }
        log_summary(&extraction.report, extraction.addresses.len(), pages);
    }
}

/// One `tracing` warning with structured fields (`pod` = name or `<unnamed>`).
pub fn log_warning(warning: &PodWarning) {
    let pod = warning.pod.as_str();
    match &warning.detail {
        WarningDetail::UnparsableAddress { ip, error } => {
            tracing::warn!(
                pod,
                ip = ip.as_str(),
                error = error.as_str(),
                "cannot parse the pod IP"
            );
        }
        WarningDetail::PortOutOfRange {
            port_name,
            container_port,
        } => {
            tracing::warn!(
                pod,
                port_name = port_name.as_str(),
                container_port,
                "container port out of range"
            );
        }
        WarningDetail::MissingPortName {
            port_name,
            declared,
        } => {
            let declared: Vec<&str> = declared.iter().map(String::as_str).collect();
            tracing::warn!(
                pod,
                port_name = port_name.as_str(),
                declared = declared.join(",").as_str(),
                "no container port of this name"
            );
        }
    }
}

/// The one debug line per resolve: pods matched, addresses returned, pages, skip counts.
pub fn log_summary(report: &Report, addresses: usize, pages: usize) {
    let skipped = report.skipped;
    tracing::debug!(
        matched = report.matched,
        addresses,
        pages,
        terminating = skipped.get(crate::SkipReason::Terminating),
        finished = skipped.get(crate::SkipReason::Finished),
        no_address = skipped.get(crate::SkipReason::NoAddress),
        unparsable_address = skipped.get(crate::SkipReason::UnparsableAddress),
        no_family_address = skipped.get(crate::SkipReason::NoFamilyAddress),
        missing_port_name = skipped.get(crate::SkipReason::MissingPortName),
        port_out_of_range = skipped.get(crate::SkipReason::PortOutOfRange),
        not_running = skipped.get(crate::SkipReason::NotRunning),
        "resolved seed addresses"
    );
}
