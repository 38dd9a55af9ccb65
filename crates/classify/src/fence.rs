//! The fence: `{uid, resourceVersion}` of one observation of a pod, carried by every pod delete
//! (deploy.md § Semantics relied on, compare-and-delete).

/// The `{uid, resourceVersion}` of one observation. Only verification builds one from an observed
/// pod, so a delete can only ever carry the fence of the observation that authorised it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Fence {
    /// `metadata.uid` of the observed object.
    pub uid: String,
    /// `metadata.resourceVersion` of the observed object.
    pub resource_version: String,
}
