//! Namespaces in the model: create (status `Active`, the `kubernetes.io/metadata.name` label),
//! ensure, get, list, and a delete that removes everything in the namespace at once.
//!
//! Layer: part of the pure model; performs no I/O and reads no clock.

use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::ClusterModel;
use super::list::{ListOptions, ListPage};
use super::store::{Preconditions, key};
use crate::error::ModelError;

impl ClusterModel {
    /// Create a namespace (status phase `Active`, label `kubernetes.io/metadata.name`).
    ///
    /// # Errors
    /// `Invalid` without a name; `AlreadyExists` when it exists.
    pub fn create_namespace(&mut self, namespace: Namespace) -> Result<Namespace, ModelError> {
        let namespace = self.create_object(None, namespace, |_, _| Ok(()))?;
        let name = namespace.metadata.name.clone().unwrap_or_default();
        self.accounts.schedule_default(&name, self.now);
        Ok(namespace)
    }

    /// Create the namespace `name` unless it exists; returns it either way.
    pub fn ensure_namespace(&mut self, name: &str) -> Namespace {
        if let Ok(existing) = self.get_namespace(name) {
            return existing;
        }
        let namespace = Namespace {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        match self.create_namespace(namespace) {
            Ok(created) => created,
            // Unreachable: the name is non-empty and was just checked to be free.
            Err(_) => self.get_namespace(name).unwrap_or_default(),
        }
    }

    /// Read a namespace.
    ///
    /// # Errors
    /// `NotFound` when it does not exist.
    pub fn get_namespace(&self, name: &str) -> Result<Namespace, ModelError> {
        self.get_object("", name)
    }

    /// List namespaces.
    ///
    /// # Errors
    /// `BadRequest` for a malformed selector or continue token; `Expired` for a compacted token.
    pub fn list_namespaces(
        &self,
        options: &ListOptions,
    ) -> Result<ListPage<Namespace>, ModelError> {
        self.list_objects(None, options)
    }

    /// Delete a namespace and, at once, everything in it (DELETED events for each). The real
    /// apiserver passes through a `Terminating` phase first; the model does not.
    ///
    /// # Errors
    /// `NotFound`; `Conflict` when a precondition fails.
    pub fn delete_namespace(
        &mut self,
        name: &str,
        preconditions: &Preconditions,
    ) -> Result<Namespace, ModelError> {
        let existing: Namespace = self.fenced("", name, preconditions)?;
        for key in self.pods.keys_in(name) {
            self.remove_pod_key(&key);
        }
        for key in self.secrets.keys_in(name) {
            self.remove_object::<Secret>(&key);
        }
        self.accounts.forget(name);
        Ok(self
            .remove_object::<Namespace>(&key("", name))
            .unwrap_or(existing))
    }
}
