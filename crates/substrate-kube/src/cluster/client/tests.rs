//! Unit tests of `cluster::client`: the kubeconfig choice (kubectl's precedence), the context's
//! namespace, and E13 messages. Uses temporary kubeconfig files; never contacts a cluster.

use super::*;
use std::collections::BTreeSet;
use std::ffi::OsString;

fn exists_in(set: &[&str]) -> impl Fn(&Path) -> bool {
    let set: BTreeSet<PathBuf> = set.iter().map(PathBuf::from).collect();
    move |path| set.contains(path)
}

fn files(paths: &[&str]) -> ConfigSource {
    ConfigSource::Kubeconfig {
        paths: paths.iter().map(PathBuf::from).collect(),
    }
}

/// `--kubeconfig` wins over `KUBECONFIG` and the home file, even when it does not exist (the
/// read error then names it).
#[test]
fn flag_wins() {
    let env = OsString::from("/a");
    let chosen = choose_source(
        Some(Path::new("/flag")),
        Some(&env),
        Some(Path::new("/home/u")),
        &exists_in(&["/a", "/home/u/.kube/config"]),
    );
    assert_eq!(chosen, files(&["/flag"]));
}

/// `KUBECONFIG` is a path list: empty entries and missing files are skipped, the rest kept in
/// order for merging.
#[test]
fn kubeconfig_env_is_a_merged_path_list() {
    let env = std::env::join_paths(["/a", "", "/missing", "/b"]).expect("joinable");
    let chosen = choose_source(
        None,
        Some(&env),
        Some(Path::new("/home/u")),
        &exists_in(&["/a", "/b", "/home/u/.kube/config"]),
    );
    assert_eq!(chosen, files(&["/a", "/b"]));
}

/// A `KUBECONFIG` naming only missing files means no kubeconfig: in-cluster, not the home file.
#[test]
fn kubeconfig_env_all_missing_is_in_cluster() {
    let env = OsString::from("/missing");
    let chosen = choose_source(
        None,
        Some(&env),
        Some(Path::new("/home/u")),
        &exists_in(&["/home/u/.kube/config"]),
    );
    assert_eq!(chosen, ConfigSource::InCluster);
}

/// An empty `KUBECONFIG` is as if unset: the home file when it exists, else in-cluster.
#[test]
fn empty_env_falls_back_to_home_then_in_cluster() {
    let empty = OsString::new();
    let home = Some(Path::new("/home/u"));
    assert_eq!(
        choose_source(
            None,
            Some(&empty),
            home,
            &exists_in(&["/home/u/.kube/config"])
        ),
        files(&["/home/u/.kube/config"])
    );
    assert_eq!(
        choose_source(None, None, home, &exists_in(&["/home/u/.kube/config"])),
        files(&["/home/u/.kube/config"])
    );
    assert_eq!(
        choose_source(None, None, home, &exists_in(&[])),
        ConfigSource::InCluster
    );
    assert_eq!(
        choose_source(None, None, None, &exists_in(&["/home/u/.kube/config"])),
        ConfigSource::InCluster
    );
}

const TWO_CONTEXTS: &str = r#"
apiVersion: v1
kind: Config
current-context: with-ns
clusters:
- name: loop
  cluster:
    server: http://127.0.0.1:9
contexts:
- name: with-ns
  context:
    cluster: loop
    user: plain
    namespace: agents
- name: without-ns
  context:
    cluster: loop
    user: plain
- name: plugin
  context:
    cluster: loop
    user: plugin
users:
- name: plain
  user:
    token: not-a-real-token
- name: plugin
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: apiary-test-no-such-credential-plugin
      interactiveMode: Never
"#;

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, text).expect("write kubeconfig");
    path
}

fn options(context: Option<&str>) -> ClientOptions {
    ClientOptions {
        kubeconfig: None,
        context: context.map(str::to_owned),
    }
}

/// The current context's namespace is returned; the context is reported by name.
#[tokio::test]
async fn current_context_namespace_is_returned() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(&dir, "config", TWO_CONTEXTS);
    let connection = connect_with(&options(None), files(&[path.to_str().expect("utf-8")]))
        .await
        .expect("connects");
    assert_eq!(connection.namespace.as_deref(), Some("agents"));
    assert_eq!(connection.context.as_deref(), Some("with-ns"));
    assert_eq!(
        connection.source,
        ConfigSource::Kubeconfig { paths: vec![path] }
    );
}

/// A context without a namespace gives `None`, never `default` (deploy.md § Namespace
/// resolution).
#[tokio::test]
async fn context_without_namespace_is_none_not_default() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(&dir, "config", TWO_CONTEXTS);
    let connection = connect_with(
        &options(Some("without-ns")),
        ConfigSource::Kubeconfig { paths: vec![path] },
    )
    .await
    .expect("connects");
    assert_eq!(connection.namespace, None);
    assert_eq!(connection.context.as_deref(), Some("without-ns"));
}

/// Merged files: the first file to set a value wins (current-context, same-named contexts).
#[tokio::test]
async fn merged_files_first_wins() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = write(
        &dir,
        "first",
        r#"
apiVersion: v1
kind: Config
current-context: mine
contexts:
- name: mine
  context:
    cluster: loop
    namespace: first-ns
"#,
    );
    let second = write(
        &dir,
        "second",
        &TWO_CONTEXTS
            .replace("current-context: with-ns", "current-context: without-ns")
            .replace("- name: with-ns", "- name: mine"),
    );
    let connection = connect_with(
        &options(None),
        ConfigSource::Kubeconfig {
            paths: vec![first, second],
        },
    )
    .await
    .expect("connects");
    assert_eq!(connection.context.as_deref(), Some("mine"));
    assert_eq!(connection.namespace.as_deref(), Some("first-ns"));
}

