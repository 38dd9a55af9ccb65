//! The `seeds_resolve` tracing span: every resolve runs in one span carrying the namespace, the
//! selector and the mode, and the events of the resolve are emitted inside it, so `-v` output can
//! be filtered per operation.
//!
//! I/O mapping test over the scripted service of `seeds_mock`; no network.

use std::sync::{Arc, Mutex};

use crate::mock::*;
use apiary_seeds::{Pods, Port};
use apiary_seeds_kube::PodSeeds;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// What the recording layer saw, in order: `span <name> <fields>` and `event <span> <message>`.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<String>>>);

/// Collects `name=value` pairs (and the message) of one span or event.
#[derive(Default)]
struct Fields(Vec<String>, String);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.1 = format!("{value:?}");
        } else {
            self.0.push(format!("{}={value:?}", field.name()));
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push(format!("{}={value}", field.name()));
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Seen {
    fn on_new_span(&self, attrs: &Attributes<'_>, _id: &Id, _ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        let line = format!("span {} {}", attrs.metadata().name(), fields.0.join(" "));
        self.0.lock().unwrap().push(line);
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let span = ctx
            .event_span(event)
            .map_or("-".to_owned(), |s| s.name().to_owned());
        self.0
            .lock()
            .unwrap()
            .push(format!("event {span} {}", fields.1));
    }
}

/// A resolve opens `seeds_resolve` with namespace, selector and mode as fields, and the events
/// of the resolve (here the restart after an expired continue token) belong to it.
#[tokio::test]
async fn each_resolve_runs_in_a_span_naming_namespace_selector_and_mode() {
    let mut calls = 0;
    let api = MockApi::new(move |uri| {
        calls += 1;
        match (calls, query_param(uri, "continue")) {
            (1, None) => Reply::Json(200, page(&[running("a", "10.0.0.1")], Some("c1"), "5")),
            (2, Some(_)) => Reply::Json(
                410,
                status(410, "Expired", "The provided continue parameter is too old"),
            ),
            _ => Reply::Json(200, page(&[running("a", "10.0.0.1")], None, "6")),
        }
    });
    let seen = Seen::default();
    let subscriber = tracing_subscriber::registry().with(seen.clone());
    let _guard = tracing::subscriber::set_default(subscriber);
    let pods = Pods {
        namespace: Some("ring".to_owned()),
        label_selector: "app=ring-node".to_owned(),
        port: Port::Name("gossip".to_owned()),
    };
    let mut seeds = PodSeeds::with_client(pods, api.client()).unwrap();
    let addresses = seeds.resolve().await.unwrap();
    assert_eq!(addresses.len(), 1);
    let seen = seen.0.lock().unwrap().clone();
    assert_eq!(
        seen.first().map(String::as_str),
        Some("span seeds_resolve namespace=ring selector=app=ring-node mode=List"),
        "{seen:#?}"
    );
    let restart = seen
        .iter()
        .find(|line| line.contains("continue token expired"))
        .unwrap_or_else(|| panic!("no restart event: {seen:#?}"));
    assert!(restart.starts_with("event seeds_resolve "), "{restart}");
    // The event does not repeat what the span carries.
    assert!(!restart.contains("app=ring-node"), "{restart}");
}
