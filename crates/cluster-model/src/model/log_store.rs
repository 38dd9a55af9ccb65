//! The data of the simulated container logs: the lines a script wrote, the query of one read and
//! its answer, and the per-pod-name store they are kept in. Plain data with no behaviour: the
//! reads themselves live in `logs`, which works on the `ClusterModel` that holds this store.
//!
//! Layer: part of the pure model. No I/O, no clock.

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;

/// One line a container wrote, with the instant the kubelet recorded it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogLine {
    /// When the line was written (model clock).
    pub at: Timestamp,
    /// The line, without its newline.
    pub text: String,
}

/// The query of one log read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogQuery {
    /// `container`; `None` = the pod's only container.
    pub container: Option<String>,
    /// `previous`: the last terminated instance instead of the current one.
    pub previous: bool,
    /// `sinceSeconds`: only lines written at most this long before now.
    pub since_seconds: Option<u64>,
    /// `sinceTime`: only lines written at or after this instant.
    pub since_time: Option<Timestamp>,
    /// `tailLines`: only the last this many lines.
    pub tail_lines: Option<u64>,
}

/// What one log read returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogRead {
    /// The lines, oldest first.
    pub lines: Vec<LogLine>,
    /// The container instance has ended: a follower gets nothing more.
    pub ended: bool,
    /// The pod's uid, so a follower can tell a recreated pod from the one it followed.
    pub uid: Option<String>,
}

pub(super) type LogKey = (String, String, String);

/// The scripted logs of every pod name.
#[derive(Clone, Debug, Default)]
pub(crate) struct Logs {
    pub(super) current: BTreeMap<LogKey, Vec<(Duration, String)>>,
    pub(super) previous: BTreeMap<LogKey, Vec<String>>,
}

pub(super) fn key(namespace: &str, pod: &str, container: &str) -> LogKey {
    (namespace.to_owned(), pod.to_owned(), container.to_owned())
}
