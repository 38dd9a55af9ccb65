//! Secrets in the model: create (`stringData` merged into `data`, `type` defaulting to `Opaque`,
//! `immutable` kept), insert, get, list, delete and remove. A new Secret wakes the kubelet of
//! every pod in its namespace waiting `CreateContainerConfigError`.
//!
//! Layer: part of the pure model; performs no I/O and reads no clock. Secret values never
//! reach an error or `Debug` output.

use k8s_openapi::api::core::v1::Secret;

use super::ClusterModel;
use super::list::{ListOptions, ListPage};
use super::store::{Preconditions, key};
use crate::error::{Kind, ModelError};

impl ClusterModel {
    /// Create a Secret: `stringData` is merged into `data` and dropped, `type` defaults to
    /// `Opaque`, `immutable` is kept (the model has no update verb, so an immutable Secret's
    /// payload can never change).
    ///
    /// # Errors
    /// `NotFound` (kind Namespace) when `namespace` does not exist; `BadRequest` when the object
    /// names another namespace; `Invalid` without a name; `AlreadyExists` when the name is taken.
    pub fn create_secret(&mut self, namespace: &str, secret: Secret) -> Result<Secret, ModelError> {
        let secret = self.create_object(Some(namespace), secret, |_, _| Ok(()))?;
        self.kubelet.wake_config_errors(namespace, self.now);
        Ok(secret)
    }

    /// Insert a Secret directly (a test hook): as [`ClusterModel::insert_pod`] — keeps its
    /// uid, creationTimestamp and a resourceVersion above the counter, creates the namespace
    /// when missing.
    ///
    /// # Errors
    /// `Invalid` without a name or namespace; `AlreadyExists` when the name is taken.
    pub fn insert_secret(&mut self, secret: Secret) -> Result<Secret, ModelError> {
        let secret = self.insert_object(secret)?;
        let namespace = secret.metadata.namespace.as_deref().unwrap_or_default();
        self.kubelet.wake_config_errors(namespace, self.now);
        Ok(secret)
    }

    /// Read a Secret.
    ///
    /// # Errors
    /// `NotFound` when it does not exist.
    pub fn get_secret(&self, namespace: &str, name: &str) -> Result<Secret, ModelError> {
        self.get_object(namespace, name)
    }

    /// List Secrets in `namespace` (`None`: all namespaces).
    ///
    /// # Errors
    /// `BadRequest` for a malformed selector or continue token; `Expired` for a compacted token.
    pub fn list_secrets(
        &self,
        namespace: Option<&str>,
        options: &ListOptions,
    ) -> Result<ListPage<Secret>, ModelError> {
        self.list_objects(namespace, options)
    }

    /// Delete a Secret (removed at once).
    ///
    /// # Errors
    /// `NotFound`; `Conflict` when a precondition fails.
    pub fn delete_secret(
        &mut self,
        namespace: &str,
        name: &str,
        preconditions: &Preconditions,
    ) -> Result<Secret, ModelError> {
        let existing = self.fenced(namespace, name, preconditions)?;
        Ok(self
            .remove_object(&key(namespace, name))
            .unwrap_or(existing))
    }

    /// Remove a Secret from the store at once (a test hook).
    ///
    /// # Errors
    /// `NotFound` when it does not exist.
    pub fn remove_secret(&mut self, namespace: &str, name: &str) -> Result<Secret, ModelError> {
        self.remove_object(&key(namespace, name))
            .ok_or_else(|| ModelError::NotFound {
                kind: Kind::Secret,
                name: name.to_owned(),
            })
    }
}
