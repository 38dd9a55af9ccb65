//! `apiary seeds` (seeds.md § CLI contract, The `seeds` subcommand): build `Pods` from the
//! flags, resolve through `PodSeeds`, print the addresses or the zero-address diagnostic, and in
//! `--watch` mode keep printing the full set after every change until SIGINT or SIGTERM.
//!
//! Shell layer: every rule (which pods count, sorting, the diagnostic text, the report's JSON
//! form) belongs to `apiary-seeds` / `apiary-substrate-kube`. Must not: turn a failed listing
//! into an empty result, or print anything but the result on stdout.

use std::net::SocketAddr;
use std::num::NonZeroU16;
use std::time::Duration;

use apiary_classify::failure::Operation;
use apiary_seeds::{Filter, Pods, Port};
use apiary_seeds_kube::{PodSeeds, SeedsError, SeedsMode, SeedsOptions, SeedsResolution};
use serde_json::{Value, json};

use crate::args::{OutputFormat, SeedsArgs};
use crate::outcome::explain::Grant;
use crate::outcome::{self, CommandResult, Failure, Report};

/// The library configuration for the flags and `-n`.
///
/// # Errors
/// Exit 2 for a blank selector, port name or namespace (checked before any client exists).
pub fn pods_from_args(args: &SeedsArgs, namespace: Option<&str>) -> Result<Pods, Failure> {
    let port = match (args.port.and_then(NonZeroU16::new), &args.port_name) {
        (Some(number), None) => Port::Number(number),
        (None, Some(name)) => Port::Name(name.clone()),
        _ => {
            return Err(Failure::refused(
                "give exactly one of --port N (1-65535) and --port-name NAME",
            ));
        }
    };
    let pods = Pods {
        namespace: namespace.map(str::to_owned),
        label_selector: args.selector.clone(),
        port,
    };
    pods.validate().map_err(|e| {
        Failure::refused(match e {
            apiary_seeds::InvalidPods::BlankLabelSelector => {
                "--selector is blank: an empty selector would seed from every pod in the \
                 namespace; give a label selector such as app=ring"
            }
            apiary_seeds::InvalidPods::BlankNamespace => {
                "-n/--namespace is blank: give the namespace of the seed pods, or leave -n out \
                 to use the kubeconfig context's namespace"
            }
            apiary_seeds::InvalidPods::BlankPortName => {
                "--port-name is blank: give the name of the container port the seeds listen on \
                 (such as gossip), or --port N"
            }
        })
    })?;
    Ok(pods)
}

/// The narrowing the flags ask for (seeds.md § Address family and running containers).
pub fn filter_from_args(args: &SeedsArgs) -> Filter {
    Filter {
        ip_family: args.ip_family,
        require_running: args.require_running,
    }
}

