//! Client construction: which kubeconfig (or the in-cluster service account) to use, and the
//! `kube::Client` built from it (deploy.md § CLI contract, global flags; E13).
//!
//! Layer: the shell's edge. `choose_source` is pure (the environment is passed in); `connect`
//! reads files and the environment and may run a credential plugin. It must never fall back to
//! the `default` namespace (the context's namespace is reported as found, `None` when unset),
//! and it turns kube's own retries off so `Cluster` alone retries, visibly and inside its budget.
//! `connect_kubeconfig_only` is the buzz provider's variant (buzz-provider.md § 3.5): the user's
//! kubeconfig or nothing, never the in-cluster service account, with an optional PATH for exec
//! credential plugins.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};

use super::mapping::describe_chain;

/// Select the TLS crypto provider (ring) for the whole process. Call once at start-up, before
/// any client is built: when dependency features enable two providers, rustls refuses to choose
/// and the first connection panics (deploy.md § Semantics relied on, item 11). Calling it again
/// is harmless.
pub fn install_crypto_provider() {
    // An error only means a provider is already installed, which is what was asked for.
    let _already_installed = rustls::crypto::ring::default_provider().install_default();
}

/// Where the client configuration comes from, as the user asked for it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientOptions {
    /// `--kubeconfig PATH`: this file only.
    pub kubeconfig: Option<PathBuf>,
    /// `--context NAME`: this context instead of the file's current context.
    pub context: Option<String>,
}

/// The configuration source chosen for a connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigSource {
    /// Kubeconfig files, merged in order as kubectl does (the first to set a value wins).
    Kubeconfig {
        /// The files, in merge order.
        paths: Vec<PathBuf>,
    },
    /// The in-cluster service account (no kubeconfig file at all).
    InCluster,
}

/// A built client and what the CLI needs to know about its configuration.
pub struct Connection {
    /// The client; kube's own retries are off.
    pub client: kube::Client,
    /// The context's `namespace` (in-cluster: the pod's own namespace); `None` when unset, so the
    /// CLI can refuse instead of silently using `default` (deploy.md § Namespace resolution).
    pub namespace: Option<String>,
    /// Where the configuration came from.
    pub source: ConfigSource,
    /// The context used (`None` in-cluster).
    pub context: Option<String>,
    /// The API server's URL, as the configuration names it (what a message about an
    /// unreachable server names).
    pub server: String,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("namespace", &self.namespace)
            .field("source", &self.source)
            .field("context", &self.context)
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

/// Why no client could be built (E13). Every message names the kubeconfig path(s) and the
/// context (`current` when defaulted).
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The kubeconfig could not be read, parsed or resolved (missing file, bad YAML, unknown
    /// context, no current context, bad certificate data).
    #[error("kubeconfig {paths}, context {context}: {message}")]
    Kubeconfig {
        /// The kubeconfig file(s), as shown to the user.
        paths: String,
        /// The context, `current` when defaulted.
        context: String,
        /// The underlying error and its causes, in words.
        message: String,
        /// The underlying error, for callers that match on it (its text is in `message`, so it
        /// is not reported again as a source).
        error: KubeconfigError,
    },
    /// The context's exec credential plugin is not installed.
    #[error(
        "kubeconfig {paths}, context {context}: the credential plugin `{command}` was not found \
         on PATH: install it or add its directory to PATH"
    )]
    CredentialPluginMissing {
        /// The kubeconfig file(s), as shown to the user.
        paths: String,
        /// The context, `current` when defaulted.
        context: String,
        /// The plugin command that was not found.
        command: String,
    },
    /// The configuration was read but the client could not be built (TLS material, a failing
    /// credential plugin).
    #[error("kubeconfig {paths}, context {context}: could not build a client: {message}")]
    Client {
        /// The kubeconfig file(s), or `in-cluster`.
        paths: String,
        /// The context, `current` when defaulted.
        context: String,
        /// The underlying error and its causes.
        message: String,
    },
    /// A context was named but there is no kubeconfig file to find it in.
    #[error(
        "context {context} was requested but no kubeconfig file was found (--kubeconfig, \
         KUBECONFIG, ~/.kube/config)"
    )]
    ContextWithoutKubeconfig {
        /// The requested context.
        context: String,
    },
    /// No kubeconfig file exists, and the caller does not use the in-cluster service account
    /// (the buzz provider runs on the user's desktop with the user's kubeconfig only).
    #[error(
        "no kubeconfig found (KUBECONFIG, ~/.kube/config): the buzz provider uses the user's \
         kubeconfig only, never an in-cluster service account; set KUBECONFIG or create \
         ~/.kube/config"
    )]
    NoKubeconfig,
    /// No kubeconfig file exists and the in-cluster service account is unusable.
    #[error(
        "no kubeconfig found (--kubeconfig, KUBECONFIG, ~/.kube/config) and the in-cluster \
         service account is unusable: {message}"
    )]
    InCluster {
        /// The underlying error and its causes.
        message: String,
    },
}

