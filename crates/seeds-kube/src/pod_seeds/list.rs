//! The paginated quorum LIST (seeds.md § The request): `limit`/`continue` pagination, no
//! `resourceVersion`, restart on a `410 Expired` continue token (at most three starts), a 30 s
//! bound on every request, and non-2xx answers mapped to `kube::Error::Api` by the crate's exchange layer.
//!
//! I/O shell: it sends requests and hands each decoded page to a collector; it never interprets
//! pods, and never mixes pages of two snapshots.

use std::num::NonZeroU32;
use std::time::Duration;

use apiary_seeds::LeanPodList;
use bytes::Bytes;
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::ListParams;
use kube::core::{Request, Status};

use crate::exchange::{self, Miss};

/// Every request other than a watch stream must finish within this (seeds.md § The request).
pub(crate) const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// How many times one listing may start (the third `410 Expired` is an error).
const MAX_STARTS: usize = 3;

/// What a LIST needs.
pub(crate) struct Lister<'a> {
    pub(crate) client: &'a Client,
    pub(crate) namespace: &'a str,
    pub(crate) selector: &'a str,
    pub(crate) page_size: NonZeroU32,
}

/// One consistent listing, reduced by a collector.
pub(crate) struct Snapshot<C> {
    /// What the collector made of the pages.
    pub(crate) collected: C,
    /// The list's `resourceVersion` (of its last page).
    pub(crate) resource_version: Option<String>,
    /// Pages read in the successful start.
    pub(crate) pages: usize,
}

impl Lister<'_> {
    /// Lists every page, feeding each to `add` as it arrives. A `410 Expired` on a continue
    /// request discards the collector and starts over from the first page.
    pub(crate) async fn snapshot<C>(
        &self,
        new: impl Fn() -> C,
        mut add: impl FnMut(&mut C, LeanPodList),
    ) -> Result<Snapshot<C>, kube::Error> {
        let mut starts = 0;
        'start: loop {
            starts += 1;
            let mut collected = new();
            let mut continue_token: Option<String> = None;
            let mut pages = 0;
            loop {
                let request = self.page_request(continue_token.as_deref())?;
                let bytes = match send_for_bytes(self.client, request).await {
                    Ok(bytes) => bytes,
                    Err(kube::Error::Api(status))
                        if continue_token.is_some()
                            && is_expired(&status)
                            && starts < MAX_STARTS =>
                    {
                        tracing::debug!(
                            starts,
                            "continue token expired; listing again from the first page"
                        );
                        continue 'start;
                    }
                    Err(error) => return Err(error),
                };
                let page = apiary_seeds::decode_pod_list(&bytes)
                    .map_err(|error| kube::Error::SerdeError(error.0))?;
                pages += 1;
                continue_token = page.continue_token.clone();
                let resource_version = page.resource_version.clone();
                add(&mut collected, page);
                if continue_token.is_none() {
                    return Ok(Snapshot {
                        collected,
                        resource_version,
                        pages,
                    });
                }
            }
        }
    }

    fn page_request(
        &self,
        continue_token: Option<&str>,
    ) -> Result<http::Request<Vec<u8>>, kube::Error> {
        let mut params = ListParams::default()
            .labels(self.selector)
            .limit(self.page_size.get());
        if let Some(token) = continue_token {
            params = params.continue_token(token);
        }
        pods_request(self.namespace)
            .list(&params)
            .map_err(kube::Error::BuildRequest)
    }
}

/// The request builder for the pods of a namespace.
pub(crate) fn pods_request(namespace: &str) -> Request {
    use kube::Resource;
    Request::new(Pod::url_path(&(), Some(namespace)))
}

/// A `410` whose reason is `Expired`: the continue token outlived the server's history.
fn is_expired(status: &Status) -> bool {
    status.code == 410 && status.reason == "Expired"
}

/// Sends a request bounded by [`REQUEST_TIMEOUT`] through the crate's exchange layer and
/// returns the body of a 2xx answer.
///
/// # Errors
/// `Api` with the refusal's `Status` fields (a body that is no `Status` is never quoted: see
/// `crate::exchange`); `Service` for a timeout; the client's own error when the apiserver cannot
/// be reached.
pub(crate) async fn send_for_bytes(
    client: &Client,
    request: http::Request<Vec<u8>>,
) -> Result<Bytes, kube::Error> {
    exchange::fetch(client, &request, REQUEST_TIMEOUT)
        .await
        .map(|reply| reply.body)
        .map_err(Miss::into_kube_error)
}
