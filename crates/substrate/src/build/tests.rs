//! Unit tests of `build`: T1–T13, N7, F9 and the V11 pod-spec rule of deploy.md § Templates,
//! fingerprint, names, image, input. Pure; no I/O.

use apiary_classify::binding::APIARY;
use k8s_openapi::api::core::v1::{Container, PodSpec};

use super::*;
use crate::config::DeployConfig;
use crate::naming::AgentIdentity;
use crate::observe::observe_pod;

const SECRET: &str = "tok-3c1d-NEVER-IN-POD";

fn image() -> String {
    format!("registry.example.com/team/agent@sha256:{}", "a".repeat(64))
}

fn agent() -> AgentIdentity {
    AgentIdentity::new("Research Bot #1").unwrap()
}

fn config() -> DeployConfig {
    let mut c = DeployConfig::new("agents", image());
    c.env.set("TOKEN", SECRET);
    c
}

fn valid(c: &DeployConfig) -> ValidConfig {
    c.validate(&agent()).unwrap()
}

fn g(n: u32) -> Generation {
    Generation::from_u32(n)
}

fn spec(pod: &Pod) -> &PodSpec {
    pod.spec.as_ref().unwrap()
}

fn container(pod: &Pod) -> &Container {
    let containers = &spec(pod).containers;
    assert_eq!(containers.len(), 1, "exactly one container");
    &containers[0]
}

/// T1: automount false, runAsNonRoot, UID/GID 10001, fsGroup, seccomp RuntimeDefault, no
/// privilege escalation, drop ALL, not privileged.
#[test]
fn t1_hardening() {
    let pod = build_pod(&valid(&config()), g(1));
    let spec = spec(&pod);
    assert_eq!(spec.automount_service_account_token, Some(false));
    let psc = spec.security_context.as_ref().unwrap();
    assert_eq!(psc.run_as_non_root, Some(true));
    assert_eq!(psc.run_as_user, Some(10001));
    assert_eq!(psc.run_as_group, Some(10001));
    assert_eq!(psc.fs_group, Some(10001));
    assert_eq!(
        psc.seccomp_profile.as_ref().unwrap().type_,
        "RuntimeDefault"
    );
    let sc = container(&pod).security_context.as_ref().unwrap();
    assert_eq!(sc.allow_privilege_escalation, Some(false));
    assert_eq!(
        sc.capabilities.as_ref().unwrap().drop,
        Some(vec!["ALL".to_owned()])
    );
    assert_eq!(sc.capabilities.as_ref().unwrap().add, None);
    assert_eq!(sc.privileged, None);
    assert_eq!(sc.read_only_root_filesystem, None);
}

/// T1: configured UID and GID reach runAsUser, runAsGroup and fsGroup.
#[test]
fn t1_configured_ids() {
    let mut c = config();
    c.run_as_user = 2000;
    c.run_as_group = 3000;
    let pod = build_pod(&valid(&c), g(1));
    let psc = spec(&pod).security_context.clone().unwrap();
    assert_eq!(
        (psc.run_as_user, psc.run_as_group, psc.fs_group),
        (Some(2000), Some(3000), Some(3000))
    );
}

/// T2: no host namespaces, no hostPath, and none of the never-set fields.
#[test]
fn t2_never_set_fields() {
    let pod = build_pod(&valid(&config()), g(1));
    let spec = spec(&pod);
    assert_eq!(spec.host_pid, None);
    assert_eq!(spec.host_network, None);
    assert_eq!(spec.host_ipc, None);
    assert_eq!(spec.node_selector, None);
    assert_eq!(spec.tolerations, None);
    assert_eq!(spec.active_deadline_seconds, None);
    assert_eq!(spec.init_containers, None);
    for volume in spec.volumes.as_ref().unwrap() {
        assert!(volume.host_path.is_none());
    }
    let c = container(&pod);
    assert_eq!(c.liveness_probe, None);
    assert_eq!(c.readiness_probe, None);
    assert_eq!(c.startup_probe, None);
    assert_eq!(c.ports, None);
    assert_eq!(c.image_pull_policy, None);
    // On the wire as well: the JSON names none of them.
    let json = serde_json::to_string(&pod).unwrap();
    for field in [
        "hostPID",
        "hostNetwork",
        "hostIPC",
        "hostPath",
        "privileged",
        "readOnlyRootFilesystem",
        "nodeSelector",
        "tolerations",
        "Probe",
        "ports",
        "imagePullPolicy",
        "activeDeadlineSeconds",
        "ownerReferences",
    ] {
        assert!(!json.contains(field), "{field} in {json}");
    }
}

