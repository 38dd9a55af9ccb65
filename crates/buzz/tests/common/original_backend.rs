//! The objects the original `buzz-backend-kubernetes` writes for one attempt (buzz-provider.md
//! § 6.1 Secret, § 6.2 Pod), written by hand from the spec's templates as serde_json literals,
//! never through apiary's builders: the substrate tests compare apiary's buzz objects with them
//! (`buzz_pod`) and seed the fake cluster with them (`buzz_interop`).
//!
//! Test-only. The pod has the spec's default resources (requests 1 CPU / 2Gi, limits 2 / 4Gi).

use serde_json::{Value, json};

/// One attempt of the original backend: where, for whom, which attempt, which image.
pub struct Attempt {
    namespace: String,
    pubkey: String,
    generation: String,
    image: String,
}

impl Attempt {
    /// Attempt `generation` (8 hex: the Secret name's suffix and the start nonce) of the agent
    /// `pubkey` (64 hex) in `namespace`, on the digest-pinned `image`.
    pub fn new(namespace: &str, pubkey: &str, generation: &str, image: &str) -> Self {
        Attempt {
            namespace: namespace.to_owned(),
            pubkey: pubkey.to_owned(),
            generation: generation.to_owned(),
            image: image.to_owned(),
        }
    }

    /// `buzz-agent-<first 12 hex>`: the pod's name (buzz-provider.md § 4.1).
    pub fn pod_name(&self) -> String {
        format!("buzz-agent-{}", &self.pubkey[..12])
    }

    /// `buzz-agent-<first 12 hex>-<generation>`: the attempt's Secret name.
    pub fn secret_name(&self) -> String {
        format!("{}-{}", self.pod_name(), self.generation)
    }

    /// The three labels of buzz-provider.md § 4.2.
    fn labels(&self) -> Value {
        json!({
            "app.kubernetes.io/managed-by": "buzz-backend-kubernetes",
            "buzz.block.xyz/binding-version": "1",
            "buzz.block.xyz/agent-pubkey": &self.pubkey[..32],
        })
    }

    /// The attempt's Secret (buzz-provider.md § 6.1) holding `string_data`.
    pub fn secret(&self, string_data: Value) -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": self.secret_name(),
                "namespace": self.namespace,
                "labels": self.labels(),
                "annotations": {"buzz.block.xyz/agent-pubkey-full": self.pubkey},
            },
            "stringData": string_data,
            "immutable": true,
        })
    }

    /// The attempt's pod (buzz-provider.md § 6.2) recording the create-intent `intent`.
    pub fn pod(&self, intent: &str) -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": self.pod_name(),
                "namespace": self.namespace,
                "labels": self.labels(),
                "annotations": {
                    "buzz.block.xyz/agent-pubkey-full": self.pubkey,
                    "buzz.block.xyz/create-intent": intent,
                    "buzz.block.xyz/image": self.image,
                },
            },
            "spec": {
                "containers": [{
                    "name": "agent",
                    "image": self.image,
                    "envFrom": [{"secretRef": {
                        "name": self.secret_name(),
                        "optional": false,
                    }}],
                    "resources": {
                        "requests": {"cpu": "1", "memory": "2Gi"},
                        "limits": {"cpu": "2", "memory": "4Gi"},
                    },
                    "volumeMounts": [{"name": "workspace", "mountPath": "/home/agent"}],
                    "securityContext": {
                        "allowPrivilegeEscalation": false,
                        "capabilities": {"drop": ["ALL"]},
                    },
                }],
                "restartPolicy": "Never",
                "terminationGracePeriodSeconds": 60,
                "automountServiceAccountToken": false,
                "securityContext": {
                    "runAsNonRoot": true,
                    "runAsUser": 10001,
                    "runAsGroup": 10001,
                    "fsGroup": 10001,
                    "seccompProfile": {"type": "RuntimeDefault"},
                },
                "volumes": [{"name": "workspace", "emptyDir": {}}],
            },
        })
    }
}
