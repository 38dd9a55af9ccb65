//! The fake substrate's scripted answers: [`Step`] (what the next call of one request kind
//! answers) and the hook closures a test runs on the model. Plain data, test-only; runs nothing
//! itself and holds no state (the queues live in [`crate::fake::FakeCluster`]).

use apiary_classify::failure::Operation;
use apiary_cluster_model::ClusterModel;

use apiary_classify::failure::RequestFailure;

use crate::substrate::{CreateAnswer, DeleteAnswer, NamespaceFailure};

/// A closure run on the model by a [`Step::Before`] or a poll hook.
pub type ModelHook = Box<dyn FnOnce(&mut ClusterModel) + Send>;

/// A closure run on the model after every poll, with the poll's number (1-based).
pub type PollHook = Box<dyn FnMut(u32, &mut ClusterModel) + Send>;

/// A scripted answer for the next call of one request kind (see the module docs).
pub enum Step {
    /// Behave normally (use it to let earlier calls through and target a later one).
    Pass,
    /// Answer this error; the model is untouched.
    Fail(RequestFailure),
    /// Perform the call on the model, then answer this error (the request landed, the answer
    /// was lost).
    LandThenFail(RequestFailure),
    /// Answer this create outcome without touching the model (`create_pod`/`create_secret`).
    Create(CreateAnswer),
    /// Answer this delete outcome without touching the model (`delete_pod`/`delete_secret`).
    Delete(DeleteAnswer),
    /// Run the closure on the model, then behave normally.
    Before(ModelHook),
    /// Fail `ensure_namespace` with this error (only for [`Operation::EnsureNamespace`]).
    Namespace(NamespaceFailure),
}

impl std::fmt::Debug for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Pass => f.write_str("Pass"),
            Self::Fail(e) => f.debug_tuple("Fail").field(e).finish(),
            Self::LandThenFail(e) => f.debug_tuple("LandThenFail").field(e).finish(),
            Self::Create(o) => f.debug_tuple("Create").field(o).finish(),
            Self::Delete(o) => f.debug_tuple("Delete").field(o).finish(),
            Self::Before(_) => f.write_str("Before(..)"),
            Self::Namespace(e) => f.debug_tuple("Namespace").field(e).finish(),
        }
    }
}

impl Step {
    /// Whether this step can answer a call of `op`.
    pub(crate) fn fits(&self, op: Operation) -> bool {
        match self {
            Self::Pass | Self::Fail(_) | Self::LandThenFail(_) | Self::Before(_) => true,
            Self::Create(_) => matches!(
                op,
                Operation::CreatePod
                    | Operation::CreateSecret
                    | Operation::CreateNetworkPolicy
                    | Operation::CreateWorkspaceClaim
            ),
            Self::Delete(_) => matches!(
                op,
                Operation::DeletePod
                    | Operation::DeleteSecret
                    | Operation::DeleteNetworkPolicy
                    | Operation::DeleteWorkspaceClaim
            ),
            Self::Namespace(_) => op == Operation::EnsureNamespace,
        }
    }
}
