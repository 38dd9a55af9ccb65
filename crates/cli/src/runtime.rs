//! The async runtime every cluster-facing command runs on. Shell layer: it only starts a Tokio
//! runtime and drives one command's future to its result; it decides nothing.

use crate::outcome::{CommandResult, Failure};

/// Run `future` on a fresh multi-threaded Tokio runtime.
pub(crate) fn block_on<F: std::future::Future<Output = CommandResult>>(future: F) -> CommandResult {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::failed(format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(future)
}
