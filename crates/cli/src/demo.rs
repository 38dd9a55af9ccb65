//! `apiary demo` (deploy.md § CLI contract, "`apiary demo` shows apiary working without a
//! cluster"): starts the loopback apiserver simulator in-process, points an in-memory client
//! configuration at it, and runs a guided session through the same code the real subcommands
//! use (the `commands` and `seeds_cmd` functions over `Cluster` and `PodSeeds`), narrating each
//! step — the equivalent command, then its result — and checking that it behaved as specified.
//!
//! Shell layer. Must not: read or write the user's kubeconfig, contact anything but 127.0.0.1,
//! take longer than 30 s, or exit 0 unless every step behaved as specified. Compiled only with the
//! default-on `demo` feature (it is the one user of the simulator in the binary). In text mode the
//! narration is written as the steps run (a failed step then ends the demo with exit 1 and the
//! error on stderr); in json mode stdout is one document listing the steps. Each step's heading
//! and command are written (and flushed) before the step runs, so its progress on stderr follows
//! them on a terminal and the narration reads top to bottom.

use std::time::Duration;

use apiary_apiserver_sim::{Resource, SimOptions, Simulator, Verb};
use apiary_cluster_model::kubelet::PodScript;
use apiary_seeds::{Pods, Port};
use apiary_seeds_kube::PodSeeds;
use apiary_substrate::config::{DeployConfig, ValidConfig};
use apiary_substrate::driver::{DeployOptions, ListOptions};
use apiary_substrate::env::Env;
use apiary_substrate::naming::AgentIdentity;
use apiary_substrate_kube::{Cluster, LogsOptions, PodLogs};
use serde_json::{Value, json};

use crate::args::OutputFormat;
use crate::commands;
use crate::outcome::{self, CommandResult, Failure, Report};
use crate::progress::{StatusLine, Style};
use crate::seeds_cmd;

/// The demo's namespace (created by the first deploy, as a real deploy would).
const NAMESPACE: &str = "apiary-demo";
/// Model seconds per real second: a 60 s grace period passes in 0.6 s.
const TIME_SCALE: f64 = 100.0;
/// The whole demo must finish within this bound.
const DEMO_BUDGET: Duration = Duration::from_secs(30);

fn image(repo: &str) -> String {
    format!("registry.example.com/demo/{repo}@sha256:{}", "d".repeat(64))
}

