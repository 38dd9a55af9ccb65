//! The deploy driver's result as the wire response (buzz-provider.md § 1.3, § 2.4): the started
//! pod's name as `agent_id`, or an in-band error carrying the latest redacted condition.
//!
//! Pure. The messages are the driver's own (deploy.md § Errors), which never hold an
//! environment value or the nsec; must not add any field beyond the two of each shape.

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
        Err(error) => Response::error(error.to_string()),
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
}
