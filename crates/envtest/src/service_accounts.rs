//! A stand-in for the ServiceAccount controller of `kube-controller-manager`: it watches
//! namespaces and creates the `default` ServiceAccount in each one it sees, after a configurable
//! delay, so a test can run the apiserver with ServiceAccount admission on and reproduce the
//! fresh-namespace race (deploy.md § Namespace ensure, item 4).
//!
//! Layer: test support, I/O through kube-rs on its own thread and Tokio runtime (so it can serve
//! the shared control plane, which outlives every test's runtime). It creates no token Secret:
//! apiary's pods set `automountServiceAccountToken: false`, so admission needs only the account.

use std::collections::HashSet;
use std::io;
use std::thread::JoinHandle;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use kube::api::{ObjectMeta, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use tokio::sync::oneshot;

/// The running stand-in; dropping it stops the watch and joins its thread.
pub struct DefaultServiceAccounts {
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for DefaultServiceAccounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DefaultServiceAccounts")
            .finish_non_exhaustive()
    }
}

impl DefaultServiceAccounts {
    /// Starts watching namespaces with `config` (it needs rights to watch namespaces and create
    /// service accounts: use the admin identity). Each namespace gets its `default` account
    /// `delay` after the stand-in first sees it, including the namespaces that exist already.
    ///
    /// # Errors
    /// Fails if the thread cannot be spawned.
    pub fn spawn(config: kube::Config, delay: Duration) -> io::Result<Self> {
        let (stop, stopped) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name("envtest-default-service-accounts".to_owned())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(error) => {
                        tracing::error!(%error, "cannot start the service-account stand-in runtime");
                        return;
                    }
                };
                runtime.block_on(async move {
                    // The one crypto provider in the tree; a no-op after the first install.
                    let _already_installed =
                        rustls::crypto::ring::default_provider().install_default();
                    let client = match Client::try_from(config) {
                        Ok(client) => client,
                        Err(error) => {
                            tracing::error!(%error, "cannot build the service-account stand-in client");
                            return;
                        }
                    };
                    tokio::select! {
                        _ = stopped => {}
                        () = create_default_accounts(client, delay) => {}
                    }
                });
            })?;
        Ok(Self {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for DefaultServiceAccounts {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _receiver_gone = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _panicked = thread.join();
        }
    }
}

/// Watches namespaces forever, scheduling one `default` account per namespace name.
async fn create_default_accounts(client: Client, delay: Duration) {
    let mut seen = HashSet::new();
    let mut events = watcher(
        Api::<Namespace>::all(client.clone()),
        watcher::Config::default(),
    )
    .default_backoff()
    .boxed();
    while let Some(event) = events.next().await {
        let namespace = match event {
            Ok(watcher::Event::Apply(namespace) | watcher::Event::InitApply(namespace)) => {
                namespace
            }
            Ok(_) => continue,
            Err(error) => {
                tracing::warn!(%error, "service-account stand-in: namespace watch failed");
                continue;
            }
        };
        let Some(name) = namespace.metadata.name else {
            continue;
        };
        // A terminating namespace refuses new objects; the real controller skips it too.
        if namespace.metadata.deletion_timestamp.is_some() || !seen.insert(name.clone()) {
            continue;
        }
        tokio::spawn(create_after(client.clone(), name, delay));
    }
}

async fn create_after(client: Client, namespace: String, delay: Duration) {
    tokio::time::sleep(delay).await;
    let account = ServiceAccount {
        metadata: ObjectMeta {
            name: Some("default".to_owned()),
            ..ObjectMeta::default()
        },
        ..ServiceAccount::default()
    };
    let api = Api::<ServiceAccount>::namespaced(client, &namespace);
    match api.create(&PostParams::default(), &account).await {
        Ok(_) => tracing::debug!(%namespace, "created the default service account"),
        Err(kube::Error::Api(status)) if status.reason == "AlreadyExists" => {}
        Err(error) => {
            tracing::warn!(%namespace, %error, "cannot create the default service account");
        }
    }
}
