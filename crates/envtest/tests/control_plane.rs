//! The control-plane fixture against the real binaries: start-up and `/readyz`, the two
//! identities (admin creates, the unprivileged user gets the apiserver's own 403), kubeconfig
//! files that `kubectl` accepts, restart on the same port and data, compaction to a real 410,
//! children that die with an aborted test process, failure logs, the skip/require switch, and
//! the ServiceAccount-admission race with the stand-in controller.
//!
//! Layer: integration tests of test support. Every test skips (one stderr line) without
//! `KUBEBUILDER_ASSETS`; nothing here talks to anything but loopback.

use std::process::{Command, Output};
use std::time::Duration;

use apiary_envtest::{ControlPlane, Identity, Options};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, ServiceAccount};
use kube::api::{Api, ListParams, ObjectMeta, PostParams, WatchEvent, WatchParams};

/// The name of the helper test that child processes run (see [`helper_process`]).
const HELPER: &str = "helper_process";
/// The environment variable that tells [`helper_process`] what to do.
const HELPER_MODE: &str = "APIARY_ENVTEST_HELPER_MODE";

fn config_map(name: &str, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        data: Some([("value".to_owned(), value.to_owned())].into()),
        ..ConfigMap::default()
    }
}

fn pod(name: &str) -> Pod {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": { "name": name },
        "spec": {
            "automountServiceAccountToken": false,
            "containers": [{ "name": "main", "image": "registry.example/agent:1" }],
        },
    }))
    .unwrap()
}

/// The apiserver behind the shared plane answers `/readyz` with `ok` to the admin.
#[tokio::test]
async fn starts_and_answers_readyz() {
    let Some(plane) = apiary_envtest::private() else {
        return;
    };
    assert!(plane.is_ready());
    assert!(plane.server_url().starts_with("https://127.0.0.1:"));
    assert!(plane.etcd_url().starts_with("http://127.0.0.1:"));
    let client = plane.client(Identity::Admin);
    let readyz = client
        .request_text(http::Request::get("/readyz").body(Vec::new()).unwrap())
        .await
        .unwrap();
    assert_eq!(readyz, "ok");
    eprintln!("control plane started in {:?}", plane.started_in());
}

