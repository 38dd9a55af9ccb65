//! The object store, generic over kinds: a [`Store`] of one kind keyed by namespace/name, the
//! [`Stored`] trait that says what differs between kinds (how a create or an insert shapes the
//! object, whether its changes are watched), delete [`Preconditions`], and the checks every
//! create makes before storage (name, namespace), worded as the apiserver words them.
//!
//! Layer: part of the pure model; plain data and pure checks. It assigns no resourceVersions or
//! uids and records no events (the model does both, once for every kind).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Namespace, NamespaceStatus, Node, Pod, PodStatus, Secret, ServiceAccount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::{ByteString, Metadata};

use super::object::Object;
use crate::error::{FieldCause, Kind, ModelError};
use crate::kubelet;
use crate::selector::HasFields;

/// Where an object is stored: (namespace, name); cluster-scoped kinds use an empty namespace.
pub(crate) type Key = (String, String);

/// The key of `name` in `namespace`.
pub(crate) fn key(namespace: &str, name: &str) -> Key {
    (namespace.to_owned(), name.to_owned())
}

/// The stored objects of one kind, ordered by namespace then name (the order of every list).
#[derive(Clone, Debug)]
pub(crate) struct Store<T> {
    objects: BTreeMap<Key, T>,
}

impl<T> Default for Store<T> {
    fn default() -> Self {
        Self {
            objects: BTreeMap::new(),
        }
    }
}

impl<T> Store<T> {
    /// The object under `key`.
    pub(crate) fn get(&self, key: &Key) -> Option<&T> {
        self.objects.get(key)
    }

    /// Whether an object is stored under `key`.
    pub(crate) fn contains(&self, key: &Key) -> bool {
        self.objects.contains_key(key)
    }

    /// Store `object` under `key`, replacing what was there.
    pub(crate) fn put(&mut self, key: Key, object: T) {
        self.objects.insert(key, object);
    }

    /// Take the object under `key` out of the store.
    pub(crate) fn take(&mut self, key: &Key) -> Option<T> {
        self.objects.remove(key)
    }

    /// Every stored key, in order.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &Key> {
        self.objects.keys()
    }

    /// The objects in `namespace` (`None`: all), in order.
    pub(crate) fn in_namespace<'a>(
        &'a self,
        namespace: Option<&'a str>,
    ) -> impl Iterator<Item = (&'a Key, &'a T)> + 'a {
        self.objects
            .iter()
            .filter(move |(k, _)| namespace.is_none_or(|ns| k.0 == ns))
    }

    /// The keys in `namespace`, in order.
    pub(crate) fn keys_in(&self, namespace: &str) -> Vec<Key> {
        self.in_namespace(Some(namespace))
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Drop every object in `namespace` without a trace (for kinds nobody watches).
    pub(crate) fn forget_namespace(&mut self, namespace: &str) {
        self.objects.retain(|(ns, _), _| ns != namespace);
    }
}

/// What differs between the stored kinds. Everything else — the create checks, stamping, the
/// resourceVersion of every change, the event log, get, list and delete — is one implementation
/// in the model for all of them.
/// The metadata accessors come from k8s-openapi's own [`Metadata`] trait, which every kind
/// implements.
pub(crate) trait Stored: HasFields + Clone + Metadata<Ty = ObjectMeta> {
    /// The object's metadata.
    fn meta(&self) -> &ObjectMeta {
        self.metadata()
    }
    /// The object's metadata, to stamp.
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        self.metadata_mut()
    }
    /// The object as a watch event carries it; `None` for kinds the model keeps no events for.
    fn to_object(&self) -> Option<Object>;
    /// Shape a freshly stamped create as the apiserver stores it (defaults, status).
    fn shape_created(&mut self) {}
    /// Shape an inserted object (a test hook: it keeps what it carries).
    fn shape_inserted(&mut self) {}
}

impl Stored for Namespace {
    fn to_object(&self) -> Option<Object> {
        Some(Object::Namespace(self.clone()))
    }
    /// Status phase `Active` and the label `kubernetes.io/metadata.name`.
    fn shape_created(&mut self) {
        let name = self.metadata.name.clone().unwrap_or_default();
        self.metadata
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert("kubernetes.io/metadata.name".to_owned(), name);
        self.status = Some(NamespaceStatus {
            phase: Some("Active".to_owned()),
            ..NamespaceStatus::default()
        });
    }
}

