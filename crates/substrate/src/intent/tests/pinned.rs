//! The fingerprint and the settings of a few rich configurations, pinned as literals: a pod
//! records both, so any change of their bytes re-keys (and would replace) every running pod
//! (deploy.md § Create-intent fingerprint, § Naming what differs). Whatever changes how the
//! template or its settings are declared must leave these strings as they are.
//!
//! Pure; no I/O.

use std::collections::BTreeMap;

use apiary_classify::binding::APIARY;
use apiary_classify::grace::GracePeriod;
use k8s_openapi::api::core::v1::Toleration;

use super::*;
use crate::pod_options::{EgressRule, SecretKey, WorkspaceClaim};

/// Every flag of `deploy` that reaches the pod, set to something other than its default.
fn every_flag() -> DeployConfig {
    let mut c = base();
    c.namespace = "team-a".into();
    c.cpu_request = "250m".into();
    c.memory_request = "512Mi".into();
    c.cpu_limit = "3".into();
    c.memory_limit = "6Gi".into();
    c.service_account = Some("runner".into());
    c.command = Some(vec!["agentd".into()]);
    c.args = vec!["--serve".into(), "--port=8080".into()];
    c.env.set("LOG_LEVEL", "debug");
    c.env.set("MODE", "fast");
    c.workspace_mount_path = "/work".into();
    c.run_as_user = 20001;
    c.run_as_group = 20002;
    c.grace_period = GracePeriod::from_seconds(15);
    let o = &mut c.pod_options;
    o.node_selector = BTreeMap::from([("pool".into(), "gpu".into())]);
    o.tolerations = vec![Toleration {
        key: Some("dedicated".into()),
        operator: Some("Equal".into()),
        value: Some("agents".into()),
        effect: Some("NoSchedule".into()),
        toleration_seconds: None,
    }];
    o.ephemeral_storage_request = Some("1Gi".into());
    o.ephemeral_storage_limit = Some("2Gi".into());
    o.runtime_class = Some("gvisor".into());
    o.priority_class = Some("high".into());
    o.extended_resources = BTreeMap::from([("nvidia.com/gpu".into(), "1".into())]);
    o.image_pull_secrets = vec!["regcred".into()];
    o.labels = BTreeMap::from([("team".into(), "ml".into())]);
    o.annotations = BTreeMap::from([("example.com/note".into(), "x".into())]);
    o.env_from_secrets = vec!["team-creds".into()];
    o.env_secrets = BTreeMap::from([(
        "TOKEN".into(),
        SecretKey {
            secret: "team-creds".into(),
            key: "token".into(),
        },
    )]);
    o.isolate = true;
    o.allow_egress = vec![EgressRule {
        cidr: "10.0.0.0/8".into(),
        port: Some(443),
    }];
    o.workspace_claim = Some(WorkspaceClaim {
        size: "10Gi".into(),
        storage_class: Some("fast".into()),
    });
    o.overrides = Some(Overrides::parse(r#"{"spec":{"dnsPolicy":"Default"}}"#).unwrap());
    c
}

/// A few flags: no command, an empty argument list, one option of each kind (a map, a list, a
/// flag) and the default grace period.
fn some_flags() -> DeployConfig {
    let mut c = base();
    c.memory_limit = "1Gi".into();
    c.env.set("A", "1");
    c.pod_options.node_selector = BTreeMap::from([("zone".into(), "a".into())]);
    c.pod_options.image_pull_secrets = vec!["one".into(), "two".into()];
    c.pod_options.isolate = true;
    c
}

/// The fingerprint and the settings of `config` under apiary's binding.
fn pinned(config: &DeployConfig) -> (String, String) {
    let valid = config.validate(&agent()).unwrap();
    (valid.fingerprint(), valid.intent().settings())
}

/// The defaults alone.
#[test]
fn the_defaults_are_pinned() {
    assert_eq!(
        pinned(&base()),
        (
            "588688fa873c75ddc93bdbd952b7c78f8c5f57fe3d7ad23f94bb10c51aacaf8f".to_owned(),
            "cpu-limit=cc11310c,\
             cpu-request=4bc12d1b,\
             env-from-secret-placeholder=5f073c28,\
             env-keys=f779b6cd,\
             grace-period=39fa9ec1,\
             image=a6412b30,\
             memory-limit=067f054a,\
             memory-request=8d6de49f,\
             namespace=bc425324,\
             restart-policy=4c8a2083,\
             run-as-group=e4431691,\
             run-as-user=e4431691,\
             template=6b86b273,\
             workspace=085f4b62"
                .to_owned()
        )
    );
}

/// Every flag that reaches the pod set at once.
#[test]
fn every_flag_is_pinned() {
    assert_eq!(
        pinned(&every_flag()),
        (
            "1879000e06fe221c8137a806ff11d454673c528c1b3ced4cc11826e68ef991a8".to_owned(),
            "allow-egress=e2435426,\
             annotation=0392746a,\
             arg=820e4f4e,\
             command=b8a164e7,\
             cpu-limit=a4aab3f1,\
             cpu-request=71ab44d2,\
             env-from-secret=0e717ba6,\
             env-from-secret-placeholder=5f073c28,\
             env-keys=2de399ef,\
             env-secret=ba75ec7d,\
             ephemeral-storage-limit=7b555ab5,\
             ephemeral-storage-request=e3011aa0,\
             grace-period=e629fa65,\
             image=a6412b30,\
             image-pull-secret=7f7ba9f8,\
             isolate=b5bea41b,\
             label=5734fd6c,\
             memory-limit=44e6b6e3,\
             memory-request=ca59077d,\
             namespace=e204f50a,\
             node-selector=7d0bec75,\
             overrides=406ee55e,\
             priority-class=b57c4299,\
             resource=115b3293,\
             restart-policy=4c8a2083,\
             run-as-group=29433eae,\
             run-as-user=fc82267b,\
             runtime-class=4270dd59,\
             service-account=4c5ce8b1,\
             template=6b86b273,\
             toleration=61592ba9,\
             workspace=34a2a48f,\
             workspace-size=b5bea41b"
                .to_owned()
        )
    );
}

/// A few flags, an empty argument list among them.
#[test]
fn some_flags_are_pinned() {
    assert_eq!(
        pinned(&some_flags()),
        (
            "99bd9f71d01b1a86fb2bbbe9be5afb725b847e44b57ee436fee8dfe4f7aa388e".to_owned(),
            "cpu-limit=cc11310c,\
             cpu-request=4bc12d1b,\
             env-from-secret-placeholder=5f073c28,\
             env-keys=1841ecc4,\
             grace-period=39fa9ec1,\
             image=a6412b30,\
             image-pull-secret=33688af4,\
             isolate=b5bea41b,\
             memory-limit=e3011aa0,\
             memory-request=8d6de49f,\
             namespace=bc425324,\
             node-selector=f634f892,\
             restart-policy=4c8a2083,\
             run-as-group=e4431691,\
             run-as-user=e4431691,\
             template=6b86b273,\
             workspace=085f4b62"
                .to_owned()
        )
    );
}

/// A template without `command` and `args` (a binding like the buzz provider's), with the
/// options only that binding sets: the buzz-only options enter the settings too.
#[test]
fn a_template_without_command_and_args_is_pinned() {
    let mut config = some_flags();
    config.command = Some(vec!["agentd".into()]);
    let valid = config.validate(&agent()).unwrap();
    let mut shape = valid.shape().clone();
    shape.pod_options.workspace_size_limit = Some("5Gi".into());
    shape.pod_options.active_deadline_seconds = Some(3600);
    shape.pod_options.setup_pending = true;
    let binding = apiary_classify::binding::Binding {
        intent_command_args: false,
        ..APIARY
    };
    let intent = CreateIntent::of(&shape, binding);
    assert_eq!(
        (intent.fingerprint(), intent.settings()),
        (
            "606474da9b871d1875817789f994a70776036a00a485b134e4f988a2b6c1a848".to_owned(),
            "active-deadline-seconds=8b34042b,\
             cpu-limit=cc11310c,\
             cpu-request=4bc12d1b,\
             env-from-secret-placeholder=5f073c28,\
             env-keys=1841ecc4,\
             grace-period=39fa9ec1,\
             image=a6412b30,\
             image-pull-secret=33688af4,\
             isolate=b5bea41b,\
             memory-limit=e3011aa0,\
             memory-request=8d6de49f,\
             namespace=bc425324,\
             node-selector=f634f892,\
             restart-policy=4c8a2083,\
             run-as-group=e4431691,\
             run-as-user=e4431691,\
             setup-pending=b5bea41b,\
             template=6b86b273,\
             workspace=085f4b62,\
             workspace-size-limit=0302b4ee"
                .to_owned()
        )
    );
}

/// The members of the template, top level and pod options, are exactly the members the one
/// declaration of the settings names (deploy.md § Naming what differs): a member added to the
/// template without a setting, or a setting left without its member, fails here.
#[test]
fn every_member_of_the_template_is_declared() {
    use apiary_classify::settings::{Member, SETTINGS};
    let valid = every_flag().validate(&agent()).unwrap();
    let serde_json::Value::Object(members) = serde_json::to_value(valid.intent()).unwrap() else {
        panic!("the template is an object")
    };
    let mut found = Vec::new();
    for (member, value) in &members {
        match (member.as_str(), value) {
            ("pod_options", serde_json::Value::Object(options)) => {
                found.extend(options.keys().map(|o| Member::PodOption(o.clone())));
            }
            (member, _) => found.push(Member::Template(member.to_owned())),
        }
    }
    let declared: Vec<Member<String>> = SETTINGS
        .iter()
        .map(|setting| match setting.member {
            Member::Template(json) => Member::Template(json.to_owned()),
            Member::PodOption(json) => Member::PodOption(json.to_owned()),
        })
        .collect();
    found.sort_by_key(|member| format!("{member:?}"));
    let mut sorted = declared.clone();
    sorted.sort_by_key(|member| format!("{member:?}"));
    assert_eq!(found, sorted);
    // Declared in the template's order: each member comes after the one declared before it.
    let json = valid.intent().to_json();
    let mut from = 0;
    for member in &declared {
        let (Member::Template(name) | Member::PodOption(name)) = member;
        let at = json[from..].find(&format!("\"{name}\":"));
        from += at.unwrap_or_else(|| panic!("{name} is out of order in {json}"));
    }
}
