//! The agent's NetworkPolicy (deploy.md § Egress control): built from a validated configuration
//! with `--isolate`, it selects exactly this agent's isolated pods, allows no ingress, and allows
//! egress only to DNS (UDP and TCP 53, any destination) and to each `--allow-egress` block.
//!
//! Pure. One policy per agent, named like its pod and marked like its Secret, so verification
//! can prove it apiary's before any update or delete. Its `apiary.dev/create-intent` annotation
//! is the SHA-256 of its spec, so a deploy can tell whether it says what the configuration wants.

use std::collections::BTreeMap;

use k8s_openapi::api::networking::v1::{
    IPBlock, NetworkPolicy, NetworkPolicyEgressRule, NetworkPolicyPeer, NetworkPolicyPort,
    NetworkPolicySpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use sha2::{Digest, Sha256};

use crate::config::ValidConfig;
use crate::naming::hex;

/// The pod label an isolated agent's pods carry, and that its policy selects on with the agent
/// label: a pod deployed without `--isolate` is never selected by a policy left from before.
pub const LABEL_ISOLATED: &str = "apiary.dev/isolated";

/// The DNS port every isolated agent may reach.
const DNS_PORT: i32 = 53;

/// The agent's policy, when the configuration isolates it.
#[must_use]
pub fn build_network_policy(config: &ValidConfig) -> Option<NetworkPolicy> {
    let options = config.pod_options();
    if !options.isolate {
        return None;
    }
    let agent = config.agent();
    let mut selector = agent.labels();
    selector.insert(LABEL_ISOLATED.to_owned(), "true".to_owned());
    let dns = NetworkPolicyEgressRule {
        ports: Some(
            ["UDP", "TCP"]
                .into_iter()
                .map(|protocol| tcp_or_udp(protocol, DNS_PORT))
                .collect(),
        ),
        to: None,
    };
    let allowed = options
        .allow_egress
        .iter()
        .map(|rule| NetworkPolicyEgressRule {
            ports: rule
                .port
                .map(|port| vec![tcp_or_udp("TCP", i32::from(port))]),
            to: Some(vec![NetworkPolicyPeer {
                ip_block: Some(IPBlock {
                    cidr: rule.cidr.clone(),
                    except: None,
                }),
                ..NetworkPolicyPeer::default()
            }]),
        });
    let spec = NetworkPolicySpec {
        pod_selector: Some(LabelSelector {
            match_labels: Some(selector),
            match_expressions: None,
        }),
        policy_types: Some(vec!["Ingress".to_owned(), "Egress".to_owned()]),
        ingress: None,
        egress: Some(std::iter::once(dns).chain(allowed).collect()),
    };
    let mut labels = options.labels.clone();
    labels.extend(agent.labels());
    let mut annotations: BTreeMap<String, String> = agent.annotations();
    annotations.insert(
        agent.binding().annotation_create_intent.to_owned(),
        policy_intent(&spec),
    );
    Some(NetworkPolicy {
        metadata: ObjectMeta {
            name: Some(agent.pod_name()),
            namespace: Some(config.namespace().to_owned()),
            labels: Some(labels),
            annotations: Some(annotations),
            ..ObjectMeta::default()
        },
        spec: Some(spec),
    })
}

/// The fingerprint of a policy spec: lowercase hex SHA-256 of its JSON (serialized in the
/// declaration order of its fields, so stable for one apiary version).
#[must_use]
pub fn policy_intent(spec: &NetworkPolicySpec) -> String {
    let json = serde_json::to_string(spec).unwrap_or_default();
    hex(&Sha256::digest(json.as_bytes()))
}

fn tcp_or_udp(protocol: &str, port: i32) -> NetworkPolicyPort {
    NetworkPolicyPort {
        protocol: Some(protocol.to_owned()),
        port: Some(IntOrString::Int(port)),
        ..NetworkPolicyPort::default()
    }
}