/// T3 / T4: restartPolicy Never, grace 60 (literal wire values).
#[test]
fn t3_t4_restart_policy_and_grace() {
    let pod = build_pod(&valid(&config()), g(1));
    assert_eq!(spec(&pod).restart_policy.as_deref(), Some("Never"));
    assert_eq!(spec(&pod).termination_grace_period_seconds, Some(60));
}

/// T5: no command/args unless configured; configured ones appear verbatim.
#[test]
fn t5_command_and_args() {
    let pod = build_pod(&valid(&config()), g(1));
    assert_eq!(container(&pod).command, None);
    assert_eq!(container(&pod).args, None);
    let mut c = config();
    c.command = Some(vec!["agentd".into(), "--x y".into()]);
    c.args = vec!["--serve".into(), "-p=1".into()];
    let pod = build_pod(&valid(&c), g(1));
    assert_eq!(
        container(&pod).command,
        Some(vec!["agentd".to_owned(), "--x y".to_owned()])
    );
    assert_eq!(
        container(&pod).args,
        Some(vec!["--serve".to_owned(), "-p=1".to_owned()])
    );
    let mut args_only = config();
    args_only.args = vec!["a".into()];
    let pod = build_pod(&valid(&args_only), g(1));
    assert_eq!(container(&pod).command, None);
    assert_eq!(container(&pod).args, Some(vec!["a".to_owned()]));
}

/// T6: an emptyDir named `workspace` is mounted at the mount path.
#[test]
fn t6_workspace_empty_dir() {
    let mut c = config();
    c.workspace_mount_path = "/work/space".into();
    let pod = build_pod(&valid(&c), g(1));
    let volumes = spec(&pod).volumes.as_ref().unwrap();
    assert_eq!(volumes.len(), 1);
    assert_eq!(volumes[0].name, "workspace");
    assert!(volumes[0].empty_dir.is_some());
    let mounts = container(&pod).volume_mounts.as_ref().unwrap();
    assert_eq!(mounts.len(), 1);
    assert_eq!(mounts[0].name, "workspace");
    assert_eq!(mounts[0].mount_path, "/work/space");
}

/// T7: resources carry the configured values.
#[test]
fn t7_resources() {
    let mut c = config();
    c.cpu_request = "500m".into();
    c.memory_request = "1Gi".into();
    c.cpu_limit = "4".into();
    c.memory_limit = "8Gi".into();
    let pod = build_pod(&valid(&c), g(1));
    let r = container(&pod).resources.clone().unwrap();
    let requests = r.requests.unwrap();
    let limits = r.limits.unwrap();
    assert_eq!(requests["cpu"].0, "500m");
    assert_eq!(requests["memory"].0, "1Gi");
    assert_eq!(limits["cpu"].0, "4");
    assert_eq!(limits["memory"].0, "8Gi");
    assert_eq!((requests.len(), limits.len()), (2, 2));
}

/// T8: envFrom names this attempt's Secret, `optional: false`, no ConfigMap, no `env`.
#[test]
fn t8_env_from_only() {
    let pod = build_pod(&valid(&config()), g(0xabcdef01));
    let c = container(&pod);
    assert_eq!(c.env, None);
    let sources = c.env_from.as_ref().unwrap();
    assert_eq!(sources.len(), 1);
    assert!(sources[0].config_map_ref.is_none());
    assert!(sources[0].prefix.is_none());
    let secret = sources[0].secret_ref.as_ref().unwrap();
    assert_eq!(secret.name, "apiary-research-bot-1-72bea12366a3-abcdef01");
    assert_eq!(secret.optional, Some(false));
}

