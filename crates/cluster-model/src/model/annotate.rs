//! Changing a pod's annotations (`PATCH` with a JSON merge patch of `metadata.annotations`): the
//! one update the model performs, guarded by an optional `resourceVersion` precondition as the
//! apiserver guards an update or a patch that carries one (409 `Conflict` when it differs).
//!
//! Layer: part of the pure model; performs no I/O and reads no clock. It changes annotations
//! only, never the spec, status, labels or deletion mark.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;

use super::ClusterModel;
use super::store::{Preconditions, key};
use crate::error::ModelError;

impl ClusterModel {
    /// Merge `changes` into the pod's annotations (a `None` value removes the key), when
    /// `resource_version` (if given) is the stored one. The pod gets the next resourceVersion
    /// and a MODIFIED event; its kubelet script is untouched.
    ///
    /// # Errors
    /// `NotFound`; `Conflict` when the resourceVersion differs.
    pub fn annotate_pod(
        &mut self,
        namespace: &str,
        name: &str,
        resource_version: Option<&str>,
        changes: &BTreeMap<String, Option<String>>,
    ) -> Result<Pod, ModelError> {
        let preconditions = Preconditions {
            uid: None,
            resource_version: resource_version.map(str::to_owned),
        };
        let mut pod: Pod = self.fenced(namespace, name, &preconditions)?;
        let annotations = pod.metadata.annotations.get_or_insert_with(BTreeMap::new);
        for (k, v) in changes {
            match v {
                Some(v) => annotations.insert(k.clone(), v.clone()),
                None => annotations.remove(k),
            };
        }
        Ok(self.store_modified(&key(namespace, name), pod))
    }
}

#[cfg(test)]
mod tests {
    //! The guarded annotation change: applied with the stored version, refused with another.

    use super::*;
    use crate::model::test_support::{IMAGE, NS, model, pod_named};

    /// The stored version applies the change and bumps the version; a stale one is `Conflict`
    /// and changes nothing; a missing pod is `NotFound`.
    #[test]
    fn annotate_is_guarded_by_the_resource_version() {
        let mut m = model();
        let (ns, name) = (NS.to_owned(), "p".to_owned());
        let before = m
            .create_pod(NS, pod_named("p", IMAGE, None))
            .expect("created");
        let rv = before.metadata.resource_version.clone().expect("rv");
        let changes = BTreeMap::from([("a/b".to_owned(), Some("1".to_owned()))]);
        let after = m
            .annotate_pod(&ns, &name, Some(&rv), &changes)
            .expect("applied");
        assert_eq!(
            after
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("a/b"))
                .map(String::as_str),
            Some("1")
        );
        assert_ne!(
            after.metadata.resource_version,
            before.metadata.resource_version
        );
        let stale = m.annotate_pod(&ns, &name, Some(&rv), &changes);
        assert!(
            matches!(stale, Err(ModelError::Conflict { .. })),
            "{stale:?}"
        );
        let remove = BTreeMap::from([("a/b".to_owned(), None)]);
        let removed = m
            .annotate_pod(&ns, &name, None, &remove)
            .expect("unguarded");
        assert!(
            removed
                .metadata
                .annotations
                .as_ref()
                .is_none_or(|a| !a.contains_key("a/b"))
        );
        assert!(matches!(
            m.annotate_pod(&ns, "missing", None, &changes),
            Err(ModelError::NotFound { .. })
        ));
    }
}