impl Stored for Pod {
    fn to_object(&self) -> Option<Object> {
        Some(Object::Pod(self.clone()))
    }
    /// `terminationGracePeriodSeconds` 30 and `restartPolicy` `Always` by default, unbound,
    /// status `{phase: Pending, qosClass}`.
    fn shape_created(&mut self) {
        let spec = self.spec.get_or_insert_with(Default::default);
        spec.termination_grace_period_seconds.get_or_insert(30);
        spec.restart_policy
            .get_or_insert_with(|| "Always".to_owned());
        spec.node_name = None;
        self.status = Some(PodStatus {
            phase: Some("Pending".to_owned()),
            qos_class: Some(kubelet::qos_class(self).to_owned()),
            ..PodStatus::default()
        });
    }
}

impl Stored for Secret {
    fn to_object(&self) -> Option<Object> {
        Some(Object::Secret(self.clone()))
    }
    fn shape_created(&mut self) {
        normalize_secret(self);
    }
    fn shape_inserted(&mut self) {
        normalize_secret(self);
    }
}

impl Stored for ServiceAccount {
    /// Nothing in apiary watches ServiceAccounts, so the model logs no events for them.
    fn to_object(&self) -> Option<Object> {
        None
    }
}

impl Stored for Node {
    /// Nothing in apiary watches nodes, so the model logs no events for them.
    fn to_object(&self) -> Option<Object> {
        None
    }
}

/// `stringData` merged into `data` and dropped; `type` defaults to `Opaque`.
fn normalize_secret(secret: &mut Secret) {
    if let Some(string_data) = secret.string_data.take() {
        let data = secret.data.get_or_insert_with(BTreeMap::new);
        for (k, v) in string_data {
            data.insert(k, ByteString(v.into_bytes()));
        }
    }
    secret.type_.get_or_insert_with(|| "Opaque".to_owned());
}

/// Delete preconditions (`DeleteOptions.preconditions`); `None` fields are not checked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Preconditions {
    /// The uid the object must have.
    pub uid: Option<String>,
    /// The resourceVersion the object must have.
    pub resource_version: Option<String>,
}

impl Preconditions {
    /// Check the preconditions against the stored object's metadata: uid first, then
    /// resourceVersion.
    pub(crate) fn check(
        &self,
        kind: Kind,
        name: &str,
        meta: &ObjectMeta,
    ) -> Result<(), ModelError> {
        if let Some(uid) = &self.uid {
            let have = meta.uid.as_deref().unwrap_or("");
            if uid != have {
                return Err(ModelError::Conflict {
                    kind,
                    name: name.to_owned(),
                    detail: format!(
                        "the UID in the precondition ({uid}) does not match the UID in record \
                         ({have}). The object might have been deleted and then recreated"
                    ),
                });
            }
        }
        if let Some(rv) = &self.resource_version {
            let have = meta.resource_version.as_deref().unwrap_or("");
            if rv != have {
                return Err(ModelError::Conflict {
                    kind,
                    name: name.to_owned(),
                    detail: format!(
                        "the ResourceVersion in the precondition ({rv}) does not match the \
                         ResourceVersion in record ({have}). The object might have been modified"
                    ),
                });
            }
        }
        Ok(())
    }
}

/// A namespaced create whose object names another namespace than the request.
pub(crate) fn check_namespace(meta: &ObjectMeta, namespace: &str) -> Result<(), ModelError> {
    match meta.namespace.as_deref() {
        Some(ns) if !ns.is_empty() && ns != namespace => Err(ModelError::BadRequest {
            message: "the namespace of the provided object does not match the namespace sent \
                      on the request"
                .to_owned(),
        }),
        _ => Ok(()),
    }
}

/// The object's name, which every create needs.
pub(crate) fn required_name(kind: Kind, meta: &ObjectMeta) -> Result<String, ModelError> {
    match meta.name.as_deref() {
        Some(name) if !name.is_empty() => Ok(name.to_owned()),
        _ => Err(ModelError::Invalid {
            kind,
            name: String::new(),
            causes: vec![FieldCause::required(
                "metadata.name",
                "name or generateName is required",
            )],
        }),
    }
}

/// The object's own namespace, which an insert (no request path) needs.
pub(crate) fn required_namespace(
    kind: Kind,
    name: &str,
    meta: &ObjectMeta,
) -> Result<String, ModelError> {
    match meta.namespace.as_deref() {
        Some(ns) if !ns.is_empty() => Ok(ns.to_owned()),
        _ => Err(ModelError::Invalid {
            kind,
            name: name.to_owned(),
            causes: vec![FieldCause::required("metadata.namespace", "")],
        }),
    }
}