/// T9: the pod carries name, namespace, three labels and five annotations (the fifth, the
/// intent settings of deploy.md § Naming what differs).
#[test]
fn t9_pod_metadata() {
    let v = valid(&config());
    let pod = build_pod(&v, g(1));
    let meta = &pod.metadata;
    assert_eq!(
        meta.name.as_deref(),
        Some("apiary-research-bot-1-72bea12366a3")
    );
    assert_eq!(meta.namespace.as_deref(), Some("agents"));
    assert_eq!(meta.labels.as_ref().unwrap(), &agent().labels());
    let annotations = meta.annotations.as_ref().unwrap();
    assert_eq!(annotations.len(), 5);
    assert_eq!(
        annotations["apiary.dev/intent-settings"],
        v.intent().settings()
    );
    assert_eq!(
        annotations["apiary.dev/agent-id"],
        "72bea12366a35432ab394024ae44c214b8cee51a8e1c04be8797a1dc17805c98"
    );
    assert_eq!(annotations["apiary.dev/agent-name"], "Research Bot #1");
    assert_eq!(annotations["apiary.dev/create-intent"], v.fingerprint());
    assert_eq!(annotations["apiary.dev/image"], image());
    assert_eq!(container(&pod).name, "agent");
    assert_eq!(container(&pod).image.as_deref(), Some(image().as_str()));
    assert!(meta.owner_references.is_none());
    assert!(pod.status.is_none());
}

/// T9 / deploy.md § Image reference, rule 7: the normalized image (tag dropped) is used in the pod
/// and annotation.
#[test]
fn t9_normalized_image_used() {
    let mut c = config();
    c.image = format!(
        " registry.example.com/team/agent:v1@sha256:{} ",
        "a".repeat(64)
    );
    let v = valid(&c);
    let pod = build_pod(&v, g(1));
    assert_eq!(container(&pod).image.as_deref(), Some(image().as_str()));
    assert_eq!(
        pod.metadata.annotations.unwrap()["apiary.dev/image"],
        image()
    );
    assert_eq!(v.fingerprint(), valid(&config()).fingerprint());
}

/// T10: the Secret is immutable, marked, annotated, `stringData` = env, `data` and `type` unset.
#[test]
fn t10_secret() {
    let v = valid(&config());
    let secret = build_secret(&v, g(0x1234));
    let meta = &secret.metadata;
    assert_eq!(
        meta.name.as_deref(),
        Some("apiary-research-bot-1-72bea12366a3-00001234")
    );
    assert_eq!(meta.namespace.as_deref(), Some("agents"));
    assert_eq!(meta.labels.as_ref().unwrap(), &agent().labels());
    assert_eq!(meta.annotations.as_ref().unwrap(), &agent().annotations());
    assert!(meta.owner_references.is_none());
    assert_eq!(secret.immutable, Some(true));
    assert!(secret.data.is_none());
    assert!(secret.type_.is_none());
    let data = secret.string_data.unwrap();
    assert_eq!(data, v.env().for_attempt(g(0x1234)).into_map());
    assert_eq!(data["TOKEN"], SECRET);
    assert_eq!(data["APIARY_START_NONCE"], "00001234");
    assert_eq!(data["APIARY_AGENT_NAME"], "Research Bot #1");
    assert_eq!(data.len(), 4);
}

/// T11: a service account leaves automount false.
#[test]
fn t11_service_account_keeps_automount_off() {
    let mut c = config();
    c.service_account = Some("runner".into());
    let pod = build_pod(&valid(&c), g(1));
    assert_eq!(spec(&pod).service_account_name.as_deref(), Some("runner"));
    assert_eq!(spec(&pod).automount_service_account_token, Some(false));
    let pod = build_pod(&valid(&config()), g(1));
    assert_eq!(spec(&pod).service_account_name, None);
}

/// T12: the recorded fingerprint equals the recomputed one.
#[test]
fn t12_recorded_equals_recomputed() {
    let v = valid(&config());
    let pod = build_pod(&v, g(9));
    let observed = observe_pod(&pod, APIARY);
    assert_eq!(observed.marks.create_intent, Some(v.fingerprint()));
    assert_eq!(
        observed.marks.create_intent,
        Some(valid(&config()).fingerprint())
    );
}

/// T13: two generations → same fingerprint annotation, different secretRef.
#[test]
fn t13_generations_share_intent() {
    let v = valid(&config());
    let a = build_attempt(&v, g(1));
    let b = build_attempt(&v, g(2));
    let intent =
        |p: &Pod| p.metadata.annotations.as_ref().unwrap()["apiary.dev/create-intent"].clone();
    assert_eq!(intent(&a.pod), intent(&b.pod));
    let secret_ref = |p: &Pod| {
        container(p).env_from.as_ref().unwrap()[0]
            .secret_ref
            .clone()
            .unwrap()
            .name
    };
    assert_ne!(secret_ref(&a.pod), secret_ref(&b.pod));
    assert_eq!(secret_ref(&a.pod), a.secret_name);
    assert_eq!(
        a.secret.metadata.name.as_deref(),
        Some(a.secret_name.as_str())
    );
    assert_eq!(a.generation, g(1));
    assert_eq!(a.pod.metadata.name, b.pod.metadata.name);
}

