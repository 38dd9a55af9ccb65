//! ServiceAccounts in the model: the object store, the ServiceAccount admission check a real
//! apiserver runs on every pod create, and a stand-in for the controller manager's
//! ServiceAccount controller, which creates `default` in each new namespace after a delay
//! (deploy.md § Namespace ensure, item 4: a just-created namespace has no service account yet).
//!
//! Layer: part of the pure model. It reads no clock (the delay counts on the model clock),
//! performs no I/O and records no watch events (nothing in apiary watches ServiceAccounts).
//! Both behaviours are off by default, as on a bare `kube-apiserver` without the admission
//! plugin and without a controller manager, so every existing scenario is unchanged.

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::{ClusterModel, add};
use crate::error::{Kind, ModelError};

/// The account a pod runs as when its spec names none, and the one the controller creates.
pub const DEFAULT_SERVICE_ACCOUNT: &str = "default";

/// The ServiceAccount state of a model.
#[derive(Clone, Debug, Default)]
pub(super) struct Accounts {
    /// Stored accounts by (namespace, name).
    stored: BTreeMap<(String, String), ServiceAccount>,
    /// Whether pod creates are refused when their account is missing.
    admission: bool,
    /// The controller's delay; `None` = no controller.
    controller_delay: Option<Duration>,
    /// Namespaces whose `default` account the controller will create, and when.
    pending: BTreeMap<String, Timestamp>,
}

impl Accounts {
    /// The earliest pending `default` creation.
    pub(super) fn next_due(&self) -> Option<(Timestamp, String)> {
        self.pending
            .iter()
            .map(|(namespace, at)| (*at, namespace.clone()))
            .min()
    }
}

impl ClusterModel {
    /// Turn ServiceAccount admission on or off. With it on, a pod create whose account
    /// (`spec.serviceAccountName`, else `default`) does not exist in its namespace is refused
    /// with 403 `Forbidden`: `pods "<pod>" is forbidden: error looking up service account
    /// <ns>/<sa>: serviceaccount "<sa>" not found`, as the real apiserver's admission plugin does.
    pub fn set_service_account_admission(&mut self, on: bool) {
        self.accounts.admission = on;
    }

    /// Run (`Some(delay)`) or stop (`None`) the ServiceAccount controller stand-in: every
    /// namespace created from now on gets a `default` account `delay` later on the model clock,
    /// and so does every existing namespace that lacks one (counted from now). Stopping it
    /// cancels pending creations.
    pub fn set_service_account_controller(&mut self, delay: Option<Duration>) {
        self.accounts.controller_delay = delay;
        self.accounts.pending.clear();
        if delay.is_some() {
            let namespaces: Vec<String> = self.namespaces.keys().cloned().collect();
            for namespace in namespaces {
                self.schedule_default_account(&namespace);
            }
        }
    }

    /// Create a ServiceAccount (stamped like every object; no watch event).
    ///
    /// # Errors
    /// `NotFound` (kind Namespace) when `namespace` does not exist; `BadRequest` when the object
    /// names another namespace; `Invalid` without a name; `AlreadyExists` when the name is taken.
    pub fn create_service_account(
        &mut self,
        namespace: &str,
        mut account: ServiceAccount,
    ) -> Result<ServiceAccount, ModelError> {
        Self::bad_namespace(&account.metadata, namespace)?;
        let name = Self::required_name(Kind::ServiceAccount, &account.metadata)?;
        self.require_namespace(namespace)?;
        let key = (namespace.to_owned(), name.clone());
        if self.accounts.stored.contains_key(&key) {
            return Err(ModelError::AlreadyExists {
                kind: Kind::ServiceAccount,
                name,
            });
        }
        self.stamp_new(&mut account.metadata, Some(namespace));
        self.accounts.stored.insert(key, account.clone());
        if name == DEFAULT_SERVICE_ACCOUNT {
            self.accounts.pending.remove(namespace);
        }
        Ok(account)
    }

    /// Read a ServiceAccount.
    ///
    /// # Errors
    /// `NotFound` when it does not exist.
    pub fn get_service_account(
        &self,
        namespace: &str,
        name: &str,
    ) -> Result<ServiceAccount, ModelError> {
        self.accounts
            .stored
            .get(&(namespace.to_owned(), name.to_owned()))
            .cloned()
            .ok_or_else(|| ModelError::NotFound {
                kind: Kind::ServiceAccount,
                name: name.to_owned(),
            })
    }

    /// Queue the controller's `default` for `namespace` when a controller runs and the namespace
    /// has none.
    pub(super) fn schedule_default_account(&mut self, namespace: &str) {
        let Some(delay) = self.accounts.controller_delay else {
            return;
        };
        let key = (namespace.to_owned(), DEFAULT_SERVICE_ACCOUNT.to_owned());
        if !self.accounts.stored.contains_key(&key) {
            let at = add(self.now, delay);
            self.accounts.pending.insert(namespace.to_owned(), at);
        }
    }

    /// The controller's due step: create `default` in `namespace` (unless someone did first or
    /// the namespace is gone).
    pub(super) fn create_due_account(&mut self, namespace: &str) {
        self.accounts.pending.remove(namespace);
        let account = ServiceAccount {
            metadata: ObjectMeta {
                name: Some(DEFAULT_SERVICE_ACCOUNT.to_owned()),
                ..ObjectMeta::default()
            },
            ..ServiceAccount::default()
        };
        // AlreadyExists or a vanished namespace leave nothing to do.
        let _ = self.create_service_account(namespace, account);
    }

    /// Drop the accounts of a deleted namespace.
    pub(super) fn forget_accounts(&mut self, namespace: &str) {
        self.accounts.stored.retain(|(ns, _), _| ns != namespace);
        self.accounts.pending.remove(namespace);
    }

    /// ServiceAccount admission for a pod create.
    pub(super) fn admit_service_account(
        &self,
        namespace: &str,
        pod_name: &str,
        pod: &Pod,
    ) -> Result<(), ModelError> {
        if !self.accounts.admission {
            return Ok(());
        }
        let account = pod
            .spec
            .as_ref()
            .and_then(|s| s.service_account_name.as_deref())
            .filter(|name| !name.is_empty())
            .unwrap_or(DEFAULT_SERVICE_ACCOUNT);
        let key = (namespace.to_owned(), account.to_owned());
        if self.accounts.stored.contains_key(&key) {
            Ok(())
        } else {
            Err(ModelError::ServiceAccountMissing {
                pod: pod_name.to_owned(),
                namespace: namespace.to_owned(),
                account: account.to_owned(),
            })
        }
    }
}

#[cfg(test)]
mod tests;
