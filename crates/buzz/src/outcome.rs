//! The deploy driver's result as the wire response (buzz-provider.md § 1.3, § 2.4): the started
//! pod's name as `agent_id`, or an in-band error carrying the latest redacted condition.
//!
//! Pure. The messages are the driver's own (deploy.md § Errors), which never hold an
//! environment value or the nsec; must not add any field beyond the two of each shape.

use apiary_classify::refusal::refusal_of;
use apiary_substrate::driver::{DeployError, Deployed};

use crate::wire::Response;

/// `{"ok":true,"agent_id":<pod>}` or `{"ok":false,"error":<why>}`.
pub fn deploy_response(result: Result<Deployed, DeployError>) -> Response {
    match result {
        // The running pod may keep an older configuration (intent differs); the wire has no
        // field for it, and the desktop learns the truth from presence (I3).
        Ok(deployed) => Response::Deployed {
            agent_id: deployed.pod,
        },
        Err(error) => Response::error(in_words(&error)),
    }
}

/// The driver's message, and for a `403 Forbidden` who refused it (deploy.md § Who refused it):
/// the wire has no field for it, and a quota or a webhook is not a missing role.
fn in_words(error: &DeployError) -> String {
    match error.request_failure().and_then(refusal_of) {
        Some(refusal) => format!("{error} (refused by {})", refusal.authority()),
        None => error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    //! Both shapes, pinned as literal JSON lines.

    use super::*;

    /// Success carries exactly `ok` and `agent_id`, the pod name.
    #[test]
    fn success_is_ok_and_agent_id() {
        let response = deploy_response(Ok(Deployed {
            pod: "buzz-agent-7e7e9c42a91b".to_owned(),
            intent_matches: false,
            workspace: None,
            recorded_settings: None,
        }));
        assert_eq!(
            response.to_line().unwrap(),
            "{\"ok\":true,\"agent_id\":\"buzz-agent-7e7e9c42a91b\"}\n"
        );
    }

    /// A failure carries exactly `ok:false` and the driver's message.
    #[test]
    fn failure_is_ok_false_and_message() {
        let response = deploy_response(Err(DeployError::ForeignPod {
            pod: "buzz-agent-7e7e9c42a91b".to_owned(),
        }));
        let line = response.to_line().unwrap();
        let value: serde_json::Value = serde_json::from_str(&line).unwrap();
        let object = value.as_object().unwrap();
        assert_eq!(object.len(), 2);
        assert_eq!(object["ok"], false);
        assert!(
            object["error"]
                .as_str()
                .unwrap()
                .contains("buzz-agent-7e7e9c42a91b")
        );
    }

    /// deploy.md § Who refused it: a 403 names who refused, in the `error` text (the wire has
    /// no field for it): a quota is the quota, not a missing role; RBAC is a missing role.
    #[test]
    fn a_refusal_names_who_refused() {
        use apiary_classify::deploy::{ObjectKind, SecretFate};
        use apiary_classify::failure::{Operation, RequestFailure};
        let refused = |message: &str| {
            let response = deploy_response(Err(DeployError::CreateFailed {
                kind: ObjectKind::Pod,
                name: "buzz-agent-7e7e9c42a91b".to_owned(),
                failure: RequestFailure::answered(
                    Operation::CreatePod,
                    "agents/buzz-agent-7e7e9c42a91b",
                    403,
                    "Forbidden",
                    message,
                ),
                secret: SecretFate::Removed("buzz-agent-7e7e9c42a91b-0".to_owned()),
            }));
            let value: serde_json::Value =
                serde_json::from_str(&response.to_line().unwrap()).unwrap();
            assert_eq!(value.as_object().unwrap().len(), 2);
            value["error"].as_str().unwrap().to_owned()
        };
        let quota = refused(
            "pods \"p\" is forbidden: exceeded quota: tight, requested: limits.memory=128Mi, \
             used: limits.memory=0, limited: limits.memory=100Mi",
        );
        assert!(quota.contains("exceeded quota: tight"), "{quota}");
        assert!(
            quota.ends_with("(refused by the ResourceQuota \"tight\")"),
            "{quota}"
        );
        assert!(!quota.contains("RBAC"), "{quota}");
        let rbac = refused(
            "pods is forbidden: User \"limited\" cannot create resource \"pods\" in API group \
             \"\" in the namespace \"agents\"",
        );
        assert!(
            rbac.ends_with("(refused by a missing role (RBAC))"),
            "{rbac}"
        );
    }
}