/// R15 support: the Secret name ends with its `APIARY_START_NONCE` value.
#[test]
fn secret_name_ends_with_nonce() {
    let attempt = build_attempt(&valid(&config()), g(0xfeed));
    let nonce = &attempt.secret.string_data.as_ref().unwrap()["APIARY_START_NONCE"];
    assert!(attempt.secret_name.ends_with(&format!("-{nonce}")));
}

/// N7: every created object carries both marker labels.
#[test]
fn n7_marker_labels_on_every_object() {
    let attempt = build_attempt(&valid(&config()), g(5));
    for labels in [
        attempt.pod.metadata.labels.unwrap(),
        attempt.secret.metadata.labels.unwrap(),
    ] {
        assert_eq!(labels["app.kubernetes.io/managed-by"], "apiary");
        assert_eq!(labels["apiary.dev/binding-version"], "1");
    }
}

/// F9: admission mutations of the live spec (sidecar, defaults) leave the recorded intent equal.
#[test]
fn f9_admission_mutation_no_divergence() {
    let v = valid(&config());
    let mut pod = build_pod(&v, g(1));
    let spec = pod.spec.as_mut().unwrap();
    spec.containers.push(Container {
        name: "istio-proxy".into(),
        ..Container::default()
    });
    spec.dns_policy = Some("ClusterFirst".into());
    spec.scheduler_name = Some("default-scheduler".into());
    spec.containers[0].image_pull_policy = Some("IfNotPresent".into());
    let recorded = observe_pod(&pod, APIARY).marks.create_intent;
    assert!(crate::intent::intent_matches(
        recorded.as_deref(),
        &v.fingerprint()
    ));
}

/// V11: no env value in the pod (spec or JSON), and Attempt's Debug shows keys only.
#[test]
fn v11_values_only_in_secret() {
    let attempt = build_attempt(&valid(&config()), g(1));
    let pod_json = serde_json::to_string(&attempt.pod).unwrap();
    assert!(!pod_json.contains(SECRET));
    assert!(!format!("{:?}", attempt.pod).contains(SECRET));
    let shown = format!("{attempt:?}");
    assert!(!shown.contains(SECRET), "{shown}");
    assert!(shown.contains("TOKEN"));
    assert!(shown.contains("apiary-research-bot-1-72bea12366a3-00000001"));
    // The value does reach the Secret payload, the only place it belongs.
    assert!(
        serde_json::to_string(&attempt.secret)
            .unwrap()
            .contains(SECRET)
    );
}

/// `--ttl` records the expiry instant (server clock) as the fifth annotation, and only on the
/// pod; the fingerprint is unchanged (a different TTL is not a different configuration), and
/// observation reads it back.
#[test]
fn expiry_annotation_is_outside_the_fingerprint() {
    let plain = valid(&config());
    let expiring = plain.clone().expiring_at(1_785_643_200);
    let pod = build_pod(&expiring, g(1));
    let annotations = pod.metadata.annotations.clone().unwrap();
    assert_eq!(
        annotations.get("apiary.dev/expires-at").map(String::as_str),
        Some("2026-08-02T04:00:00Z")
    );
    assert_eq!(annotations.len(), 6);
    assert_eq!(expiring.fingerprint(), plain.fingerprint());
    assert_eq!(
        annotations.get(APIARY.annotation_create_intent),
        build_pod(&plain, g(1))
            .metadata
            .annotations
            .unwrap()
            .get(APIARY.annotation_create_intent)
    );
    let secret = build_secret(&expiring, g(1));
    assert!(
        !secret
            .metadata
            .annotations
            .unwrap_or_default()
            .contains_key("apiary.dev/expires-at")
    );
    assert_eq!(
        observe_pod(&pod, APIARY).marks.expires_at.as_deref(),
        Some("2026-08-02T04:00:00Z")
    );
    assert!(
        !build_pod(&plain, g(1))
            .metadata
            .annotations
            .unwrap()
            .contains_key("apiary.dev/expires-at")
    );
}

