//! The fence: `{uid, resourceVersion}` of one observation of a pod, carried by every pod delete
//! (deploy.md § Semantics relied on, compare-and-delete).
//!
//! Pure data. Only verification (`crate::verify`) builds one, from the observation it proved
//! ours: there is no public constructor and no public field, so no caller can substitute a
//! fresher (or invented) fence for the one that authorised a delete.

/// The `{uid, resourceVersion}` of one observation. Built only by verification, so a delete can
/// only ever carry the fence of the observation that authorised it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Fence {
    uid: String,
    resource_version: String,
}

impl Fence {
    /// The fence of one verified observation (verification only).
    pub(crate) fn new(uid: String, resource_version: String) -> Fence {
        Fence {
            uid,
            resource_version,
        }
    }

    /// `metadata.uid` of the observed object.
    pub fn uid(&self) -> &str {
        &self.uid
    }

    /// `metadata.resourceVersion` of the observed object.
    pub fn resource_version(&self) -> &str {
        &self.resource_version
    }
}
