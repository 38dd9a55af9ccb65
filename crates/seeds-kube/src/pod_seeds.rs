//! `PodSeeds`: seed discovery through the apiserver (seeds.md § Construction and options,
//! § Resolving, § Watch mode), in list mode (a paginated quorum LIST per resolve) or watch mode
//! (one LIST, then a WATCH keeping a view current so a resolve costs no request).
//!
//! I/O shell: it only performs requests (through the crate's one exchange layer,
//! `crate::exchange`, whose quoting rule its errors follow) and feeds the response bytes to
//! `apiary-seeds`, which decodes and decides. Each resolve runs in a `seeds_resolve` tracing span
//! carrying the namespace, the selector and the mode. It must never turn "could not look" into an empty list, never answer
//! from a stale view, and never print the client.

mod list;
#[cfg(feature = "tellus")]
mod tellus;
mod watch;

use std::fmt;
use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};

use apiary_seeds::{
    Extraction, Extractor, Filter, InvalidPods, NoAddresses, Pods, Report, WarnOnce,
};
use kube::Client;
use tracing::Instrument;

use crate::exchange;
use watch::{View, WatchTask};

/// How `resolve` reads the pods.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SeedsMode {
    /// A paginated quorum LIST per resolve: no cache, no retry, no timer.
    #[default]
    List,
    /// One LIST, then a background WATCH keeping a view current (seeds.md § Watch mode).
    Watch,
}

/// Options outside [`Pods`], so the serde form of `Pods` stays exactly as specified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeedsOptions {
    /// The `limit` of each LIST page.
    pub page_size: NonZeroU32,
    /// List or watch mode.
    pub mode: SeedsMode,
}

impl Default for SeedsOptions {
    /// Pages of 500, list mode.
    fn default() -> Self {
        SeedsOptions {
            page_size: NonZeroU32::new(500).unwrap_or(NonZeroU32::MIN),
            mode: SeedsMode::List,
        }
    }
}

/// Why a resolve (or a constructor) failed. The three cases are kept apart because a caller
/// acts differently on each: fix the configuration, retry the apiserver, or wait for peers.
#[derive(Debug, thiserror::Error)]
pub enum SeedsError {
    /// The configuration is invalid; only constructors return it, never `resolve`.
    #[error(transparent)]
    Config(#[from] InvalidPods),
    /// The apiserver refused (401, 403, 400 for a bad selector, 5xx, the third `410 Expired`),
    /// could not be reached or timed out, the body did not decode, or (in `new`) no client
    /// configuration exists. Always surfaced: "could not look" never reads as "no peers".
    ///
    /// Its message is the apiserver's own (`the apiserver answered 403 Forbidden: pods is
    /// forbidden: …`), by the quoting rule of the crate's exchange layer: never the `Debug` form
    /// kube's own `Display` appends, and never a body that is not a `Status`.
    #[error("{}", exchange::describe_kube_error(.0))]
    Client(#[from] kube::Error),
    /// The listing succeeded but no pod contributed an address; carries the report.
    #[error(transparent)]
    NoAddresses(Box<NoAddresses>),
}

impl SeedsError {
    /// The HTTP status of an apiserver refusal (`403` for missing RBAC, …), if this is one.
    pub fn status_code(&self) -> Option<u16> {
        match self {
            SeedsError::Client(kube::Error::Api(status)) => Some(status.code),
            _ => None,
        }
    }
}

/// The addresses of one resolve together with its report (seeds.md § The zero-address
/// diagnostic), as the CLI prints them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeedsResolution {
    /// Sorted ascending, unique, at least one.
    pub addresses: Vec<SocketAddr>,
    /// Pods matched and skipped by reason.
    pub report: Report,
}

/// Seed discovery from the pods matching a label selector.
pub struct PodSeeds {
    pods: Pods,
    namespace: String,
    client: Client,
    options: SeedsOptions,
    filter: Filter,
    warn_once: WarnOnce,
    watch: Option<Watching>,
}

/// The watch-mode state: the shared view and the task keeping it current.
struct Watching {
    view: Arc<Mutex<View>>,
    _task: WatchTask,
}

impl fmt::Debug for PodSeeds {
    /// Everything but the client (which may carry credentials).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PodSeeds")
            .field("pods", &self.pods)
            .field("namespace", &self.namespace)
            .field("options", &self.options)
            .field("filter", &self.filter)
            .field("watching", &self.watch.is_some())
            .finish_non_exhaustive()
    }
}

impl PodSeeds {
    /// Validates `pods`, then builds a client from the inferred configuration (`$KUBECONFIG` or
    /// `~/.kube/config` when present, otherwise the in-cluster service account).
    ///
    /// # Errors
    /// [`SeedsError::Config`] for an invalid configuration (checked before any client exists);
    /// [`SeedsError::Client`] when no client configuration can be inferred.
    pub async fn new(pods: Pods) -> Result<Self, SeedsError> {
        pods.validate()?;
        let client = Client::try_default().await?;
        Self::with_client(pods, client)
    }