/// deploy.md § Pod options: every option reaches its pod field — node selector, tolerations,
/// runtime and priority class, pull Secrets, extended resources as request and limit, ephemeral
/// storage; labels on the pod and the Secret beside apiary's own; annotations on the pod only.
#[test]
fn pod_options_reach_their_fields() {
    let mut c = config();
    let o = &mut c.pod_options;
    o.node_selector
        .insert("example.com/pool".into(), "gpu".into());
    o.tolerations
        .push(crate::pod_options::flags::parse_toleration("nvidia.com/gpu:NoSchedule").unwrap());
    o.runtime_class = Some("gvisor".into());
    o.priority_class = Some("agents-high".into());
    o.image_pull_secrets = vec!["regcred".into(), "backup".into()];
    o.extended_resources
        .insert("nvidia.com/gpu".into(), "1".into());
    o.ephemeral_storage_request = Some("1Gi".into());
    o.ephemeral_storage_limit = Some("2Gi".into());
    o.labels.insert("team".into(), "ml".into());
    o.annotations
        .insert("example.com/owner".into(), "ml-infra".into());
    let attempt = build_attempt(&valid(&c), g(1));
    let pod = &attempt.pod;
    let spec = spec(pod);
    assert_eq!(
        spec.node_selector.as_ref().unwrap()["example.com/pool"],
        "gpu"
    );
    let toleration = &spec.tolerations.as_ref().unwrap()[0];
    assert_eq!(toleration.key.as_deref(), Some("nvidia.com/gpu"));
    assert_eq!(toleration.operator.as_deref(), Some("Exists"));
    assert_eq!(toleration.effect.as_deref(), Some("NoSchedule"));
    assert_eq!(spec.runtime_class_name.as_deref(), Some("gvisor"));
    assert_eq!(spec.priority_class_name.as_deref(), Some("agents-high"));
    let pulls: Vec<&str> = spec
        .image_pull_secrets
        .as_ref()
        .unwrap()
        .iter()
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(pulls, ["regcred", "backup"]);
    let resources = container(pod).resources.as_ref().unwrap();
    for side in [
        resources.requests.as_ref().unwrap(),
        resources.limits.as_ref().unwrap(),
    ] {
        assert_eq!(side["nvidia.com/gpu"].0, "1");
    }
    assert_eq!(
        resources.requests.as_ref().unwrap()["ephemeral-storage"].0,
        "1Gi"
    );
    assert_eq!(
        resources.limits.as_ref().unwrap()["ephemeral-storage"].0,
        "2Gi"
    );
    let labels = pod.metadata.labels.as_ref().unwrap();
    assert_eq!(labels["team"], "ml");
    assert_eq!(
        labels[APIARY.label_agent],
        agent().labels()[APIARY.label_agent]
    );
    assert_eq!(
        attempt.secret.metadata.labels.as_ref().unwrap()["team"],
        "ml"
    );
    assert_eq!(
        pod.metadata.annotations.as_ref().unwrap()["example.com/owner"],
        "ml-infra"
    );
    assert!(
        attempt
            .secret
            .metadata
            .annotations
            .as_ref()
            .unwrap()
            .get("example.com/owner")
            .is_none()
    );
    // The options change none of apiary's marks: the recorded intent is the configuration's.
    let observed = observe_pod(pod, APIARY);
    assert_eq!(observed.marks.create_intent, Some(valid(&c).fingerprint()));
}

/// Without options the pod has none of the option fields (the baseline shape).
#[test]
fn without_options_the_pod_has_no_option_fields() {
    let pod = build_pod(&valid(&config()), g(1));
    let spec = spec(&pod);
    assert!(spec.node_selector.is_none() && spec.tolerations.is_none());
    assert!(spec.runtime_class_name.is_none() && spec.priority_class_name.is_none());
    assert!(spec.image_pull_secrets.is_none());
}

