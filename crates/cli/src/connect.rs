//! Client construction and namespace resolution for the subcommands (deploy.md § Namespace
//! resolution (CLI); § CLI contract, global flags). Shell layer: `apiary-substrate-kube` chooses
//! and reads the kubeconfig; this module maps its errors to exit 2, records the server and
//! context for failure messages, and applies the CLI's namespace rule. Must not: send any
//! request (building a client is local), or fall back to the `default` namespace for the
//! deploy-side subcommands.

use apiary_substrate_kube::{ClientOptions, Connection};

use crate::args::GlobalArgs;
use crate::outcome::Failure;
use crate::outcome::explain::{self, Target};

/// Build the client from `--kubeconfig`, `KUBECONFIG`, `~/.kube/config` or in-cluster, and
/// `--context`.
///
/// # Errors
///
/// Exit 2 (E13): the kubeconfig is unreadable or unusable, the context is unknown, a credential
/// plugin is missing, or there is no configuration at all.
pub async fn connect(global: &GlobalArgs) -> Result<Connection, Failure> {
    let options = ClientOptions {
        kubeconfig: global.kubeconfig.clone(),
        context: global.context.clone(),
    };
    let connection = apiary_substrate_kube::connect(&options)
        .await
        .map_err(|e| Failure::refused(e.to_string()))?;
    // What a failure message names when the server does not answer (docs/errors.md).
    explain::record_target(Target {
        server: connection.server.clone(),
        context: connection.context.clone(),
    });
    Ok(connection)
}

/// The deploy-side namespace rule (deploy.md § Namespace resolution): `-n`, else the context's
/// namespace, else refuse.
///
/// # Errors
///
/// Exit 2 when neither gives a namespace; never `default`.
pub fn deploy_namespace(flag: Option<&str>, context: Option<&str>) -> Result<String, Failure> {
    flag.or(context).map(str::to_owned).ok_or_else(|| {
        Failure::refused(
            "no namespace: pass -n NAMESPACE, or set a namespace on the kubeconfig context \
             (kubectl config set-context --current --namespace=NAMESPACE); apiary never uses \
             `default` silently",
        )
    })
}

#[cfg(test)]
mod tests {
    //! The namespace rule of deploy.md § Namespace resolution.

    use super::*;
    use crate::outcome::Exit;

    /// `-n` wins over the context's namespace.
    #[test]
    fn flag_wins_over_context() {
        assert_eq!(deploy_namespace(Some("a"), Some("b")).expect("ns"), "a");
    }

    /// Without `-n`, the context's namespace is used.
    #[test]
    fn context_namespace_is_the_fallback() {
        assert_eq!(deploy_namespace(None, Some("b")).expect("ns"), "b");
    }

    /// V4: no `-n` and no context namespace → exit 2, never `default`.
    #[test]
    fn v4_no_namespace_is_refused_never_default() {
        let err = deploy_namespace(None, None).expect_err("refused");
        assert_eq!(err.exit, Exit::Refused);
        assert!(err.message.contains("-n"));
    }
}
