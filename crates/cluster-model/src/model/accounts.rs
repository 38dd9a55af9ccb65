//! The ServiceAccount state of a model: the stored accounts, whether ServiceAccount admission is
//! on, and the controller stand-in's delay and pending `default` creations (deploy.md
//! § Namespace ensure, item 4: a just-created namespace has no service account yet).
//!
//! Layer: part of the pure model; plain data and the pure admission check. It reads no clock
//! (due times count on the model clock it is given) and stamps nothing: the model's verbs do.

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Pod, ServiceAccount};

use super::store::{Store, key};
use super::time::add;
use crate::error::ModelError;

/// The account a pod runs as when its spec names none, and the one the controller creates.
pub(crate) const DEFAULT_SERVICE_ACCOUNT: &str = "default";

/// The ServiceAccount state of a model. Both behaviours are off by default, as on a bare
/// `kube-apiserver` without the admission plugin and without a controller manager.
#[derive(Clone, Debug, Default)]
pub(crate) struct Accounts {
    /// Stored accounts.
    pub(crate) stored: Store<ServiceAccount>,
    /// Whether pod creates are refused when their account is missing.
    pub(crate) admission: bool,
    /// The controller's delay; `None` = no controller.
    controller_delay: Option<Duration>,
    /// Namespaces whose `default` account the controller will create, and when.
    pending: BTreeMap<String, Timestamp>,
}

impl Accounts {
    /// Run or stop the controller; either way nothing is pending any more.
    pub(crate) fn set_controller(&mut self, delay: Option<Duration>) {
        self.controller_delay = delay;
        self.pending.clear();
    }

    /// Queue the controller's `default` for `namespace` (due its delay after `now`) when a
    /// controller runs and the namespace has none.
    pub(crate) fn schedule_default(&mut self, namespace: &str, now: Timestamp) {
        let Some(delay) = self.controller_delay else {
            return;
        };
        if !self
            .stored
            .contains(&key(namespace, DEFAULT_SERVICE_ACCOUNT))
        {
            self.pending.insert(namespace.to_owned(), add(now, delay));
        }
    }

    /// The earliest pending `default` creation.
    pub(crate) fn next_due(&self) -> Option<(Timestamp, String)> {
        self.pending
            .iter()
            .map(|(namespace, at)| (*at, namespace.clone()))
            .min()
    }

    /// An account named `name` now exists in `namespace`: the controller has nothing left to
    /// do there once it is `default`.
    pub(crate) fn created(&mut self, namespace: &str, name: &str) {
        if name == DEFAULT_SERVICE_ACCOUNT {
            self.pending.remove(namespace);
        }
    }

    /// The controller's due creation in `namespace` is being run.
    pub(crate) fn take_due(&mut self, namespace: &str) {
        self.pending.remove(namespace);
    }

    /// Drop the accounts and pending work of a deleted namespace.
    pub(crate) fn forget(&mut self, namespace: &str) {
        self.stored.forget_namespace(namespace);
        self.pending.remove(namespace);
    }

    /// What the admission plugin writes before it checks: a pod that names no account runs as
    /// `default`, set in `spec.serviceAccountName` (the real server answers it so; without the
    /// plugin the field stays unset, as it does there).
    pub(crate) fn default_account(&self, pod: &mut Pod) {
        if !self.admission {
            return;
        }
        let spec = pod.spec.get_or_insert_with(Default::default);
        if spec
            .service_account_name
            .as_deref()
            .is_none_or(str::is_empty)
        {
            spec.service_account_name = Some(DEFAULT_SERVICE_ACCOUNT.to_owned());
        }
    }

    /// ServiceAccount admission for a create of `pod` (named `pod_name`) in `namespace`.
    ///
    /// # Errors
    /// `ServiceAccountMissing` when admission is on and the pod's account
    /// (`spec.serviceAccountName`, else `default`) does not exist in the namespace.
    pub(crate) fn admit(
        &self,
        namespace: &str,
        pod_name: &str,
        pod: &Pod,
    ) -> Result<(), ModelError> {
        if !self.admission {
            return Ok(());
        }
        let account = pod
            .spec
            .as_ref()
            .and_then(|s| s.service_account_name.as_deref())
            .filter(|name| !name.is_empty())
            .unwrap_or(DEFAULT_SERVICE_ACCOUNT);
        if self.stored.contains(&key(namespace, account)) {
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