/// The text form: one `ip:port` per line (IPv6 bracketed), sorted as the library returns them.
pub fn addresses_text(addresses: &[SocketAddr]) -> String {
    addresses
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The json form: `{"addresses": […], "skipped": {all eight keys}}`.
pub fn resolution_json(resolution: &SeedsResolution) -> Value {
    let report = serde_json::to_value(&resolution.report).unwrap_or(Value::Null);
    json!({
        "addresses": resolution.addresses.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "skipped": report.get("skipped").cloned().unwrap_or(Value::Null),
    })
}

/// Map a resolve error to exit 1 with the diagnostic, or a failed listing in the shared shape of
/// docs/errors.md (for a 403, the seeds role's fix).
pub fn failure(error: &SeedsError, namespace: &str) -> Failure {
    match error {
        SeedsError::NoAddresses(no) => {
            let report = serde_json::to_value(&no.report).unwrap_or(Value::Null);
            let mut failure = Failure::failed(no.to_string());
            for key in ["matched", "skipped", "port_names_seen"] {
                failure = failure.with_detail(key, report.get(key).cloned().unwrap_or(Value::Null));
            }
            failure
        }
        SeedsError::Config(e) => Failure::refused(e.to_string()),
        // The typed parts of the kube error, never its Display (which appends the Status's Debug
        // form), rendered in the shared shape with the seeds role's fix for a 403.
        SeedsError::Client(client) => Failure::request_granted(
            &apiary_substrate_kube::request_failure(
                Operation::ListPods,
                &format!("in {namespace}"),
                client,
            ),
            namespace,
            Grant::Seeds,
        ),
    }
}

/// One resolve in list mode.
pub async fn resolve_once(seeds: &mut PodSeeds) -> CommandResult {
    let namespace = seeds.namespace().to_owned();
    let resolution = seeds
        .resolve_detailed()
        .await
        .map_err(|e| failure(&e, &namespace))?;
    Ok(Report::new(
        addresses_text(&resolution.addresses),
        resolution_json(&resolution),
    ))
}

/// `--watch`: print the full set at start and after every change; exit 1 if the first resolve
/// fails; later failures go to stderr and the loop keeps going; SIGINT/SIGTERM end it with 0.
pub async fn watch(seeds: PodSeeds, format: OutputFormat) -> CommandResult {
    let mut seeds = seeds.with_options(SeedsOptions {
        mode: SeedsMode::Watch,
        ..SeedsOptions::default()
    });
    let namespace = seeds.namespace().to_owned();
    let first = seeds
        .resolve_detailed()
        .await
        .map_err(|e| failure(&e, &namespace))?;
    let mut last = Some(first.addresses.clone());
    print_set(&first, format);
    let stop = shutdown_signal();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            () = &mut stop => return Ok(Report::already_printed()),
            () = tokio::time::sleep(Duration::from_millis(500)) => {}
        }
        match seeds.resolve_detailed().await {
            Ok(resolution) => {
                if last.as_ref() != Some(&resolution.addresses) {
                    print_set(&resolution, format);
                    last = Some(resolution.addresses);
                }
            }
            Err(SeedsError::NoAddresses(no)) => {
                if last.as_ref().is_none_or(|l| !l.is_empty()) {
                    tracing::warn!("{no}");
                    print_empty(format, &no.report);
                    last = Some(Vec::new());
                }
            }
            Err(error) => tracing::error!("{}", failure(&error, &namespace).message),
        }
    }
}

fn print_set(resolution: &SeedsResolution, format: OutputFormat) {
    match format {
        OutputFormat::Text => {
            let text = addresses_text(&resolution.addresses);
            outcome::write_stdout(&format!("{text}\n\n"));
        }
        OutputFormat::Json => {
            outcome::write_stdout(&outcome::document(&resolution_json(resolution)))
        }
    }
}

