//! The fake kubelet's loop: registers the Node, then serves commands, finished and due
//! [`Work`] (up to a bound of pods at a time, one piece per pod) and the watch feed, in that
//! order; the tracker says what is due, `feeds` brings the events, `work` carries work out.
//!
//! Layer: imperative shell, on the kubelet's own thread and runtime. It decides nothing: which
//! status follows which is `sequence::step`'s, when is the tracker's. It never logs a pod spec
//! or a Secret.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, mpsc as std_mpsc};
use std::time::{Duration, Instant};

use futures::future::LocalBoxFuture;
use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use kube::Client;
use kube::runtime::watcher::Event;
use tokio::sync::mpsc;

use super::feeds::{Feed, key_of, register_node, watches};
use super::options::Options;
use super::protocol::{Action, Command, KubeletError};
use super::tracker::{Key, Scale, Tracker};
use super::work::{Ctx, Done, Failed, Report};

/// How long to wait before retrying work that failed for a reason other than a conflict.
const RETRY_AFTER: Duration = Duration::from_millis(200);

/// How many pods may have work in flight at once (each pod at most one piece).
const MAX_IN_FLIGHT: usize = 16;

/// Runs the kubelet until the future is dropped: registers the node (reporting on `ready`),
/// then serves watch events, due work (up to [`MAX_IN_FLIGHT`] pods at a time, one piece of work
/// per pod) and commands.
pub(super) async fn run(
    config: kube::Config,
    options: Options,
    actions: Arc<Mutex<Vec<Action>>>,
    mut commands: mpsc::UnboundedReceiver<Command>,
    ready: std_mpsc::Sender<Result<(), KubeletError>>,
) {
    // The one crypto provider in the tree; installing it again is a no-op.
    let _already_installed = rustls::crypto::ring::default_provider().install_default();
    let client = match Client::try_from(config) {
        Ok(client) => client,
        Err(error) => {
            let _gone = ready.send(Err(KubeletError::Client(error)));
            return;
        }
    };
    if let Err(source) = register_node(&client, &options.node_name).await {
        let _gone = ready.send(Err(KubeletError::Node {
            node: options.node_name.clone(),
            source,
        }));
        return;
    }
    let mut feed = watches(&client, &options.scope);
    let _gone = ready.send(Ok(()));
    let ctx = Ctx {
        client,
        node_name: options.node_name.clone(),
        scale: Scale::new(options.time_scale),
        actions,
    };
    let mut state = State {
        tracker: Tracker::new(
            options.node_name.clone(),
            options.start_delay,
            options.default_script.clone(),
            Scale::new(options.time_scale),
        ),
        listing: BTreeMap::new(),
        busy: BTreeSet::new(),
    };
    let mut in_flight: FuturesUnordered<LocalBoxFuture<'static, Done>> = FuturesUnordered::new();
    let mut paused = false;
    loop {
        if !paused {
            while in_flight.len() < MAX_IN_FLIGHT {
                let Some(work) = state.tracker.take_due(Instant::now(), &state.busy) else {
                    break;
                };
                let tracked = state.tracker.get(work.key()).cloned();
                state.busy.insert(work.key().clone());
                in_flight.push(ctx.clone().perform(work, tracked).boxed_local());
            }
        }
        let next = if paused || in_flight.len() >= MAX_IN_FLIGHT {
            None
        } else {
            state.tracker.next_due(&state.busy)
        };
        let due = async move {
            match next {
                Some(at) => tokio::time::sleep_until(at.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            // Commands first, then finished and due work, then events: a resumed kubelet
            // starts the work that fell due on its stale view before it learns what changed.
            biased;
            command = commands.recv() => match command {
                Some(Command::Pause(ack)) => {
                    // Nothing more is sent once the pause is acknowledged.
                    while let Some(done) = in_flight.next().await {
                        state.report(done);
                    }
                    paused = true;
                    let _gone = ack.send(());
                }
                Some(Command::Resume) => paused = false,
                None => return,
            },
            Some(done) = in_flight.next(), if !in_flight.is_empty() => state.report(done),
            () = due => {}
            item = feed.next(), if !paused => match item {
                Some(item) => state.apply(item),
                None => return,
            },
        }
    }
}

/// The loop's state: the tracker, the relists in progress, and the pods with work in flight.
struct State {
    tracker: Tracker,
    /// Pods listed so far by each watch's current relist.
    listing: BTreeMap<Option<String>, BTreeSet<Key>>,
    busy: BTreeSet<Key>,
}

impl State {
    fn apply(&mut self, item: Feed) {
        let now = Instant::now();
        let (scope, event) = match item {
            Feed::Pod(scope, event) => (scope, *event),
            Feed::SecretAppeared(Some(namespace)) => {
                self.tracker.secret_appeared(&namespace, now);
                return;
            }
            Feed::SecretAppeared(None) | Feed::WatchFailed | Feed::Nothing => return,
        };
        match event {
            Event::Init => {
                self.listing.insert(scope, BTreeSet::new());
            }
            Event::InitApply(pod) => {
                if let Some(key) = key_of(&pod) {
                    self.listing.entry(scope).or_default().insert(key);
                }
                self.tracker.observe(pod, now);
            }
            Event::InitDone => {
                let seen = self.listing.remove(&scope).unwrap_or_default();
                self.tracker.relisted(scope.as_deref(), &seen);
            }
            Event::Apply(pod) => self.tracker.observe(pod, now),
            Event::Delete(pod) => self.tracker.forget(&pod),
        }
    }

    fn report(&mut self, done: Done) {
        let key = done.work.key().clone();
        self.busy.remove(&key);
        let now = Instant::now();
        match done.result {
            Ok(Report::Stepped(stepped)) => self.tracker.stepped(&key, &done.uid, stepped, now),
            Ok(Report::Terminated(pod)) => self.tracker.terminated(&key, &done.uid, pod),
            Ok(Report::Marked(pod)) => self.tracker.observe(pod, now),
            Ok(Report::Forget) | Err(Failed::Gone) => self.tracker.drop_key(&key, &done.uid),
            Ok(Report::Nothing) => {}
            Err(Failed::Later) => self.tracker.retry(&done.work, now + RETRY_AFTER),
        }
    }
}
