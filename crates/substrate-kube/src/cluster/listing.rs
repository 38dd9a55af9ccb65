//! `Cluster`'s namespace-wide listings for `list` (deploy.md § list): paginated quorum LISTs
//! of pods and Secrets (`limit`/`continue`, no `resourceVersion`), each page one exchange of the
//! crate's exchange layer, every page of one snapshot; a `410 Expired` continue token starts the
//! listing over (at most three starts, as seed discovery's listing does).
//!
//! Layer: the imperative shell. It sends and decodes; it decides nothing about the objects, and
//! never puts a body (Secret values) into an error or a log line: only positions of decode
//! failures are reported.

use std::num::NonZeroU32;

use apiary_classify::failure::RequestFailure;
use apiary_substrate::Listed;
use chrono::{DateTime, Utc};
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::core::params::ListParams;
use kube::core::{ObjectList, Request};
use serde::de::DeserializeOwned;

use super::mapping::{self, Failure};
use super::{Call, Cluster, Operation, decode};

/// How many times one listing may start (the third `410 Expired` is an error).
const MAX_STARTS: usize = 3;

/// The reason of a continue token that outlived the server's history.
const REASON_EXPIRED: &str = "Expired";

/// Every page of one listing, and the server clock of its first page.
struct Pages<T> {
    items: Vec<T>,
    server_now: Option<DateTime<Utc>>,
}

impl Cluster {
    /// List every object under `path` matching `selector`, `page` objects per request.
    async fn list_pages<T: DeserializeOwned + Clone>(
        &self,
        call: &Call,
        path: String,
        selector: &str,
        page: NonZeroU32,
        what: &str,
    ) -> Result<Pages<T>, RequestFailure> {
        let mut starts = 0;
        'start: loop {
            starts += 1;
            let mut pages = Pages {
                items: Vec::new(),
                server_now: None,
            };
            let mut token: Option<String> = None;
            loop {
                let mut params = ListParams::default().labels(selector).limit(page.get());
                if let Some(token) = &token {
                    params = params.continue_token(token);
                }
                let request = Request::new(path.clone()).list(&params);
                let reply = match self.exchange(call, request).await.result {
                    Ok(reply) => reply,
                    Err(failure) if token.is_some() && expired(&failure) && starts < MAX_STARTS => {
                        tracing::debug!(starts, "continue token expired; listing again");
                        continue 'start;
                    }
                    Err(failure) => return Err(call.error(failure)),
                };
                if pages.server_now.is_none() {
                    pages.server_now = reply
                        .headers
                        .get(http::header::DATE)
                        .and_then(|value| value.to_str().ok())
                        .and_then(mapping::parse_imf_fixdate);
                }
                let list: ObjectList<T> =
                    decode(&reply.body, what).map_err(|failure| call.error(failure))?;
                pages.items.extend(list.items);
                token = list.metadata.continue_.filter(|t| !t.is_empty());
                if token.is_none() {
                    return Ok(pages);
                }
            }
        }
    }
}

fn expired(failure: &Failure) -> bool {
    failure.refusal().is_some_and(|r| r.code == 410) && failure.has_reason(REASON_EXPIRED)
}

impl Cluster {
    /// [`Substrate::list_all_pods`](apiary_substrate::Substrate::list_all_pods): every page.
    pub(super) async fn all_pods(
        &self,
        selector: &str,
        page: NonZeroU32,
    ) -> Result<Listed<Pod>, RequestFailure> {
        let call = Call::new(Operation::ListPods, self.list_object(selector));
        let pages = self
            .list_pages(&call, self.pods_path(), selector, page, "a pod list")
            .await?;
        Ok(Listed {
            items: pages.items,
            server_now: pages.server_now,
        })
    }

    /// [`Substrate::list_all_secrets`](apiary_substrate::Substrate::list_all_secrets): every
    /// page.
    pub(super) async fn all_secrets(
        &self,
        selector: &str,
        page: NonZeroU32,
    ) -> Result<Vec<Secret>, RequestFailure> {
        let call = Call::new(Operation::ListSecrets, self.list_object(selector));
        let pages = self
            .list_pages::<Secret>(&call, self.secrets_path(), selector, page, "a secret list")
            .await?;
        Ok(pages.items)
    }
}