/// An empty set after a change: text prints just the separating empty line; json a document
/// with no addresses and the skip counts (the diagnostic itself goes to stderr).
fn print_empty(format: OutputFormat, report: &apiary_seeds::Report) {
    match format {
        OutputFormat::Text => outcome::write_stdout("\n"),
        OutputFormat::Json => {
            let report = serde_json::to_value(report).unwrap_or(Value::Null);
            outcome::write_stdout(&outcome::document(&json!({
                "addresses": [],
                "skipped": report.get("skipped").cloned().unwrap_or(Value::Null),
            })));
        }
    }
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

#[cfg(test)]
mod tests {
    //! Flag mapping and the output shapes of seeds.md § CLI contract (K39).

    use std::collections::BTreeSet;

    use super::*;
    use crate::outcome::Exit;

    fn args(port: Option<u16>, name: Option<&str>, selector: &str) -> SeedsArgs {
        SeedsArgs {
            selector: selector.to_owned(),
            port,
            port_name: name.map(str::to_owned),
            ip_family: None,
            require_running: false,
            watch: false,
        }
    }

    /// `--port` and `--port-name` map onto `Port`; `-n` onto the namespace, else `None`.
    #[test]
    fn flags_map_onto_pods() {
        let pods = pods_from_args(&args(Some(7000), None, "app=x"), Some("ring")).expect("ok");
        assert_eq!(
            pods.port,
            Port::Number(NonZeroU16::new(7000).expect("nonzero"))
        );
        assert_eq!(pods.namespace.as_deref(), Some("ring"));
        let pods = pods_from_args(&args(None, Some("gossip"), "app=x"), None).expect("ok");
        assert_eq!(pods.port, Port::Name("gossip".into()));
        assert!(pods.namespace.is_none());
    }

    /// `--ip-family` and `--require-running` map onto the library's `Filter`; neither given
    /// narrows nothing.
    #[test]
    fn narrowing_flags_map_onto_the_filter() {
        let mut given = args(Some(7000), None, "app=x");
        assert_eq!(filter_from_args(&given), Filter::default());
        given.ip_family = Some(apiary_seeds::IpFamily::Ipv6);
        given.require_running = true;
        assert_eq!(
            filter_from_args(&given),
            Filter {
                ip_family: Some(apiary_seeds::IpFamily::Ipv6),
                require_running: true,
            }
        );
    }

    /// K39: a blank selector, a blank port name and a blank namespace are exit 2.
    #[test]
    fn k39_blank_values_are_refused() {
        for (a, ns) in [
            (args(Some(1), None, "  "), None),
            (args(None, Some(" "), "app=x"), None),
            (args(Some(1), None, "app=x"), Some("")),
        ] {
            let err = pods_from_args(&a, ns).expect_err("refused");
            assert_eq!(err.exit, Exit::Refused);
        }
        let err = pods_from_args(&args(None, None, "app=x"), None).expect_err("refused");
        assert_eq!(err.exit, Exit::Refused);
    }

    /// seeds.md § The seeds subcommand, rule 4: zero addresses → exit 1, the diagnostic as the
    /// message, and the json error document carries `matched`, `skipped` (all eight keys) and
    /// `port_names_seen`.
    #[test]
    fn no_addresses_maps_to_exit_1_with_the_report() {
        let no = apiary_seeds::NoAddresses {
            selector: "app=ring".into(),
            namespace: "ring".into(),
            port: Port::Name("gossip".into()),
            filter: apiary_seeds::Filter::default(),
            report: apiary_seeds::Report {
                matched: 2,
                skipped: Default::default(),
                port_names_seen: BTreeSet::from(["http".to_owned()]),
            },
        };
        let f = failure(&SeedsError::NoAddresses(Box::new(no)), "ring");
        assert_eq!(f.exit, Exit::Failed);
        assert!(f.message.contains("app=ring") && f.message.contains("ring"));
        let doc = f.to_json();
        assert_eq!(doc["matched"], 2);
        assert_eq!(doc["port_names_seen"], json!(["http"]));
        assert_eq!(doc["skipped"].as_object().map(|o| o.len()), Some(8));
        assert!(doc["error"].is_string());
    }

    /// seeds.md § The seeds subcommand, rule 5: a 403 names the missing permission and the RBAC
    /// manifest; other client errors do not.
    #[test]
    fn forbidden_adds_the_rbac_hint_only_for_403() {
        let forbidden = SeedsError::Client(kube::Error::Api(Box::new(
            kube::core::Status::failure(
                "pods is forbidden: User \"u\" cannot list resource \"pods\" in API group \"\" in \
                 the namespace \"ring\"",
                "Forbidden",
            )
            .with_code(403),
        )));
        let f = failure(&forbidden, "ring");
        assert_eq!(f.exit, Exit::Failed);
        assert!(
            f.message.contains("rbac/apiary-seeds.yaml"),
            "{}",
            f.message
        );
        assert!(f.message.contains("`list`"), "{}", f.message);
        let unavailable = SeedsError::Client(kube::Error::Api(Box::new(
            kube::core::Status::failure("try later", "ServiceUnavailable").with_code(503),
        )));
        let f = failure(&unavailable, "ring");
        assert_eq!(f.exit, Exit::Failed);
        assert!(!f.message.contains("rbac/"), "{}", f.message);
        assert!(f.message.contains("ring"));
    }

    /// K39: text is one address per line, IPv6 bracketed; json has all eight skip keys.
    #[test]
    fn k39_output_shapes() {
        let resolution = SeedsResolution {
            addresses: vec![
                "10.0.0.1:7000".parse().expect("addr"),
                "[fd00::2]:7000".parse().expect("addr"),
            ],
            report: apiary_seeds::Report {
                matched: 3,
                skipped: Default::default(),
                port_names_seen: BTreeSet::new(),
            },
        };
        assert_eq!(
            addresses_text(&resolution.addresses),
            "10.0.0.1:7000\n[fd00::2]:7000"
        );
        let doc = resolution_json(&resolution);
        assert_eq!(
            doc,
            json!({
                "addresses": ["10.0.0.1:7000", "[fd00::2]:7000"],
                "skipped": {
                    "terminating": 0,
                    "finished": 0,
                    "no_address": 0,
                    "unparsable_address": 0,
                    "no_family_address": 0,
                    "missing_port_name": 0,
                    "port_out_of_range": 0,
                    "not_running": 0
                }
            })
        );
    }
}