/// Choose the configuration source, as kubectl does: `--kubeconfig` alone when given; else the
/// non-empty entries of `KUBECONFIG` (a path list) that exist, merged in order; else
/// `~/.kube/config` when it exists; else the in-cluster service account. A `KUBECONFIG` that
/// names only missing files means no kubeconfig (kubectl skips missing entries).
pub fn choose_source(
    flag: Option<&Path>,
    kubeconfig_env: Option<&OsStr>,
    home: Option<&Path>,
    exists: &dyn Fn(&Path) -> bool,
) -> ConfigSource {
    if let Some(path) = flag {
        return ConfigSource::Kubeconfig {
            paths: vec![path.to_path_buf()],
        };
    }
    if let Some(list) = kubeconfig_env {
        let listed: Vec<PathBuf> = std::env::split_paths(list)
            .filter(|path| !path.as_os_str().is_empty())
            .collect();
        if !listed.is_empty() {
            let existing: Vec<PathBuf> = listed.into_iter().filter(|path| exists(path)).collect();
            return if existing.is_empty() {
                ConfigSource::InCluster
            } else {
                ConfigSource::Kubeconfig { paths: existing }
            };
        }
    }
    match home.map(|home| home.join(".kube").join("config")) {
        Some(path) if exists(&path) => ConfigSource::Kubeconfig { paths: vec![path] },
        _ => ConfigSource::InCluster,
    }
}