/// The admin identity can create a namespace through its `kube::Client`.
#[tokio::test]
async fn admin_creates_a_namespace() {
    let Some(plane) = apiary_envtest::private() else {
        return;
    };
    let namespaces = Api::<Namespace>::all(plane.client(Identity::Admin));
    let name = format!("admin-made-{}", std::process::id());
    let created = namespaces
        .create(
            &PostParams::default(),
            &Namespace {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    ..ObjectMeta::default()
                },
                ..Namespace::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(created.metadata.name.as_deref(), Some(name.as_str()));
    assert!(created.metadata.uid.is_some());
}

/// `plane.namespace` makes a distinct, existing namespace each time.
#[tokio::test]
async fn test_namespaces_are_unique_and_exist() {
    let Some(plane) = apiary_envtest::private() else {
        return;
    };
    let first = plane.namespace("unique");
    let second = plane.namespace("unique");
    assert_ne!(first.name(), second.name());
    assert!(first.starts_with("unique-"));
    let namespaces = Api::<Namespace>::all(plane.client(Identity::Admin));
    for name in [first.name(), second.name()] {
        namespaces.get(name).await.unwrap();
    }
}

/// The unprivileged user gets the apiserver's own RBAC 403 for listing pods.
#[tokio::test]
async fn unprivileged_user_is_forbidden_to_list_pods() {
    let Some(plane) = apiary_envtest::private() else {
        return;
    };
    let namespace = plane.namespace("forbidden");
    let pods = Api::<Pod>::namespaced(plane.client(Identity::User), &namespace);
    let error = pods.list(&Default::default()).await.unwrap_err();
    let status = api_status(error, 403, "Forbidden");
    assert!(
        status.message.contains(&format!(
            "User \"{}\" cannot list resource \"pods\" in API group \"\" in the namespace",
            Identity::User.user_name()
        )),
        "{}",
        status.message
    );
    // The admin may list the same pods.
    let pods = Api::<Pod>::namespaced(plane.client(Identity::Admin), &namespace);
    assert!(
        pods.list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

/// The apiserver's Status in `error`, asserted to carry `code` and `reason`.
fn api_status(error: kube::Error, code: u16, reason: &str) -> Box<kube::core::Status> {
    let kube::Error::Api(status) = error else {
        panic!("expected an API error, got {error:?}");
    };
    assert_eq!((status.code, status.reason.as_str()), (code, reason));
    status
}

fn kubectl(args: &[&str]) -> Option<Output> {
    match Command::new("kubectl").args(args).output() {
        Ok(output) => Some(output),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("kubectl is not on PATH: skipping the kubectl half of this test");
            None
        }
        Err(error) => panic!("cannot run kubectl: {error}"),
    }
}

/// The kubeconfig files work with `kubectl`: the admin lists namespaces, the context's namespace
/// is the one asked for, and the user is refused pods with the apiserver's 403.
#[test]
fn kubeconfig_files_work_with_kubectl() {
    let Some(plane) = apiary_envtest::private() else {
        return;
    };
    let namespace = plane.namespace("kubectl");
    let admin = plane.kubeconfig(Identity::Admin, &namespace);
    let admin = admin.to_str().unwrap();
    let Some(output) = kubectl(&["--kubeconfig", admin, "get", "ns", "-o", "name"]) else {
        return;
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains(&format!("namespace/{namespace}")),
        "{stdout}"
    );

    let output = kubectl(&[
        "--kubeconfig",
        admin,
        "config",
        "view",
        "--minify",
        "-o",
        "jsonpath={.contexts[0].context.namespace}",
    ])
    .unwrap();
    assert_eq!(String::from_utf8_lossy(&output.stdout), namespace.name());

    let user = plane.kubeconfig(Identity::User, &namespace);
    let output = kubectl(&["--kubeconfig", user.to_str().unwrap(), "get", "pods"]).unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("Forbidden")
            && stderr.contains(&format!(
                "User \"{}\" cannot list",
                Identity::User.user_name()
            )),
        "{stderr}"
    );
}

/// A kubeconfig names the server, embeds the CA and carries the identity's token.
#[test]
fn kubeconfig_embeds_server_ca_and_token() {
    let Some(plane) = apiary_envtest::private() else {
        return;
    };
    let yaml = plane.kubeconfig_yaml(Identity::User, "agents");
    let parsed = kube::config::Kubeconfig::from_yaml(&yaml).unwrap();
    let cluster = parsed.clusters[0].cluster.as_ref().unwrap();
    assert_eq!(cluster.server.as_deref(), Some(plane.server_url().as_str()));
    assert!(cluster.certificate_authority_data.is_some());
    assert!(cluster.certificate_authority.is_none());
    let context = parsed.contexts[0].context.as_ref().unwrap();
    assert_eq!(context.namespace.as_deref(), Some("agents"));
    assert!(yaml.contains(plane.token(Identity::User)));
    assert!(!yaml.contains(plane.token(Identity::Admin)));
}

/// Restarting the apiserver keeps its port and every object (etcd keeps running), after a
/// graceful stop and after a SIGKILL alike.
#[tokio::test]
async fn restart_keeps_the_port_and_the_data() {
    let Some(plane) = apiary_envtest::fresh(Options::default()) else {
        return;
    };
    let namespace = plane.namespace("restart");
    let url = plane.server_url();
    let created = {
        let maps = Api::<ConfigMap>::namespaced(plane.client(Identity::Admin), &namespace);
        maps.create(&PostParams::default(), &config_map("kept", "1"))
            .await
            .unwrap()
    };
    let first_pid = plane.apiserver_pid().unwrap();
    plane.stop_apiserver();
    assert!(!plane.is_ready());
    assert_eq!(plane.apiserver_pid(), None);
    assert!(!apiary_envtest::is_running(first_pid));
    plane.start_apiserver().unwrap();
    assert_eq!(plane.server_url(), url);
    assert_ne!(plane.apiserver_pid(), Some(first_pid));
    let maps = Api::<ConfigMap>::namespaced(plane.client(Identity::Admin), &namespace);
    let read = maps.get("kept").await.unwrap();
    assert_eq!(read.metadata.uid, created.metadata.uid);
    assert_eq!(
        read.metadata.resource_version,
        created.metadata.resource_version
    );

    let second_pid = plane.apiserver_pid().unwrap();
    plane.kill_apiserver();
    assert!(!plane.is_ready());
    assert!(!apiary_envtest::is_running(second_pid));
    // The old client's pooled connection is dead; a request fails rather than hangs.
    assert!(maps.get("kept").await.is_err());
    plane.start_apiserver().unwrap();
    assert_eq!(plane.server_url(), url);
    let read = maps.get("kept").await.unwrap();
    assert_eq!(read.metadata.uid, created.metadata.uid);
}

/// Neither `Debug` of the control plane nor of its kube config shows a token.
#[test]
fn debug_output_shows_no_token() {
    let Some(plane) = apiary_envtest::private() else {
        return;
    };
    for identity in [Identity::Admin, Identity::User] {
        let token = plane.token(identity);
        let shown = format!("{plane:?} {:?}", plane.config(identity));
        assert!(!shown.contains(token), "{identity:?} token in {shown}");
    }
}

/// `private()` starts one control plane per process and hands the same one to every caller.
#[test]
fn private_is_one_control_plane_per_process() {
    let Some(first) = apiary_envtest::private() else {
        return;
    };
    let second = apiary_envtest::private().unwrap();
    assert!(std::ptr::eq(first, second));
    assert_eq!(first.apiserver_pid(), second.apiserver_pid());
}

/// After `compact_etcd`, a watch from an older resourceVersion gets a real 410 from etcd.
#[tokio::test]
async fn compaction_turns_an_old_watch_into_410() {
    let Some(plane) = apiary_envtest::private() else {
        return;
    };
    let namespace = plane.namespace("compact");
    let maps = Api::<ConfigMap>::namespaced(plane.client(Identity::Admin), &namespace);
    let created = maps
        .create(&PostParams::default(), &config_map("watched", "0"))
        .await
        .unwrap();
    let old = created.metadata.resource_version.unwrap();
    for value in 1..4 {
        maps.replace(
            "watched",
            &PostParams::default(),
            &config_map("watched", &value.to_string()),
        )
        .await
        .unwrap();
    }
    let revision = plane.compact_etcd().unwrap();
    assert!(revision > old.parse::<i64>().unwrap());

    let mut events = maps
        .watch(&WatchParams::default().timeout(10), &old)
        .await
        .unwrap()
        .boxed();
    let first = events.try_next().await.unwrap();
    let Some(WatchEvent::Error(error)) = first else {
        panic!("expected a 410 ERROR event, got {first:?}");
    };
    assert_eq!(error.code, 410);
    assert_eq!(error.reason, "Expired");
}

/// After `compact_etcd`, continuing a paginated list begun before it gets a real 410.
#[tokio::test]
async fn compaction_expires_a_paused_listing() {
    let Some(plane) = apiary_envtest::private() else {
        return;
    };
    let namespace = plane.namespace("paused-list");
    let maps = Api::<ConfigMap>::namespaced(plane.client(Identity::Admin), &namespace);
    for name in ["a", "b", "c"] {
        maps.create(&PostParams::default(), &config_map(name, name))
            .await
            .unwrap();
    }
    let first = maps.list(&ListParams::default().limit(1)).await.unwrap();
    let token = first.metadata.continue_.clone().unwrap();
    assert_eq!(first.items.len(), 1);
    // A write after the page, so the compaction revision is newer than the list's snapshot.
    maps.create(&PostParams::default(), &config_map("d", "d"))
        .await
        .unwrap();
    plane.compact_etcd().unwrap();
    let error = maps
        .list(&ListParams::default().limit(1).continue_token(&token))
        .await
        .unwrap_err();
    api_status(error, 410, "Expired");
}

/// With ServiceAccount admission on, a pod create in a fresh namespace is refused with the
/// apiserver's 403 until the stand-in has created `default`, and then succeeds.
#[tokio::test]
async fn service_account_admission_refuses_until_the_default_account_exists() {
    let Some(plane) = apiary_envtest::fresh(Options::with_service_accounts(Duration::from_secs(2)))
    else {
        return;
    };
    let namespace = plane.namespace("sa-race");
    let client = plane.client(Identity::Admin);
    let pods = Api::<Pod>::namespaced(client.clone(), &namespace);
    let error = pods
        .create(&PostParams::default(), &pod("early"))
        .await
        .unwrap_err();
    let status = api_status(error, 403, "Forbidden");
    assert!(
        status.message.contains(&format!(
            "error looking up service account {namespace}/default: serviceaccount \"default\" not found"
        )),
        "{}",
        status.message
    );

    // Bounded retry until the stand-in's account appears; the order of answers is the point.
    let mut refusals = 1;
    let created = loop {
        match pods.create(&PostParams::default(), &pod("early")).await {
            Ok(created) => break created,
            Err(kube::Error::Api(status)) if status.code == 403 && refusals < 200 => {
                refusals += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(error) => panic!("unexpected answer after {refusals} refusals: {error:?}"),
        }
    };
    assert_eq!(created.metadata.name.as_deref(), Some("early"));
    let accounts = Api::<ServiceAccount>::namespaced(client, &namespace);
    accounts.get("default").await.unwrap();
}

/// The shared plane runs without ServiceAccount admission: a pod create in a fresh namespace
/// works at once, with no `default` account.
#[tokio::test]
async fn by_default_pods_need_no_service_account() {
    let Some(plane) = apiary_envtest::private() else {
        return;
    };
    let namespace = plane.namespace("no-sa");
    let client = plane.client(Identity::Admin);
    Api::<Pod>::namespaced(client.clone(), &namespace)
        .create(&PostParams::default(), &pod("at-once"))
        .await
        .unwrap();
    let accounts = Api::<ServiceAccount>::namespaced(client, &namespace);
    assert!(
        accounts
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

/// Runs this test binary's [`helper_process`] in a child process with `mode` and extra
/// environment.
fn run_helper(mode: &str, env: &[(&str, Option<&str>)]) -> Output {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args([HELPER, "--exact", "--nocapture", "--test-threads=1"])
        .env(HELPER_MODE, mode)
        .env_remove(apiary_envtest::PLANE_VAR);
    for (key, value) in env {
        match value {
            Some(value) => command.env(key, value),
            None => command.env_remove(key),
        };
    }
    command.output().unwrap()
}

/// Runs the helper in `mode` with `env`, asserts it failed, and answers its stdout and stderr.
fn run_failing_helper(mode: &str, env: &[(&str, Option<&str>)]) -> (String, String) {
    let output = run_helper(mode, env);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!output.status.success(), "{stdout}{stderr}");
    (stdout, stderr)
}

/// Not a test of its own: child processes run it (it returns at once otherwise).
#[test]
fn helper_process() {
    let Ok(mode) = std::env::var(HELPER_MODE) else {
        return;
    };
    match mode.as_str() {
        "start-and-abort" => {
            let plane = apiary_envtest::private().expect("the parent checked the assets");
            println!(
                "pids etcd={} apiserver={} dir={}",
                plane.etcd_pid().unwrap(),
                plane.apiserver_pid().unwrap(),
                plane.dir().display()
            );
            std::process::abort();
        }
        "fail-with-namespace" => {
            let plane = apiary_envtest::private().expect("the parent checked the assets");
            let _namespace = plane.namespace("failing");
            panic!("this test fails on purpose");
        }
        "attach" => {
            let plane = apiary_envtest::shared().expect("the parent started the shared plane");
            let namespace = plane.namespace("attached");
            let user = Identity::User.user_name();
            let runtime = tokio::runtime::Runtime::new().unwrap();
            let listed = runtime.block_on(async {
                let pods: Api<Pod> = Api::namespaced(plane.client(Identity::User), &namespace);
                pods.list(&ListParams::default()).await
            });
            let refused = match listed {
                Err(kube::Error::Api(status)) => status.message,
                other => panic!("the unbound user listed pods: {other:?}"),
            };
            println!(
                "attached user={user} refused={}",
                refused.contains(&format!("\"{user}\""))
            );
        }
        "shared" => match apiary_envtest::private() {
            Some(_) => println!("helper: ran"),
            None => println!("helper: skipped"),
        },
        other => panic!("unknown helper mode {other}"),
    }
}

/// A plane started to be shared (`ControlPlane::start_shared`, as the suite's wrapper does) is
/// attached to by each process that names it in `APIARY_PLANE`: each gets a namespace and an
/// unprivileged user of its own, whose token the apiserver authenticates as that user (its 403
/// names it), so a role one test binds cluster-wide never reaches another's user.
#[test]
fn processes_attached_to_a_shared_plane_have_users_of_their_own() {
    let Some(assets) = std::env::var_os("KUBEBUILDER_ASSETS").filter(|v| !v.is_empty()) else {
        return;
    };
    let plane = ControlPlane::start_shared(std::path::Path::new(&assets)).expect("it starts");
    let dir = plane.dir().to_str().unwrap().to_owned();
    let users: Vec<String> = (0..2)
        .map(|_| {
            let output = run_helper("attach", &[(apiary_envtest::PLANE_VAR, Some(&dir))]);
            let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
            assert!(
                output.status.success(),
                "{stdout}{}",
                String::from_utf8_lossy(&output.stderr)
            );
            let line = stdout
                .lines()
                .find_map(|line| line.find("attached ").map(|at| line[at..].to_owned()))
                .unwrap_or_else(|| panic!("no attached line in {stdout}"));
            assert!(line.ends_with("refused=true"), "{line}");
            line
        })
        .collect();
    assert_ne!(users[0], users[1]);
    assert!(
        users.iter().all(|u| u.contains("user=apiary-user-")),
        "{users:?}"
    );
}

/// Both children die with a test process that aborts (no unwinding, no Drop), and the
/// fixture's directory is removed.
#[test]
fn children_die_with_an_aborted_test_process() {
    if apiary_envtest::private().is_none() {
        return;
    }
    let (stdout, _) = run_failing_helper("start-and-abort", &[]);
    // libtest prints `test helper_process ... ` before the helper's own output on that line.
    let line = stdout
        .lines()
        .find_map(|line| line.find("pids ").map(|at| &line[at..]))
        .unwrap_or_else(|| panic!("no pids line in {stdout}"));
    let mut fields = line.split_whitespace().skip(1).map(|field| {
        field
            .split_once('=')
            .map(|(_, value)| value.to_owned())
            .unwrap()
    });
    let etcd: u32 = fields.next().unwrap().parse().unwrap();
    let apiserver: u32 = fields.next().unwrap().parse().unwrap();
    let dir = std::path::PathBuf::from(fields.next().unwrap());
    // The shells stop the children once they see EOF; wait (bounded) for that to happen.
    for _ in 0..400 {
        if !apiary_envtest::is_running(etcd)
            && !apiary_envtest::is_running(apiserver)
            && !dir.exists()
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!apiary_envtest::is_running(etcd), "etcd {etcd} survived");
    assert!(
        !apiary_envtest::is_running(apiserver),
        "kube-apiserver {apiserver} survived"
    );
    assert!(!dir.exists(), "{} survived", dir.display());
}

/// A failing test that holds a namespace prints the end of both logs.
#[test]
fn a_failing_test_prints_the_control_plane_logs() {
    if apiary_envtest::private().is_none() {
        return;
    }
    let (_, stderr) = run_failing_helper("fail-with-namespace", &[]);
    assert!(stderr.contains("this test fails on purpose"), "{stderr}");
    assert!(stderr.contains("----- last 200 lines of etcd"), "{stderr}");
    assert!(
        stderr.contains("----- last 200 lines of kube-apiserver"),
        "{stderr}"
    );
}

/// Without `KUBEBUILDER_ASSETS` a test skips with the setup-envtest line; with
/// `APIARY_ENVTEST_REQUIRED=1` it fails instead.
#[test]
fn missing_assets_skip_or_fail_as_required() {
    let skipped = run_helper(
        "shared",
        &[
            ("KUBEBUILDER_ASSETS", None),
            ("APIARY_ENVTEST_REQUIRED", None),
        ],
    );
    let stdout = String::from_utf8_lossy(&skipped.stdout);
    let stderr = String::from_utf8_lossy(&skipped.stderr);
    assert!(skipped.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("helper: skipped"), "{stdout}");
    assert_eq!(
        stderr
            .lines()
            .filter(|line| line
                .starts_with("skipping the real-server tier: KUBEBUILDER_ASSETS is not set"))
            .count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("setup-envtest use"), "{stderr}");

    let empty = tempfile::tempdir().unwrap();
    for (assets, said) in [
        (
            None,
            "the real-server tier is required (APIARY_ENVTEST_REQUIRED=1)",
        ),
        (
            Some(empty.path().to_str().unwrap()),
            "holds no kube-apiserver and no etcd",
        ),
    ] {
        let env = [
            ("KUBEBUILDER_ASSETS", assets),
            ("APIARY_ENVTEST_REQUIRED", Some("1")),
        ];
        let (_, stderr) = run_failing_helper("shared", &env);
        assert!(stderr.contains(said), "{stderr}");
    }
}

/// `ControlPlane::start` reports missing assets as an error rather than skipping.
#[test]
fn start_without_assets_is_an_error() {
    if std::env::var_os("KUBEBUILDER_ASSETS").is_some() {
        return;
    }
    let error = ControlPlane::start(Options::default()).unwrap_err();
    assert!(
        matches!(error, apiary_envtest::StartError::Assets(_)),
        "{error}"
    );
}
