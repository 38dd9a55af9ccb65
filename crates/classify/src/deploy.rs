//! The deploy operation (deploy.md § The deploy operation) as a sans-IO state machine.
//!
//! The machine speaks the one vocabulary of every operation (`crate::request`): it is fed an
//! [`Answer`](crate::request::Answer) — the answer to the previous request, with a monotonic
//! reading `now` — and returns the next [`Request`](crate::request::Request) to perform, or the
//! end. The one drive loop of the shell executes requests against the cluster. The machine
//! performs no I/O, reads no clock and uses no randomness: the driver mints
//! the generation, builds the objects and reports back the Secret it created, which the machine
//! then holds in its phase until the pod create is settled. The deadline is anchored at the first
//! step and checked against each `now` (`crate::wait`).
//!
//! Safety properties the structure gives (and the property tests check over arbitrary event
//! sequences): a pod delete carries the fence of the verified observation that authorised it;
//! no pod delete after this call's own create (E2 instead, deploy.md § One create attempt per
//! call); an unverified pod is never mutated (E8 before anything is written); the lost-race path
//! has no pod-delete edge and drops only this attempt's own, unreferenced Secret.
//!
//! A second create in one call: an earlier requirement asked for "no second create in one call",
//! while deploy.md scenario R35 says that when this call's own pod vanishes after its create, the
//! loop may create again (only the Delete action is bounded, deploy.md § One create attempt per
//! call). The machine follows the spec: a further create happens only after this call's pod was
//! observed absent, never after a lost race and never through a delete of its own pod — which is
//! what the property test asserts instead of a blanket one-create bound.
//!
//! The machine's state and entry points are in `machine`, its spec in `spec`, and the phases are
//! split by path: the main loop and disappearance wait in `observe`, the create path (Secret, pod,
//! ServiceAccount wait, dropping this attempt's Secret) in `create`, the lost race and the failing
//! reads in `race`. Imports go one way: every path module uses `machine`, `spec`, `error` and the
//! one vocabulary of `crate::request`, and this parent only declares and re-exports.

mod create;
mod error;
mod machine;
mod observe;
mod race;
mod replace;
mod spec;
mod stability;

pub use error::{DeployError, Deployed, Left, ObjectKind, SecretFate};
pub use machine::DeployMachine;
pub use spec::{DEFAULT_DEADLINE, DEFAULT_POLL, DEFAULT_SERVICE_ACCOUNT, DeploySpec};
