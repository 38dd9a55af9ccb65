//! The progress text of a deploy or undeploy: how the CLI renders the [`Progress`] values the
//! machines of `apiary-classify` report (deploy.md § Loop: one line per change of observed state),
//! for the terminal spinner or the plain lines of [`crate::progress`].
//!
//! Shell layer: wording only. The state and the redacted condition (deploy.md § Redacted condition
//! text) are the machines' output; nothing here reads a pod or re-derives what it shows. Must not:
//! show anything of a pod that is not verified as this agent's (a foreign pod's progress carries
//! no condition).

use apiary_classify::condition::NO_CONDITION;
use apiary_classify::status::{Progress, StatusState};

/// The progress text for one change; `absent` is the text shown while the pod does not exist
/// ("no pod yet", "the pod is gone").
pub fn describe(progress: &Progress, absent: &str) -> String {
    let condition = || {
        progress
            .condition
            .clone()
            .unwrap_or_else(|| NO_CONDITION.to_owned())
    };
    match progress.state {
        StatusState::Absent => absent.to_owned(),
        StatusState::Foreign => "the pod is not apiary's for this agent".to_owned(),
        StatusState::Deleting => format!("terminating: {}", condition()),
        _ => condition(),
    }
}

#[cfg(test)]
mod tests {
    //! The progress text: absent, verified (with the redacted condition), deletion-marked,
    //! foreign; and a deploy's progress reaching the display.

    use super::*;

    fn shown(state: StatusState, condition: Option<&str>) -> String {
        describe(
            &Progress {
                state,
                condition: condition.map(str::to_owned),
            },
            "no pod yet",
        )
    }

    /// Each state's wording; a verified pod without a condition says so.
    #[test]
    fn every_state_has_its_wording() {
        assert_eq!(shown(StatusState::Absent, None), "no pod yet");
        assert_eq!(
            shown(StatusState::Foreign, None),
            "the pod is not apiary's for this agent"
        );
        assert_eq!(
            shown(StatusState::Deleting, Some("the pod is Running")),
            "terminating: the pod is Running"
        );
        assert_eq!(shown(StatusState::Starting, None), NO_CONDITION);
        assert_eq!(
            shown(
                StatusState::PullFailing,
                Some("the container is waiting, reason X")
            ),
            "the container is waiting, reason X"
        );
    }

    /// A deploy hands its progress to the display: the last text shown is the started pod's.
    #[tokio::test]
    async fn a_deploy_reports_progress_to_the_display() {
        use apiary_substrate::config::DeployConfig;
        use apiary_substrate::driver::{self, DeployOptions};
        use apiary_substrate::fake::FakeCluster;
        use apiary_substrate::naming::AgentIdentity;

        use crate::progress::{StatusLine, Style};

        let agent = AgentIdentity::new("a").expect("agent");
        let image = format!("registry.example.com/x@sha256:{}", "a".repeat(64));
        let config = DeployConfig::new("agents", image)
            .validate(&agent)
            .expect("config");
        let fake = FakeCluster::new("agents");
        let display = StatusLine::start("t", Style::Silent);
        let mut seen = Vec::new();
        let result = driver::deploy_watching(
            &fake,
            &config,
            &DeployOptions::for_config(&config),
            &mut |p: &Progress| {
                seen.push(p.state);
                display.update(&describe(p, "no pod yet"));
            },
        )
        .await;
        assert!(result.is_ok());
        assert_eq!(seen.first(), Some(&StatusState::Absent));
        assert_eq!(seen.last(), Some(&StatusState::Started));
        assert!(
            display
                .last()
                .is_some_and(|c| c.contains("Running") || c.contains("running")),
            "{:?}",
            display.last()
        );
    }
}
