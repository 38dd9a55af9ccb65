//! The verbs every stored kind shares, implemented once: create (the apiserver's checks before
//! storage, stamping, the ADDED event), insert (the test hook that keeps what an object
//! carries), get, list, the precondition check of a delete, and removal (the DELETED event).
//! What differs between kinds is [`Stored`]; which store holds a kind is [`Held`].
//!
//! Layer: part of the pure model. It performs no I/O and reads no clock (stamps use the model
//! clock).

use k8s_openapi::api::core::v1::{Namespace, Node, Pod, Secret, ServiceAccount};

use super::ClusterModel;
use super::list::{self, ListOptions, ListPage, Snapshot};
use super::store::{self, Key, Preconditions, Store, Stored, key};
use super::watch::EventType;
use crate::error::{Kind, ModelError};
use crate::selector::HasFields;

/// A kind with a store in the model.
pub(super) trait Held: Stored {
    /// Whether objects of the kind live in a namespace.
    const NAMESPACED: bool;
    /// The kind's store.
    fn store(model: &ClusterModel) -> &Store<Self>;
    /// The kind's store, to change.
    fn store_mut(model: &mut ClusterModel) -> &mut Store<Self>;
}

/// `Held` for a kind: whether it is namespaced, and the path of its store in the model.
macro_rules! held {
    ($kind:ty, namespaced: $namespaced:expr, $($store:ident).+) => {
        impl Held for $kind {
            const NAMESPACED: bool = $namespaced;
            fn store(model: &ClusterModel) -> &Store<Self> {
                &model.$($store).+
            }
            fn store_mut(model: &mut ClusterModel) -> &mut Store<Self> {
                &mut model.$($store).+
            }
        }
    };
}

held!(Namespace, namespaced: false, namespaces);
held!(Pod, namespaced: true, pods);
held!(Secret, namespaced: true, secrets);
held!(ServiceAccount, namespaced: true, accounts.stored);
held!(Node, namespaced: false, nodes);

/// The key of a namespaced object, or of a cluster-scoped one (empty namespace).
fn key_of<T: Held>(namespace: &str, name: &str) -> Key {
    key(if T::NAMESPACED { namespace } else { "" }, name)
}

impl ClusterModel {
    /// Create `object` in `namespace` (`None` for a cluster-scoped kind), as the apiserver does:
    /// the object must not name another namespace, must have a name, its namespace must exist,
    /// `admit` must pass (admission runs before storage, so it is asked even under a taken
    /// name), and the name must be free. It is then stamped, shaped ([`Stored::shape_created`]),
    /// stored and logged as ADDED.
    pub(super) fn create_object<T: Held>(
        &mut self,
        namespace: Option<&str>,
        mut object: T,
        admit: impl FnOnce(&Self, &T) -> Result<(), ModelError>,
    ) -> Result<T, ModelError> {
        if let Some(namespace) = namespace {
            store::check_namespace(object.meta(), namespace)?;
        }
        let name = store::required_name(<T as HasFields>::KIND, object.meta())?;
        if let Some(namespace) = namespace {
            self.require_namespace(namespace)?;
        }
        admit(self, &object)?;
        let key = key_of::<T>(namespace.unwrap_or(""), &name);
        if T::store(self).contains(&key) {
            return Err(ModelError::AlreadyExists {
                kind: <T as HasFields>::KIND,
                name,
            });
        }
        let rv = self.stamp_new(object.meta_mut(), namespace);
        object.shape_created();
        T::store_mut(self).put(key, object.clone());
        self.record(EventType::Added, rv, &object);
        Ok(object)
    }

    /// Insert `object` directly (a test hook): it needs a name and a namespace, which is created
    /// when missing; it keeps its uid, creationTimestamp and a resourceVersion above the counter
    /// (see [`ClusterModel::insert_pod`]), is shaped ([`Stored::shape_inserted`]), stored and
    /// logged as ADDED.
    pub(super) fn insert_object<T: Held>(&mut self, mut object: T) -> Result<T, ModelError> {
        let name = store::required_name(<T as HasFields>::KIND, object.meta())?;
        let namespace = store::required_namespace(<T as HasFields>::KIND, &name, object.meta())?;
        let key = key(&namespace, &name);
        if T::store(self).contains(&key) {
            return Err(ModelError::AlreadyExists {
                kind: <T as HasFields>::KIND,
                name,
            });
        }
        self.ensure_namespace(&namespace);
        let rv = self.stamp_insert(object.meta_mut());
        object.shape_inserted();
        T::store_mut(self).put(key, object.clone());
        self.record(EventType::Added, rv, &object);
        Ok(object)
    }

    /// Read an object (`namespace` is ignored for a cluster-scoped kind).
    ///
    /// # Errors
    /// `NotFound` when it does not exist.
    pub(super) fn get_object<T: Held>(&self, namespace: &str, name: &str) -> Result<T, ModelError> {
        T::store(self)
            .get(&key_of::<T>(namespace, name))
            .cloned()
            .ok_or_else(|| ModelError::NotFound {
                kind: <T as HasFields>::KIND,
                name: name.to_owned(),
            })
    }

    /// List objects in `namespace` (`None`: all namespaces; always all for a cluster-scoped
    /// kind).
    ///
    /// # Errors
    /// `BadRequest` for a malformed selector or continue token; `Expired` for a compacted token.
    pub(super) fn list_objects<T: Held>(
        &self,
        namespace: Option<&str>,
        options: &ListOptions,
    ) -> Result<ListPage<T>, ModelError> {
        let snapshot = Snapshot {
            counter: self.rv,
            horizon: self.events.horizon(),
        };
        list::page(T::store(self).in_namespace(namespace), options, snapshot)
    }

    /// The object a delete may go ahead on: it exists and `preconditions` hold (uid, then
    /// resourceVersion).
    ///
    /// # Errors
    /// `NotFound`; `Conflict` when a precondition fails.
    pub(super) fn fenced<T: Held>(
        &self,
        namespace: &str,
        name: &str,
        preconditions: &Preconditions,
    ) -> Result<T, ModelError> {
        let existing: T = self.get_object(namespace, name)?;
        preconditions.check(<T as HasFields>::KIND, name, existing.meta())?;
        Ok(existing)
    }

    /// Take the object under `key` out of the store: a new resourceVersion, a DELETED event
    /// carrying its last state. Pods go through [`ClusterModel::remove_pod_key`], which also
    /// stops their kubelet.
    pub(super) fn remove_object<T: Held>(&mut self, key: &Key) -> Option<T> {
        let mut object = T::store_mut(self).take(key)?;
        let rv = self.next_rv();
        object.meta_mut().resource_version = Some(rv.to_string());
        self.record(EventType::Deleted, rv, &object);
        Some(object)
    }

    /// `NotFound` (kind Namespace, `namespaces "X" not found`) unless `namespace` exists.
    pub(super) fn require_namespace(&self, namespace: &str) -> Result<(), ModelError> {
        if self.namespaces.contains(&key("", namespace)) {
            Ok(())
        } else {
            Err(ModelError::NotFound {
                kind: Kind::Namespace,
                name: namespace.to_owned(),
            })
        }
    }
}
