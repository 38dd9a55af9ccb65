//! The pod log endpoint, `GET /api/v1/namespaces/<ns>/pods/<name>/log` (`container`,
//! `previous`, `sinceSeconds`, `sinceTime`, `tailLines`, `timestamps`, `follow`), answered from
//! the model's scripted container logs as `text/plain`, one line per line; refusals are the
//! model's `Status` bodies. With `follow=true` the body stays open and carries each new line as
//! the model clock reaches it, until the container ends, the pod goes (or is replaced), or
//! `Simulator::end_watches` / `Simulator::break_watches` ends every open stream (a clean end or
//! an aborted connection: what a client must survive to keep following).
//!
//! Layer: imperative shell around the model. It decides nothing about the lines (the model
//! does); it only encodes them and polls the model for more while following.

use std::sync::Arc;
use std::time::Duration;

use apiary_cluster_model::{LogLine, LogQuery, LogRead, ModelError};
use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use jiff::Timestamp;
use tokio::sync::{broadcast, mpsc};

use crate::response::{ChannelBody, SimBody, StreamBroken, error_response};
use crate::route::Query;
use crate::shared::{Shared, WatchEnd};
use crate::status::{ApiError, model_error};

/// How often (real time) a follower looks for new lines.
const FOLLOW_POLL: Duration = Duration::from_millis(20);

/// The query of a log request, or the apiserver's refusal of a malformed parameter.
fn log_query(query: &Query) -> Result<LogQuery, ApiError> {
    let number = |key: &str| -> Result<Option<u64>, ApiError> {
        query
            .non_empty(key)
            .map(|v| {
                v.parse::<u64>().map_err(|_| {
                    ApiError::bad_request(format!(
                        "{key}: Invalid value: {v:?}: must be an integer"
                    ))
                })
            })
            .transpose()
    };
    let since_time = query
        .non_empty("sinceTime")
        .map(|v| {
            v.parse::<Timestamp>().map_err(|_| {
                ApiError::bad_request(format!("sinceTime: Invalid value: {v:?}: not RFC 3339"))
            })
        })
        .transpose()?;
    Ok(LogQuery {
        container: query.non_empty("container").map(str::to_owned),
        previous: query.flag("previous"),
        since_seconds: number("sinceSeconds")?,
        since_time,
        tail_lines: number("tailLines")?,
    })
}

/// One line as the endpoint writes it.
fn encode(line: &LogLine, timestamps: bool) -> String {
    if timestamps {
        format!("{} {}\n", line.at, line.text)
    } else {
        format!("{}\n", line.text)
    }
}

fn text_response(body: SimBody) -> Response<SimBody> {
    let mut r = Response::new(body);
    *r.status_mut() = StatusCode::OK;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    r
}

fn read(
    shared: &Shared,
    namespace: &str,
    name: &str,
    query: &LogQuery,
) -> Result<LogRead, ModelError> {
    shared.model().read_pod_log(namespace, name, query)
}

/// Answers one log request.
pub(crate) fn serve(
    shared: &Arc<Shared>,
    namespace: &str,
    name: &str,
    query: &Query,
) -> Response<SimBody> {
    let log_query = match log_query(query) {
        Ok(q) => q,
        Err(e) => return error_response(&e),
    };
    let timestamps = query.flag("timestamps");
    let first = match read(shared, namespace, name, &log_query) {
        Ok(first) => first,
        Err(e) => return error_response(&model_error(&e)),
    };
    if !query.flag("follow") {
        let text: String = first.lines.iter().map(|l| encode(l, timestamps)).collect();
        return text_response(
            Full::new(Bytes::from(text))
                .map_err(|never: std::convert::Infallible| match never {})
                .boxed(),
        );
    }
    let (tx, rx) = mpsc::channel(64);
    let ends = shared.watch_ends.subscribe();
    let follower = Follower {
        shared: Arc::clone(shared),
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        query: log_query,
        timestamps,
    };
    tokio::spawn(follower.run(first, tx, ends));
    text_response(ChannelBody::new(rx).boxed())
}

struct Follower {
    shared: Arc<Shared>,
    namespace: String,
    name: String,
    query: LogQuery,
    timestamps: bool,
}

type Sender = mpsc::Sender<Result<Bytes, StreamBroken>>;

impl Follower {
    /// Sends `first`, then each later line once, until the container ends or the stream is told
    /// to end.
    async fn run(self, first: LogRead, tx: Sender, mut ends: broadcast::Receiver<WatchEnd>) {
        let uid = first.uid.clone();
        // Later reads drop `tailLines` and `sinceSeconds` (they chose the start) and start at
        // the last line sent; lines at that same instant already sent are skipped by count.
        let mut last: Option<Timestamp> = None;
        let mut sent_at_last = 0usize;
        let mut ended = first.ended;
        if !self
            .send(&tx, &first.lines, &mut last, &mut sent_at_last)
            .await
        {
            return;
        }
        loop {
            if ended {
                return;
            }
            tokio::select! {
                end = ends.recv() => {
                    if matches!(end, Ok(WatchEnd::Break)) {
                        let _ = tx.send(Err(StreamBroken)).await;
                    }
                    return;
                }
                () = tx.closed() => return,
                () = tokio::time::sleep(FOLLOW_POLL) => {}
            }
            let query = LogQuery {
                tail_lines: None,
                since_seconds: None,
                since_time: last.or(self.query.since_time),
                ..self.query.clone()
            };
            let Ok(next) = read(&self.shared, &self.namespace, &self.name, &query) else {
                // The pod went (or can no longer be read): the stream ends, as the kubelet's does.
                return;
            };
            if next.uid != uid {
                return;
            }
            ended = next.ended;
            let fresh: Vec<LogLine> = match last {
                None => next.lines,
                Some(at) => {
                    let mut skip = sent_at_last;
                    next.lines
                        .into_iter()
                        .filter(|l| {
                            if l.at == at && skip > 0 {
                                skip -= 1;
                                false
                            } else {
                                true
                            }
                        })
                        .collect()
                }
            };
            if !self.send(&tx, &fresh, &mut last, &mut sent_at_last).await {
                return;
            }
        }
    }

    /// Sends `lines`; `false` when the client has gone.
    async fn send(
        &self,
        tx: &Sender,
        lines: &[LogLine],
        last: &mut Option<Timestamp>,
        sent_at_last: &mut usize,
    ) -> bool {
        for line in lines {
            let chunk = Bytes::from(encode(line, self.timestamps));
            if tx.send(Ok(chunk)).await.is_err() {
                return false;
            }
            if *last == Some(line.at) {
                *sent_at_last += 1;
            } else {
                *last = Some(line.at);
                *sent_at_last = 1;
            }
        }
        true
    }
}
