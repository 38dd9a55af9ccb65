//! The performer's own answers over the in-memory fake, where the conformance suites cannot tell
//! them apart: the environment comparison of `deploy --replace` (deploy.md § Replacing a live
//! agent). Test-only; no I/O.

use apiary_classify::request::{Answer, Request};

use super::*;
use crate::config::DeployConfig;
use crate::driver::{DeployOptions, deploy};
use crate::fake::{FakeCluster, run_now as block};

const NS: &str = "agents";
const IMAGE: &str = "registry.example.com/team/agent@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

fn config(token: &str) -> ValidConfig {
    let mut config = DeployConfig::new(NS, IMAGE);
    config.env.set("TOKEN", token);
    config
        .validate(&AgentIdentity::new("agent").expect("agent"))
        .expect("valid")
}

/// The name of the Secret the running pod references.
fn own_secret(fake: &FakeCluster, config: &ValidConfig) -> String {
    let pod = fake.pod(&config.pod_name()).expect("the deployed pod");
    crate::observe::observe_pod(&pod, config.agent().binding())
        .facts
        .env_from_secret
        .expect("the pod references its Secret")
}

/// The live Secret's environment equals the desired one: no key differs; a changed value is
/// named by its key; a Secret that is gone is no environment at all; whether the keys are also
/// logged (a deploy's request) or not (a status's) answers the same.
#[test]
fn the_environment_comparison_sees_a_changed_value_and_a_missing_secret() {
    let fake = FakeCluster::new(NS);
    let deployed = config("one");
    block(deploy(
        &fake,
        &deployed,
        &DeployOptions::for_config(&deployed),
    ))
    .expect("deployed");
    let secret = own_secret(&fake, &deployed);
    for (desired, name, differs) in [
        (config("one"), secret.clone(), Some(Vec::new())),
        (
            config("two"),
            secret.clone(),
            Some(vec!["TOKEN".to_owned()]),
        ),
        (
            config("one"),
            format!("{}-0badc0de", deployed.pod_name()),
            None,
        ),
    ] {
        // Whether the keys are logged changes no answer.
        for log_keys in [true, false] {
            let mut performer = Performer::deploying(&fake, &desired);
            let compare = Request::CompareEnv {
                secret: name.clone(),
                log_keys,
            };
            let answer = block(performer.perform(compare));
            assert_eq!(answer, Answer::EnvCompared(Ok(differs.clone())));
        }
    }
}