/// Run the demo and print its narration; the result is what `main` prints last.
pub fn run(format: OutputFormat) -> CommandResult {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::failed(format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(async {
        let mut narrator = Narrator::new(format);
        match tokio::time::timeout(DEMO_BUDGET, session(&mut narrator)).await {
            Ok(Ok(())) => Ok(narrator.finish()),
            Ok(Err(failure)) => Err(narrator.fail(failure)),
            Err(_) => Err(narrator.fail(Failure::failed(format!(
                "the demo did not finish within {}s",
                DEMO_BUDGET.as_secs()
            )))),
        }
    })
}

/// Collects the steps; in text mode prints each heading as the step begins and its result as
/// it ends.
struct Narrator {
    format: OutputFormat,
    steps: Vec<Value>,
    simulator: String,
    /// The announced step: its title and command, until its result is recorded.
    current: Option<(String, String)>,
}

impl Narrator {
    fn new(format: OutputFormat) -> Self {
        Self {
            format,
            steps: Vec::new(),
            simulator: String::new(),
            current: None,
        }
    }

    fn say(&self, text: &str) {
        if self.format == OutputFormat::Text {
            outcome::write_stdout(&format!("{text}\n"));
        }
    }

    fn intro(&mut self, url: &str) {
        self.simulator = url.to_owned();
        self.say(&format!(
            "apiary demo: a simulated Kubernetes API is serving on {url} (loopback only; your \
             kubeconfig is not read or written).\n"
        ));
    }

    /// Announce the next step: its heading and equivalent command go out before the step runs,
    /// so the progress it writes to stderr appears under them and the narration reads top to
    /// bottom.
    fn begin(&mut self, title: &str, command: &str) {
        self.current = Some((title.to_owned(), command.to_owned()));
        let number = self.steps.len() + 1;
        self.say(&format!("{number}. {title}\n   $ {command}"));
    }

    /// Record the announced step's result; `Err` ends the demo with exit 1.
    fn end(&mut self, output: &str, verdict: Result<String, String>) -> Result<(), Failure> {
        let (title, command) = self.current.take().unwrap_or_default();
        let number = self.steps.len() + 1;
        let ok = verdict.is_ok();
        let explanation = match &verdict {
            Ok(text) | Err(text) => text.clone(),
        };
        self.steps.push(json!({
            "step": number,
            "title": title,
            "command": command,
            "output": output,
            "ok": ok,
            "explanation": explanation,
        }));
        let mut text = String::new();
        for line in output.lines() {
            text.push_str(&format!("   {line}\n"));
        }
        text.push_str(&format!(
            "   {} {explanation}\n",
            if ok { "ok:" } else { "NOT AS SPECIFIED:" }
        ));
        self.say(&text);
        verdict.map(|_| ()).map_err(|why| {
            Failure::failed(format!(
                "demo step {number} ({title}) did not behave as specified: {why}"
            ))
        })
    }

    fn finish(self) -> Report {
        self.say("Every step behaved as specified.");
        Report {
            text: String::new(),
            json: json!({
                "simulator": self.simulator,
                "namespace": NAMESPACE,
                "ok": true,
                "steps": self.steps,
            }),
            printed: self.format == OutputFormat::Text,
        }
    }

    fn fail(self, failure: Failure) -> Failure {
        failure.with_detail("steps", Value::Array(self.steps))
    }
}

/// The text of a command result for the narration (the error text for a failure).
fn shown(result: &CommandResult) -> String {
    match result {
        Ok(report) if report.text.is_empty() => "(no output)".to_owned(),
        Ok(report) => report.text.clone(),
        Err(failure) => format!("error: {}", failure.message),
    }
}

fn config(agent: &AgentIdentity, image: &str, env: Env) -> Result<ValidConfig, Failure> {
    let mut config = DeployConfig::new(NAMESPACE, image);
    config.env = env;
    config
        .validate(agent)
        .map_err(|e| Failure::failed(format!("demo configuration refused: {e}")))
}

fn agent(name: &str) -> Result<AgentIdentity, Failure> {
    AgentIdentity::new(name).map_err(|e| Failure::failed(e.to_string()))
}

/// A client for the simulator built from an in-memory kubeconfig, configured as the real
/// subcommands configure theirs (kube's own retries off: `Cluster` retries).
async fn client_for(sim: &Simulator) -> Result<kube::Client, Failure> {
    let broken = |e: &dyn std::fmt::Display| Failure::failed(format!("demo client: {e}"));
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&sim.kubeconfig_yaml(NAMESPACE))
        .map_err(|e| broken(&e))?;
    let mut config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .map_err(|e| broken(&e))?;
    config.default_retry = false;
    kube::Client::try_from(config).map_err(|e| broken(&e))
}

fn cluster(client: &kube::Client) -> Cluster {
    Cluster::new(client.clone(), NAMESPACE)
}

fn pod_creates(sim: &Simulator) -> usize {
    sim.requests()
        .iter()
        .filter(|r| r.is(Verb::Create, Resource::Pods) && r.status == Some(201))
        .count()
}

/// How many Secrets of the pod `pod` (named `<pod>-<generation>`) exist in the simulator.
fn secrets_of(sim: &Simulator, pod: &str) -> usize {
    sim.with_model(|model| {
        model
            .list_secrets(Some(NAMESPACE), &Default::default())
            .map(|page| {
                page.items
                    .iter()
                    .filter(|s| {
                        s.metadata
                            .name
                            .as_deref()
                            .is_some_and(|n| n.starts_with(&format!("{pod}-")))
                    })
                    .count()
            })
            .unwrap_or(0)
    })
}