/// deploy.md § Pod options, The escape hatch: the patch reaches the pod of every attempt, and a
/// patch that breaks an invariant, or names one attempt's Secret (it restated the agent's
/// `envFrom`), is refused by validation.
#[test]
fn overrides_are_applied_to_every_attempt_and_checked_by_validation() {
    use crate::pod_options::overrides::Overrides;
    let mut c = config();
    c.pod_options.overrides = Some(
        Overrides::parse(
            r#"{"spec":{"dnsPolicy":"None","dnsConfig":{"nameservers":["10.0.0.10"]}}}"#,
        )
        .unwrap(),
    );
    let v = valid(&c);
    for n in [1, 7] {
        let pod = build_pod(&v, g(n));
        assert_eq!(spec(&pod).dns_policy.as_deref(), Some("None"));
        assert_eq!(container(&pod).image, Some(image()));
    }
    let mut c = config();
    c.pod_options.overrides =
        Some(Overrides::parse(r#"{"spec":{"restartPolicy":"Always"}}"#).unwrap());
    let error = c.validate(&agent()).unwrap_err().to_string();
    assert!(error.contains("spec.restartPolicy"), "{error}");
    // Restating the agent container with one attempt's Secret passes for that attempt only.
    let mut pod = build_pod(&valid(&config()), g(1));
    let agent_container = serde_json::to_value(&spec(&pod).containers[0]).unwrap();
    pod.metadata = Default::default();
    let patch = serde_json::json!({"spec": {"containers": [agent_container]}}).to_string();
    let mut c = config();
    c.pod_options.overrides = Some(Overrides::parse(&patch).unwrap());
    let error = c.validate(&agent()).unwrap_err().to_string();
    assert!(error.contains("--overrides"), "{error}");
}

/// deploy.md § Credentials from the cluster: `--env-from-secret` Secrets come before the
/// attempt's own in `envFrom` (the last source wins a key), each `optional: false`, and each
/// `--env-secret` is an explicit variable with a `secretKeyRef`; a buzz `setup_pending` pod
/// gets its uid from the downward API first.
#[test]
fn cluster_secrets_are_references_with_the_own_secret_last() {
    let mut c = config();
    c.pod_options.env_from_secrets = vec!["team-creds".into(), "more".into()];
    c.pod_options.env_secrets.insert(
        "TEAM_TOKEN".into(),
        crate::pod_options::SecretKey {
            secret: "team-creds".into(),
            key: "token".into(),
        },
    );
    c.pod_options.setup_pending = true;
    let v = valid(&c);
    let pod = build_pod(&v, g(7));
    let agent = container(&pod);
    assert_eq!(
        serde_json::to_value(&agent.env_from).unwrap(),
        serde_json::json!([
            {"secretRef": {"name": "team-creds", "optional": false}},
            {"secretRef": {"name": "more", "optional": false}},
            {"secretRef": {"name": v.agent().secret_name(g(7)), "optional": false}},
        ])
    );
    assert_eq!(
        serde_json::to_value(&agent.env).unwrap(),
        serde_json::json!([
            {"name": "BUZZ_PILOT_POD_UID", "valueFrom": {"fieldRef": {"fieldPath": "metadata.uid"}}},
            {"name": "TEAM_TOKEN", "valueFrom": {"secretKeyRef": {
                "name": "team-creds", "key": "token", "optional": false}}},
        ])
    );
    let plain = build_pod(&valid(&config()), g(7));
    assert_eq!(container(&plain).env, None, "no option: no env at all");
}

/// deploy.md § Egress control: the policy of an isolated configuration, its selector and
/// marks; none without `--isolate`; the pod carries the isolation label only when isolated.
#[test]
fn the_network_policy_of_an_isolated_configuration() {
    use crate::build::policy::{LABEL_ISOLATED, build_network_policy, policy_intent};
    assert!(build_network_policy(&valid(&config())).is_none());
    let plain = build_pod(&valid(&config()), g(1));
    assert!(!plain.metadata.labels.unwrap().contains_key(LABEL_ISOLATED));
    let mut c = config();
    c.pod_options.isolate = true;
    c.pod_options.labels.insert("team".into(), "ml".into());
    c.pod_options.allow_egress = vec![crate::pod_options::EgressRule {
        cidr: "2001:db8::/32".into(),
        port: Some(443),
    }];
    let v = valid(&c);
    let policy = build_network_policy(&v).unwrap();
    assert_eq!(policy.metadata.name, Some(v.agent().pod_name()));
    assert_eq!(policy.metadata.namespace.as_deref(), Some(v.namespace()));
    let labels = policy.metadata.labels.clone().unwrap();
    assert_eq!(labels["team"], "ml");
    for (key, value) in v.agent().labels() {
        assert_eq!(labels[&key], value);
    }
    let annotations = policy.metadata.annotations.clone().unwrap();
    let spec = policy.spec.clone().unwrap();
    assert_eq!(
        annotations[APIARY.annotation_create_intent],
        policy_intent(&spec)
    );
    assert_eq!(annotations[APIARY.annotation_agent_id], v.agent().id());
    let json = serde_json::to_value(&spec).unwrap();
    let mut selector = v.agent().labels();
    selector.insert(LABEL_ISOLATED.into(), "true".into());
    assert_eq!(
        json["podSelector"]["matchLabels"],
        serde_json::to_value(&selector).unwrap()
    );
    assert_eq!(
        json["egress"][1],
        serde_json::json!({"to": [{"ipBlock": {"cidr": "2001:db8::/32"}}],
            "ports": [{"protocol": "TCP", "port": 443}]})
    );
    let pod = build_pod(&v, g(1));
    assert_eq!(pod.metadata.labels.unwrap()[LABEL_ISOLATED], "true");
    // Another allow-list is another intent.
    c.pod_options.allow_egress[0].port = None;
    let other = build_network_policy(&valid(&c)).unwrap();
    assert_ne!(policy_intent(&other.spec.unwrap()), policy_intent(&spec));
    assert_eq!(policy_intent(&spec).len(), 64);
}

/// deploy.md § Persistent workspace: with `--workspace-size` the workspace volume mounts the
/// agent's claim (no emptyDir), and the claim is named from the agent, marked like its Secret
/// (plus the `--label`s), `ReadWriteOnce`, sized and classed as asked.
#[test]
fn a_workspace_claim_replaces_the_empty_dir() {
    use crate::pod_options::WorkspaceClaim;
    let mut c = config();
    c.pod_options.workspace_claim = Some(WorkspaceClaim {
        size: "10Gi".into(),
        storage_class: Some("fast".into()),
    });
    c.pod_options.labels = BTreeMap::from([("team".to_owned(), "research".to_owned())]);
    let v = valid(&c);
    let name = "apiary-research-bot-1-72bea12366a3-workspace";
    let pod = build_pod(&v, g(1));
    let volumes = spec(&pod).volumes.as_ref().unwrap();
    assert_eq!(volumes.len(), 1);
    assert_eq!(volumes[0].name, "workspace");
    assert_eq!(volumes[0].empty_dir, None);
    let source = volumes[0].persistent_volume_claim.as_ref().unwrap();
    assert_eq!((source.claim_name.as_str(), source.read_only), (name, None));

    let claim = workspace::build_workspace_claim(&v).unwrap();
    assert_eq!(claim.metadata.name.as_deref(), Some(name));
    assert_eq!(claim.metadata.namespace.as_deref(), Some("agents"));
    let labels = claim.metadata.labels.unwrap();
    assert_eq!(labels["team"], "research");
    assert_eq!(labels[APIARY.label_managed_by], APIARY.managed_by);
    assert_eq!(labels[APIARY.label_agent], agent().label_value());
    assert_eq!(
        claim.metadata.annotations.unwrap()[APIARY.annotation_agent_id],
        agent().id()
    );
    let spec = claim.spec.unwrap();
    assert_eq!(spec.access_modes, Some(vec!["ReadWriteOnce".to_owned()]));
    assert_eq!(spec.storage_class_name.as_deref(), Some("fast"));
    assert_eq!(
        spec.resources.unwrap().requests.unwrap()["storage"],
        Quantity("10Gi".into())
    );
    assert_eq!(claim.status, None);

    c.pod_options.workspace_claim = Some(WorkspaceClaim {
        size: "1Gi".into(),
        storage_class: None,
    });
    let unclassed = workspace::build_workspace_claim(&valid(&c)).unwrap();
    assert_eq!(unclassed.spec.unwrap().storage_class_name, None);
    assert_eq!(workspace::build_workspace_claim(&valid(&config())), None);
}

/// The buzz binding's `workspace_size_limit` sizes the emptyDir; its `active_deadline_seconds`
/// reaches the pod spec.
#[test]
fn the_empty_dir_carries_the_size_limit() {
    let mut c = config();
    c.pod_options.workspace_size_limit = Some("2Gi".into());
    c.pod_options.active_deadline_seconds = Some(600);
    let pod = build_pod(&valid(&c), g(1));
    assert_eq!(spec(&pod).active_deadline_seconds, Some(600));
    let volumes = spec(&pod).volumes.as_ref().unwrap();
    assert_eq!(
        volumes[0].empty_dir.as_ref().unwrap().size_limit,
        Some(Quantity("2Gi".into()))
    );
}