/// E13: a missing kubeconfig file is named, with the context `current` when defaulted.
#[tokio::test]
async fn e13_missing_file_names_path_and_current_context() {
    let error = connect_with(&options(None), files(&["/nonexistent/apiary/kubeconfig"]))
        .await
        .expect_err("no file");
    let text = error.to_string();
    assert!(matches!(error, ClientError::Kubeconfig { .. }), "{error:?}");
    assert!(text.contains("/nonexistent/apiary/kubeconfig"), "{text}");
    assert!(text.contains("context current"), "{text}");
}

/// E13: an unparseable kubeconfig names the path and the context, and its cause is told once
/// (in the message, not again as a source).
#[tokio::test]
async fn e13_unparseable_kubeconfig_names_path_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(&dir, "config", "clusters: [unclosed");
    let error = connect_with(
        &options(None),
        ConfigSource::Kubeconfig {
            paths: vec![path.clone()],
        },
    )
    .await
    .expect_err("unparseable");
    let text = error.to_string();
    assert!(matches!(error, ClientError::Kubeconfig { .. }), "{error:?}");
    assert!(text.contains(path.to_str().expect("utf-8")), "{text}");
    assert!(text.contains("context current"), "{text}");
    assert!(std::error::Error::source(&error).is_none());
}

/// E13: an unknown context is named in the message.
#[tokio::test]
async fn e13_unknown_context_is_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(&dir, "config", TWO_CONTEXTS);
    let error = connect_with(
        &options(Some("nope")),
        ConfigSource::Kubeconfig {
            paths: vec![path.clone()],
        },
    )
    .await
    .expect_err("unknown context");
    let text = error.to_string();
    assert!(text.contains("context nope"), "{text}");
    assert!(text.contains(path.to_str().expect("utf-8")), "{text}");
}

/// E13: a missing exec credential plugin is reported as such: the command, PATH, the fix, and
/// the kubeconfig and context.
#[tokio::test]
async fn e13_missing_credential_plugin_is_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(&dir, "config", TWO_CONTEXTS);
    let error = connect_with(
        &options(Some("plugin")),
        ConfigSource::Kubeconfig {
            paths: vec![path.clone()],
        },
    )
    .await
    .expect_err("no plugin");
    assert!(
        matches!(&error, ClientError::CredentialPluginMissing { command, .. } if command == "apiary-test-no-such-credential-plugin"),
        "{error:?}"
    );
    let text = error.to_string();
    assert!(
        text.contains("`apiary-test-no-such-credential-plugin`"),
        "{text}"
    );
    assert!(text.contains("not found on PATH"), "{text}");
    assert!(
        text.contains("install it or add its directory to PATH"),
        "{text}"
    );
    assert!(text.contains("context plugin"), "{text}");
    assert!(text.contains(path.to_str().expect("utf-8")), "{text}");
}

/// A context named without any kubeconfig file is refused, naming the context.
#[tokio::test]
async fn context_without_kubeconfig_is_refused() {
    let error = connect_with(&options(Some("prod")), ConfigSource::InCluster)
        .await
        .expect_err("no kubeconfig");
    assert_eq!(
        error.to_string(),
        "context prod was requested but no kubeconfig file was found (--kubeconfig, \
         KUBECONFIG, ~/.kube/config)"
    );
}

/// The defaulted context is labelled `current (<name>)` in messages once its name is known.
#[tokio::test]
async fn defaulted_context_is_labelled_current() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(
        &dir,
        "config",
        &TWO_CONTEXTS.replace("current-context: with-ns", "current-context: plugin"),
    );
    let error = connect_with(
        &options(None),
        ConfigSource::Kubeconfig { paths: vec![path] },
    )
    .await
    .expect_err("no plugin");
    assert!(
        error.to_string().contains("context current (plugin)"),
        "{error}"
    );
}

/// Installing the crypto provider twice is harmless, and leaves ring installed.
#[test]
fn crypto_provider_install_is_idempotent() {
    install_crypto_provider();
    install_crypto_provider();
    assert!(rustls::crypto::CryptoProvider::get_default().is_some());
}

/// The buzz provider's PATH reaches every exec credential plugin that does not set its own
/// `PATH`; users without a plugin are untouched (buzz-provider.md § 3.5).
#[test]
fn plugin_path_is_given_to_exec_plugins_without_their_own() {
    let mut kubeconfig = Kubeconfig::from_yaml(
        "apiVersion: v1\nkind: Config\nusers:\n\
         - name: plain\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: aws\n\
         - name: own\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: gke\n      env:\n      - name: PATH\n        value: /mine\n\
         - name: token\n  user:\n    token: t\n",
    )
    .expect("kubeconfig");
    set_plugin_path(&mut kubeconfig, OsStr::new("/opt/homebrew/bin:/usr/bin"));
    let env_of = |name: &str| {
        kubeconfig
            .auth_infos
            .iter()
            .find(|named| named.name == name)
            .and_then(|named| named.auth_info.as_ref())
            .and_then(|auth| auth.exec.as_ref())
            .and_then(|exec| exec.env.clone())
    };
    let plain = env_of("plain").expect("env added");
    assert_eq!(plain.len(), 1);
    assert_eq!(plain[0]["name"], "PATH");
    assert_eq!(plain[0]["value"], "/opt/homebrew/bin:/usr/bin");
    let own = env_of("own").expect("own env");
    assert_eq!(own.len(), 1);
    assert_eq!(own[0]["value"], "/mine");
    assert!(env_of("token").is_none());
}