/// A seed pod the simulated kubelet starts, with container port `gossip` = 7000.
fn seed_pod(name: &str) -> Result<k8s_openapi::api::core::v1::Pod, Failure> {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": "demo-ring"}},
        "spec": {"containers": [{
            "name": "node",
            "image": image("ring-node"),
            "ports": [{"name": "gossip", "containerPort": 7000}]
        }]}
    }))
    .map_err(|e| Failure::failed(format!("demo seed pod: {e}")))
}

/// The guided session: one block per step, each announced (`begin`) before it runs and recorded
/// (`end`) after, in the order they are narrated.
async fn session(narrator: &mut Narrator) -> Result<(), Failure> {
    let sim = Simulator::start(SimOptions::default().with_time_scale(TIME_SCALE))
        .await
        .map_err(|e| Failure::failed(format!("cannot start the simulator on 127.0.0.1: {e}")))?;
    narrator.intro(&sim.url());
    let client = client_for(&sim).await?;
    let ns = format!("-n {NAMESPACE}");

    // 1. Deploy, with progress on stderr.
    let main = agent("demo agent")?;
    let main_image = image("agent");
    narrator.begin(
        "Deploy an agent (progress is shown on stderr while it starts)",
        &format!("apiary {ns} deploy \"demo agent\" --image {main_image} --env GREETING=…"),
    );
    // tests/cli/redaction.rs asserts this value never appears in the demo's -vvv output.
    let env: Env = [("GREETING", "hello from the demo")].into_iter().collect();
    let valid = config(&main, &main_image, env)?;
    let progress = StatusLine::start(
        format!("deploying {}", valid.pod_name()),
        Style::for_stderr(),
    );
    let result = commands::deploy_with(
        &cluster(&client),
        &valid,
        &DeployOptions::for_config(&valid),
        &progress,
    )
    .await;
    let pod = valid.pod_name();
    let verdict = match &result {
        Ok(report) if report.text == pod => Ok(
            "the namespace was created, then a Secret and the pod; the container `agent` reported \
             running, so deploy returned the pod name"
                .to_owned(),
        ),
        other => Err(format!("expected the pod name {pod}, got {}", shown(other))),
    };
    narrator.end(&shown(&result), verdict)?;

    // 2. Two concurrent deploys of one new agent: one pod, the same answer for both.
    narrator.begin(
        "Deploy another agent twice at the same moment",
        &format!(
            "apiary {ns} deploy \"demo twin\" --image {main_image} & apiary {ns} deploy \"demo twin\" --image {main_image}"
        ),
    );
    let twin = agent("demo twin")?;
    let twin_config = config(&twin, &main_image, Env::new())?;
    let before = pod_creates(&sim);
    let silent_a = StatusLine::start("twin a", Style::Silent);
    let silent_b = StatusLine::start("twin b", Style::Silent);
    let (cluster_a, cluster_b) = (cluster(&client), cluster(&client));
    let twin_options = DeployOptions::for_config(&twin_config);
    let (a, b) = tokio::join!(
        commands::deploy_with(&cluster_a, &twin_config, &twin_options, &silent_a),
        commands::deploy_with(&cluster_b, &twin_config, &twin_options, &silent_b),
    );
    let created = pod_creates(&sim) - before;
    let twin_pod = twin_config.pod_name();
    let twin_secrets = secrets_of(&sim, &twin_pod);
    let verdict = match (&a, &b) {
        (Ok(x), Ok(y))
            if x.text == twin_pod && y.text == twin_pod && created == 1 && twin_secrets == 1 =>
        {
            Ok(format!(
                "both returned {twin_pod}; exactly one pod create was accepted — the loser adopted \
             the winner's pod and removed its own Secret"
            ))
        }
        _ => Err(format!(
            "expected both to return {twin_pod} with one pod and one Secret; got {} / {} with \
             {created} pod create(s) and {twin_secrets} Secret(s)",
            shown(&a),
            shown(&b)
        )),
    };
    narrator.end(&format!("{}\n{}", shown(&a), shown(&b)), verdict)?;

    // 3. Status of the first agent.
    narrator.begin(
        "Show its status",
        &format!("apiary {ns} status \"demo agent\" --image {main_image} --env GREETING=…"),
    );
    let result = commands::status(&cluster(&client), &main, Some(&valid)).await;
    let verdict = match &result {
        Ok(r) if r.json["state"] == "started" && r.json["intent_matches"] == true => {
            Ok("the pod is started and was built from this very configuration".to_owned())
        }
        other => Err(format!("expected state started, got {}", shown(other))),
    };
    narrator.end(&shown(&result), verdict)?;

    // 4. Every agent of the namespace: one pod LIST and one Secret LIST.
    narrator.begin("List the agents", &format!("apiary {ns} list"));
    let result = crate::list_cmd::list(&cluster(&client), &ListOptions::default()).await;
    let verdict = match &result {
        Ok(r)
            if r.json.as_array().is_some_and(|rows| {
                rows.len() == 2
                    && rows[0]["agent"] == "demo agent"
                    && rows[1]["agent"] == "demo twin"
                    && rows.iter().all(|row| row["state"] == "started")
            }) =>
        {
            Ok(
                "both agents, sorted by name, each started, from one pod and one Secret listing"
                    .to_owned(),
            )
        }
        other => Err(format!(
            "expected the two agents, started, got {}",
            shown(other)
        )),
    };
    narrator.end(&shown(&result), verdict)?;

    // 5. The agent's log, after verifying the pod is its own.
    narrator.begin(
        "Read the agent's log",
        &format!("apiary {ns} logs \"demo agent\""),
    );
    sim.with_model(|model| {
        model.script_pod_log(
            NAMESPACE,
            &pod,
            "agent",
            [
                (Duration::ZERO, "agent starting".to_owned()),
                (Duration::ZERO, "agent ready".to_owned()),
            ],
        );
    });
    let mut lines: Vec<String> = Vec::new();
    let mut sink = |line: &str| lines.push(line.to_owned());
    let read = PodLogs::new(client.clone(), NAMESPACE)
        .read(&main, &LogsOptions::default(), &mut sink)
        .await;
    let output = match &read {
        Ok(_) => lines.join("\n"),
        Err(e) => format!("error: {e}"),
    };
    let verdict = match &read {
        Ok(_) if lines == ["agent starting", "agent ready"] => Ok(
            "the pod was verified as the agent's own, then its `agent` container's log was read"
                .to_owned(),
        ),
        _ => Err(format!("expected the two scripted lines, got {output}")),
    };
    narrator.end(&output, verdict)?;

    // 6. An image that crashes: reported once, not retried.
    let crasher = agent("demo crasher")?;
    let crash_image = image("agent-crash");
    narrator.begin(
        "Deploy an image that crashes",
        &format!("apiary {ns} deploy \"demo crasher\" --image {crash_image}"),
    );
    let crash_config = config(&crasher, &crash_image, Env::new())?;
    let before = pod_creates(&sim);
    let progress = StatusLine::start(
        format!("deploying {}", crash_config.pod_name()),
        Style::for_stderr(),
    );
    let result = commands::deploy_with(
        &cluster(&client),
        &crash_config,
        &DeployOptions::for_config(&crash_config),
        &progress,
    )
    .await;
    let created = pod_creates(&sim) - before;
    let verdict = match &result {
        Err(f) if f.message.contains("exited with code 1") && created == 1 => Ok(
            "the container exited with code 1; apiary reported it at once and did not recreate \
             the pod, because an immediate exit recurs until its cause is fixed"
                .to_owned(),
        ),
        other => Err(format!(
            "expected one attempt failing with exit code 1, got {} after {created} pod create(s)",
            shown(other)
        )),
    };
    narrator.end(&shown(&result), verdict)?;

    // 7. Seeds over three simulated pods.
    narrator.begin(
        "Start three simulated peer pods and discover them as seeds",
        &format!("apiary {ns} seeds --selector app=demo-ring --port-name gossip"),
    );
    sim.with_model(|model| -> Result<(), Failure> {
        for name in ["ring-0", "ring-1", "ring-2"] {
            model
                .insert_pod_with_script(
                    seed_pod(name)?,
                    PodScript::Start {
                        after: Duration::ZERO,
                    },
                )
                .map_err(|e| Failure::failed(format!("demo seed pod {name}: {e}")))?;
        }
        Ok(())
    })?;
    tokio::time::sleep(sim.real_duration(Duration::from_secs(5))).await;
    let pods = Pods {
        namespace: Some(NAMESPACE.to_owned()),
        label_selector: "app=demo-ring".to_owned(),
        port: Port::Name("gossip".to_owned()),
    };
    let result = match PodSeeds::with_client(pods, client.clone()) {
        Ok(mut seeds) => seeds_cmd::resolve_once(&mut seeds).await,
        Err(e) => Err(Failure::failed(e.to_string())),
    };
    let verdict = match &result {
        Ok(r) if r.text.lines().count() == 3 => Ok(
            "three pods matched; each contributed its primary address paired with its `gossip` \
             container port, sorted"
                .to_owned(),
        ),
        other => Err(format!("expected three addresses, got {}", shown(other))),
    };
    narrator.end(&shown(&result), verdict)?;

    // 8. Undeploy, waiting for the grace period.
    narrator.begin(
        "Undeploy the agent",
        &format!("apiary {ns} undeploy \"demo agent\""),
    );
    let progress = StatusLine::start(format!("undeploying {pod}"), Style::for_stderr());
    let result = commands::undeploy(
        &cluster(&client),
        &main,
        commands::UndeployHow::default(),
        &progress,
    )
    .await;
    let verdict = match &result {
        Ok(r) if r.json["waited"] == true && r.json["secrets"].as_array().is_some_and(|s| s.len() == 1) => Ok(
            "the pod was deleted with its uid and resourceVersion as preconditions, apiary waited \
             for its shutdown, then deleted its Secret"
                .to_owned(),
        ),
        other => Err(format!("expected the pod and one Secret deleted, got {}", shown(other))),
    };
    narrator.end(&shown(&result), verdict)?;

    // 9. Status: absent.
    narrator.begin(
        "Show its status again",
        &format!("apiary {ns} status \"demo agent\""),
    );
    let result = commands::status(&cluster(&client), &main, None).await;
    let verdict = match &result {
        Ok(r) if r.json["state"] == "absent" => Ok("nothing of the agent is left".to_owned()),
        other => Err(format!("expected state absent, got {}", shown(other))),
    };
    narrator.end(&shown(&result), verdict)?;

    // 10. GC collects the crashed attempt.
    narrator.begin(
        "Collect the crashed attempt",
        &format!("apiary {ns} gc \"demo crasher\""),
    );
    let result = crate::expiry_cmd::gc(&cluster(&client), &crasher, false, None, None).await;
    let verdict = match &result {
        Ok(r)
            if r.json["pods"].as_array().is_some_and(|p| p.len() == 1)
                && r.json["secrets"].as_array().is_some_and(|s| s.len() == 1) =>
        {
            Ok(
                "the terminated pod and its Secret, kept as evidence until now, were collected"
                    .to_owned(),
            )
        }
        other => Err(format!(
            "expected one pod and one Secret collected, got {}",
            shown(other)
        )),
    };
    narrator.end(&shown(&result), verdict)?;
    sim.shutdown();
    Ok(())
}
