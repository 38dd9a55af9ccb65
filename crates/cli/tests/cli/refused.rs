//! deploy.md § Who refused it, on the real `kube-apiserver` (the simulator has no admission
//! plugins): a ResourceQuota and a LimitRange refuse the pod with their own words, the error
//! names them and the flag, never the RBAC grant; JSON says who refused and the plugin; and
//! nothing is left behind (the attempt's Secret is dropped). A validating webhook served on
//! loopback is named as the webhook, in its own words. A real RBAC denial keeps the grant.
//!
//! Layer: CLI tests over loopback; real server only.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{
    LimitRange, LimitRangeItem, LimitRangeSpec, ResourceQuota, ResourceQuotaSpec,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::common::{Fixture, IMAGE};
use apiary_apiserver_sim::{Resource, Verb};

fn quantities(pairs: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), Quantity((*v).to_owned())))
        .collect()
}

fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        ..ObjectMeta::default()
    }
}

/// A deploy asking more memory than the namespace's ResourceQuota allows: exit 1, the quota's
/// words and name, the flag, no grant hint; `refused_by` and `plugin`; no pod, no Secret.
#[test]
fn a_resource_quota_refusal_names_the_quota_not_a_role() {
    let Some(fx) = Fixture::on_real("quota") else {
        return;
    };
    fx.create_namespaced_object(&ResourceQuota {
        metadata: meta("tight"),
        spec: Some(ResourceQuotaSpec {
            hard: Some(quantities(&[("limits.memory", "100Mi")])),
            ..ResourceQuotaSpec::default()
        }),
        ..ResourceQuota::default()
    });
    // The quota controller's part (the tier has no controller manager): what is used so far.
    fx.patch_namespaced_status::<ResourceQuota>(
        "tight",
        serde_json::json!({"hard": {"limits.memory": "100Mi"}, "used": {"limits.memory": "0"}}),
    );
    let args = [
        "deploy",
        "quota bot",
        "--image",
        IMAGE,
        "--memory-request",
        "64Mi",
        "--memory-limit",
        "128Mi",
    ];
    assert_refused_by_admission(
        &fx,
        &args,
        &[
            "exceeded quota: tight",
            "refused by ResourceQuota tight, not a missing role",
            "lower --memory-limit",
        ],
        "ResourceQuota",
    );
}

/// A CPU limit above the namespace's LimitRange maximum: the bound and the flag, no grant
/// hint, nothing left.
#[test]
fn a_limit_range_refusal_names_the_bound_and_the_flag() {
    let Some(fx) = Fixture::on_real("limitrange") else {
        return;
    };
    fx.create_namespaced_object(&LimitRange {
        metadata: meta("small"),
        spec: Some(LimitRangeSpec {
            limits: vec![LimitRangeItem {
                type_: "Container".to_owned(),
                max: Some(quantities(&[("cpu", "200m")])),
                ..LimitRangeItem::default()
            }],
        }),
    });
    assert_refused_by_admission(
        &fx,
        &[
            "deploy",
            "range bot",
            "--image",
            IMAGE,
            "--cpu-limit",
            "500m",
        ],
        &[
            "maximum cpu usage per Container is 200m, but limit is 500m",
            "refused by a LimitRange",
            "--cpu-limit",
        ],
        "LimitRanger",
    );
}

/// A validating webhook refusing the pod (it lacks the label `team`): exit 1, the webhook's
/// name and words, not a role; `refused_by` admission and plugin `webhook`; nothing left; and
/// the same deploy with the label goes through.
#[test]
fn a_webhook_refusal_names_the_webhook_not_a_role() {
    let Some(fx) = Fixture::on_real("webhook") else {
        return;
    };
    let _webhook = fx.require_label_webhook("require-team.example.com", "team");
    let args = ["deploy", "webhook bot", "--image", IMAGE];
    // The apiserver picks a new configuration up from its informer, within a moment.
    let deadline = Instant::now() + Duration::from_secs(10);
    let run = loop {
        let run = fx.apiary(&args);
        if run.stderr.contains("admission webhook") || Instant::now() > deadline {
            break run;
        }
        assert_eq!(run.code, 0, "{run:?}");
        // Not refused yet: the deploy went through, so take its pod away and try again.
        assert_eq!(fx.apiary(&["undeploy", "webhook bot"]).code, 0);
        std::thread::sleep(Duration::from_millis(500));
    };
    assert!(run.stderr.contains("admission webhook"), "{run:?}");
    assert_refused_by_admission(
        &fx,
        &args,
        &[
            "admission webhook \"require-team.example.com\" denied the request",
            "refused by the admission webhook require-team.example.com",
            "you must provide labels",
        ],
        "webhook",
    );

    let mut labelled = args.to_vec();
    labelled.extend(["--label", "team=ml"]);
    let run = fx.apiary(&labelled);
    assert_eq!(run.code, 0, "{run:?}");
}

/// A real RBAC denial (the caller may not create pods) keeps the grant hint and says `rbac`.
#[test]
fn a_real_rbac_denial_keeps_the_grant() {
    let Some(mut fx) = Fixture::on_real("rbac-refused") else {
        return;
    };
    fx.deny(Verb::Create, Some(Resource::Pods));
    let run = fx.apiary(&["-o", "json", "deploy", "denied bot", "--image", IMAGE]);
    assert_eq!(run.code, 1, "{run:?}");
    let doc = run.json();
    assert_eq!(doc["refused_by"], "rbac", "{doc}");
    assert!(
        doc["error"]
            .as_str()
            .unwrap_or_default()
            .contains("rbac/apiary-deployer.yaml")
    );
    assert!(fx.pod_names().is_empty());
}

/// `args` (a deploy) fails with exit 1; its `error:` line holds each of `says` and no stderr line
/// offers the RBAC grant; the same deploy with `-o json` says `refused_by` admission and
/// `plugin`; no pod and no Secret are left.
fn assert_refused_by_admission(fx: &Fixture, args: &[&str], says: &[&str], plugin: &str) {
    let run = fx.apiary(args);
    assert_eq!(run.code, 1, "{run:?}");
    let first = run
        .stderr
        .lines()
        .find(|l| l.starts_with("error:"))
        .unwrap_or_default();
    for needle in says {
        assert!(first.contains(needle), "{needle:?} in {first}");
    }
    assert!(!run.stderr.contains("rbac/"), "{run:?}");
    let mut json_args = vec!["-o", "json"];
    json_args.extend(args);
    let doc = fx.apiary(&json_args).json();
    assert_eq!(doc["refused_by"], "admission", "{doc}");
    assert_eq!(doc["plugin"], plugin, "{doc}");
    assert!(fx.pod_names().is_empty());
    assert!(fx.secret_names().is_empty(), "{:?}", fx.secret_names());
}