    /// Validates `pods` and binds to its namespace, or the client's default namespace.
    ///
    /// # Errors
    /// [`SeedsError::Config`] for an invalid configuration; nothing is sent.
    pub fn with_client(pods: Pods, client: Client) -> Result<Self, SeedsError> {
        pods.validate()?;
        let namespace = pods
            .namespace
            .clone()
            .unwrap_or_else(|| client.default_namespace().to_owned());
        Ok(PodSeeds {
            pods,
            namespace,
            client,
            options: SeedsOptions::default(),
            filter: Filter::default(),
            warn_once: WarnOnce::new(),
            watch: None,
        })
    }

    /// Sets the options. Nothing starts before the first resolve.
    #[must_use]
    pub fn with_options(mut self, options: SeedsOptions) -> Self {
        self.options = options;
        self
    }

    /// Narrows which pods count (seeds.md § Address family and running containers): an IP
    /// family to take each pod's address from, and whether the serving container must be
    /// running. Kept apart from [`SeedsOptions`] (which is about how pods are read) so that both
    /// keep their literal forms; the default narrows nothing.
    #[must_use]
    pub fn with_filter(mut self, filter: Filter) -> Self {
        self.filter = filter;
        self
    }

    /// The filter set by [`PodSeeds::with_filter`].
    pub fn filter(&self) -> Filter {
        self.filter
    }

    /// The namespace that is listed.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The configuration.
    pub fn pods(&self) -> &Pods {
        &self.pods
    }

    /// In watch mode, whether the view is currently synced (resolves cost no request).
    pub fn watch_synced(&self) -> bool {
        self.watch
            .as_ref()
            .is_some_and(|watching| watch::lock(&watching.view).synced)
    }

    /// Resolves the seed addresses: sorted, unique, one per counted pod.
    ///
    /// # Errors
    /// [`SeedsError::Client`] when the apiserver refused or could not be reached;
    /// [`SeedsError::NoAddresses`] when no pod contributed an address.
    pub async fn resolve(&mut self) -> Result<Vec<SocketAddr>, SeedsError> {
        Ok(self.resolve_detailed().await?.addresses)
    }

    /// Resolves the seed addresses together with the report of what was skipped.
    ///
    /// # Errors
    /// As [`PodSeeds::resolve`]; `NoAddresses` carries the report.
    pub async fn resolve_detailed(&mut self) -> Result<SeedsResolution, SeedsError> {
        // One span per resolve, so `-v` output filters per operation; events inside it do not
        // repeat the namespace or the selector.
        let span = tracing::info_span!(
            "seeds_resolve",
            namespace = %self.namespace,
            selector = %self.pods.label_selector,
            mode = ?self.options.mode,
        );
        self.resolve_in_span().instrument(span).await
    }

    async fn resolve_in_span(&mut self) -> Result<SeedsResolution, SeedsError> {
        let (extraction, pages) = match self.options.mode {
            SeedsMode::List => self.list_extraction().await?,
            SeedsMode::Watch => self.watch_extraction().await?,
        };
        self.warn_once.log(&extraction, pages);
        let extraction = extraction
            .into_result(&self.pods, &self.namespace)
            .map_err(SeedsError::NoAddresses)?;
        Ok(SeedsResolution {
            addresses: extraction.addresses,
            report: extraction.report,
        })
    }

    fn lister(&self) -> list::Lister<'_> {
        list::Lister {
            client: &self.client,
            namespace: &self.namespace,
            selector: &self.pods.label_selector,
            page_size: self.options.page_size,
        }
    }

    /// List mode: every page is reduced as it arrives; a restart discards the accumulation.
    async fn list_extraction(&self) -> Result<(Extraction, usize), SeedsError> {
        let port = &self.pods.port;
        let filter = self.filter;
        let snapshot = self
            .lister()
            .snapshot(
                || Extractor::with_filter(port, filter),
                |extractor, page| extractor.add_all(&page.items),
            )
            .await?;
        Ok((snapshot.collected.finish(), snapshot.pages))
    }

    /// Watch mode: answer from the view while it is synced; otherwise list (surfacing errors),
    /// reseed the view from that list, and make sure the task keeps it current.
    async fn watch_extraction(&mut self) -> Result<(Extraction, usize), SeedsError> {
        if let Some(watching) = &self.watch {
            let view = watch::lock(&watching.view);
            if view.synced {
                return Ok((
                    apiary_seeds::extract_with(view.pods.values(), &self.pods.port, self.filter),
                    0,
                ));
            }
        }
        let snapshot = self
            .lister()
            .snapshot(watch::Records::default, watch::Records::add_page)
            .await?;
        let extraction =
            apiary_seeds::extract_with(snapshot.collected.0.values(), &self.pods.port, self.filter);
        let resource_version = snapshot.resource_version.unwrap_or_default();
        match &self.watch {
            Some(watching) => {
                watch::lock(&watching.view).reseed(snapshot.collected, resource_version)
            }
            None => {
                let view = Arc::new(Mutex::new(View::seeded(
                    snapshot.collected,
                    resource_version,
                )));
                let task = WatchTask::spawn(
                    watch::Watcher {
                        client: self.client.clone(),
                        namespace: self.namespace.clone(),
                        selector: self.pods.label_selector.clone(),
                        page_size: self.options.page_size,
                    },
                    Arc::clone(&view),
                );
                self.watch = Some(Watching { view, _task: task });
            }
        }
        Ok((extraction, snapshot.pages))
    }
}