/// Paths as shown in messages: joined with `, `.
fn show_paths(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|path| path.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Build a client from the options and the process environment (`KUBECONFIG`, `HOME`).
///
/// # Errors
///
/// [`ClientError`] when no usable configuration exists, the kubeconfig cannot be read or
/// resolved, the credential plugin is missing or the client cannot be built. Must be called
/// inside a Tokio runtime.
pub async fn connect(options: &ClientOptions) -> Result<Connection, ClientError> {
    let source = choose_source(
        options.kubeconfig.as_deref(),
        std::env::var_os("KUBECONFIG").as_deref(),
        std::env::home_dir().as_deref(),
        &|path| path.exists(),
    );
    connect_with(options, source).await
}

/// Build a client from an already chosen source (see [`choose_source`]).
///
/// # Errors
///
/// As [`connect`].
pub async fn connect_with(
    options: &ClientOptions,
    source: ConfigSource,
) -> Result<Connection, ClientError> {
    match source {
        ConfigSource::InCluster => {
            if let Some(context) = &options.context {
                return Err(ClientError::ContextWithoutKubeconfig {
                    context: context.clone(),
                });
            }
            let mut config = kube::Config::incluster().map_err(|error| ClientError::InCluster {
                message: describe_chain(&error),
            })?;
            config.default_retry = false;
            let server = config
                .cluster_url
                .to_string()
                .trim_end_matches('/')
                .to_owned();
            let namespace = Some(config.default_namespace.clone()).filter(|ns| !ns.is_empty());
            let client = kube::Client::try_from(config).map_err(|error| ClientError::Client {
                paths: "in-cluster".to_owned(),
                context: "in-cluster".to_owned(),
                message: describe_chain(&error),
            })?;
            Ok(Connection {
                client,
                namespace,
                source: ConfigSource::InCluster,
                context: None,
                server,
            })
        }
        ConfigSource::Kubeconfig { paths } => connect_kubeconfig(options, paths, None).await,
    }
}

/// Build a client from the user's kubeconfig only (`KUBECONFIG`, else `~/.kube/config`): the
/// buzz provider's connection (buzz-provider.md § 3.5). There is no in-cluster fallback. When
/// `plugin_path` is given, every exec credential plugin of the kubeconfig runs with it as its
/// `PATH` (unless the kubeconfig sets the plugin's `PATH` itself): the in-process PATH rewrite,
/// made without touching the process environment.
///
/// # Errors
///
/// [`ClientError::NoKubeconfig`] when no kubeconfig file exists; otherwise as [`connect`].
pub async fn connect_kubeconfig_only(
    context: Option<&str>,
    plugin_path: Option<&OsStr>,
) -> Result<Connection, ClientError> {
    let source = choose_source(
        None,
        std::env::var_os("KUBECONFIG").as_deref(),
        std::env::home_dir().as_deref(),
        &|path| path.exists(),
    );
    let ConfigSource::Kubeconfig { paths } = source else {
        return Err(ClientError::NoKubeconfig);
    };
    let options = ClientOptions {
        kubeconfig: None,
        context: context.map(str::to_owned),
    };
    connect_kubeconfig(&options, paths, plugin_path).await
}

/// Give every exec credential plugin of `kubeconfig` the `PATH` `path`, unless its own `env`
/// names `PATH` (kubectl semantics: the kubeconfig's entries win). A path that is not UTF-8
/// cannot be written into the kubeconfig and is left out.
pub(crate) fn set_plugin_path(kubeconfig: &mut Kubeconfig, path: &OsStr) {
    let Some(path) = path.to_str() else {
        return;
    };
    for named in &mut kubeconfig.auth_infos {
        let Some(exec) = named.auth_info.as_mut().and_then(|auth| auth.exec.as_mut()) else {
            continue;
        };
        let env = exec.env.get_or_insert_with(Vec::new);
        if env
            .iter()
            .any(|entry| entry.get("name").is_some_and(|name| name == "PATH"))
        {
            continue;
        }
        env.push(HashMap::from([
            ("name".to_owned(), "PATH".to_owned()),
            ("value".to_owned(), path.to_owned()),
        ]));
    }
}

async fn connect_kubeconfig(
    options: &ClientOptions,
    paths: Vec<PathBuf>,
    plugin_path: Option<&OsStr>,
) -> Result<Connection, ClientError> {
    let shown = show_paths(&paths);
    let mut context_label = options
        .context
        .clone()
        .unwrap_or_else(|| "current".to_owned());
    let kubeconfig_error = |context: &str, error: KubeconfigError| ClientError::Kubeconfig {
        paths: shown.clone(),
        context: context.to_owned(),
        message: describe_kubeconfig_error(&error),
        error,
    };
    let mut merged = Kubeconfig::default();
    for path in &paths {
        let file = Kubeconfig::read_from(path).map_err(|e| kubeconfig_error(&context_label, e))?;
        merged = merged
            .merge(file)
            .map_err(|e| kubeconfig_error(&context_label, e))?;
    }
    if let Some(path) = plugin_path {
        set_plugin_path(&mut merged, path);
    }
    let context_name = options
        .context
        .clone()
        .or_else(|| merged.current_context.clone());
    if options.context.is_none()
        && let Some(name) = &context_name
    {
        context_label = format!("current ({name})");
    }
    let namespace = context_name.as_ref().and_then(|name| {
        merged
            .contexts
            .iter()
            .find(|named| &named.name == name)
            .and_then(|named| named.context.as_ref())
            .and_then(|context| context.namespace.clone())
            .filter(|namespace| !namespace.is_empty())
    });
    let kube_options = KubeConfigOptions {
        context: options.context.clone(),
        ..KubeConfigOptions::default()
    };
    let mut config = kube::Config::from_custom_kubeconfig(merged, &kube_options)
        .await
        .map_err(|e| kubeconfig_error(&context_label, e))?;
    config.default_retry = false;
    let server = config
        .cluster_url
        .to_string()
        .trim_end_matches('/')
        .to_owned();
    let plugin = config
        .auth_info
        .exec
        .as_ref()
        .and_then(|exec| exec.command.clone());
    let client = kube::Client::try_from(config).map_err(|error| {
        match plugin.filter(|_| is_plugin_not_found(&error)) {
            Some(command) => ClientError::CredentialPluginMissing {
                paths: shown.clone(),
                context: context_label.clone(),
                command,
            },
            None => ClientError::Client {
                paths: shown.clone(),
                context: context_label.clone(),
                message: describe_chain(&error),
            },
        }
    })?;
    Ok(Connection {
        client,
        namespace,
        source: ConfigSource::Kubeconfig { paths },
        context: context_name,
        server,
    })
}

/// A kubeconfig error in words for the E13 message, which names the path(s) itself: kube's own
/// texts quote a path in its `Debug` form (`'"/x/config"'`) and pass the YAML parser's
/// `error: ` prefix through, so the unreadable file and the parse failure are worded here and
/// every other case is the chain with `Debug`-quoted paths unquoted.
fn describe_kubeconfig_error(error: &KubeconfigError) -> String {
    match error {
        KubeconfigError::ReadConfig(io, _) => format!("the file could not be read: {io}"),
        KubeconfigError::Parse(parse) => {
            let text = parse.to_string();
            let text = text.trim_start_matches("error: ");
            format!("the file is not a valid kubeconfig: {text}")
        }
        other => describe_chain(other)
            .replace("'\"", "'")
            .replace("\"'", "'"),
    }
}

/// Whether building the client failed because the exec credential plugin could not be started
/// for want of the program.
fn is_plugin_not_found(error: &kube::Error) -> bool {
    matches!(
        error,
        kube::Error::Auth(kube::client::AuthError::AuthExecStart(io))
            if io.kind() == std::io::ErrorKind::NotFound
    )
}

#[cfg(test)]
mod tests;
