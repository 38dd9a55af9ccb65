//! ServiceAccounts in the model: get and create (stamped like every object; no watch event), the
//! ServiceAccount admission check a real apiserver runs on every pod create, and a stand-in for
//! the controller manager's ServiceAccount controller, which creates `default` in each new
//! namespace after a delay (deploy.md § Namespace ensure, item 4).
//!
//! Layer: part of the pure model. It reads no clock (the delay counts on the model clock),
//! performs no I/O and records no watch events (nothing in apiary watches ServiceAccounts).
//! Both behaviours are off by default, so every existing scenario is unchanged.

use std::time::Duration;

use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::ClusterModel;
use super::accounts::DEFAULT_SERVICE_ACCOUNT;
use crate::error::ModelError;

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
        self.accounts.set_controller(delay);
        let namespaces: Vec<String> = self.namespaces.keys().map(|k| k.1.clone()).collect();
        for namespace in namespaces {
            self.accounts.schedule_default(&namespace, self.now);
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
        account: ServiceAccount,
    ) -> Result<ServiceAccount, ModelError> {
        let account = self.create_object(Some(namespace), account, |_, _| Ok(()))?;
        let name = account.metadata.name.as_deref().unwrap_or_default();
        self.accounts.created(namespace, name);
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
        self.get_object(namespace, name)
    }

    /// The controller's due step: create `default` in `namespace` (unless someone did first or
    /// the namespace is gone).
    pub(super) fn create_due_account(&mut self, namespace: &str) {
        self.accounts.take_due(namespace);
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
}

#[cfg(test)]
mod tests;
