//! Request routing: maps a method, path and query onto the simulator's vocabulary (a resource, a
//! Kubernetes verb, a namespace and a name) and decodes the query string.
//!
//! Layer: pure parsing. It decides which Kubernetes verb a request is (`get`, `list`, `watch`,
//! `create`, `delete`) — the same verb names RBAC and fault injection use — and never touches the
//! model, the clock or the network.

use std::fmt;

/// The core/v1 resources the simulator serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Resource {
    /// `namespaces` (cluster-scoped).
    Namespaces,
    /// `pods`.
    Pods,
    /// `secrets`.
    Secrets,
    /// `serviceaccounts` (get and create only: what apiary and a test's setup need).
    ServiceAccounts,
    /// `nodes` (cluster-scoped; get only: apiary reads the node of a pod that will not go away).
    Nodes,
}

impl Resource {
    /// The plural resource name used in paths, RBAC and `Status.details.kind`.
    pub fn plural(self) -> &'static str {
        match self {
            Resource::Namespaces => "namespaces",
            Resource::Pods => "pods",
            Resource::Secrets => "secrets",
            Resource::ServiceAccounts => "serviceaccounts",
            Resource::Nodes => "nodes",
        }
    }

    /// The object kind (`Namespace`, `Pod`, `Secret`).
    pub fn kind(self) -> &'static str {
        match self {
            Resource::Namespaces => "Namespace",
            Resource::Pods => "Pod",
            Resource::Secrets => "Secret",
            Resource::ServiceAccounts => "ServiceAccount",
            Resource::Nodes => "Node",
        }
    }

    fn from_plural(s: &str) -> Option<Resource> {
        match s {
            "namespaces" => Some(Resource::Namespaces),
            "pods" => Some(Resource::Pods),
            "secrets" => Some(Resource::Secrets),
            "serviceaccounts" => Some(Resource::ServiceAccounts),
            "nodes" => Some(Resource::Nodes),
            _ => None,
        }
    }
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.plural())
    }
}

/// A Kubernetes API verb, as RBAC names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verb {
    /// GET of one object.
    Get,
    /// GET of a collection.
    List,
    /// GET of a collection with `watch=true` (or `watch=1`).
    Watch,
    /// POST to a collection.
    Create,
    /// DELETE of one object.
    Delete,
    /// PUT of one object (answered, never performed: the simulator has no update verb).
    Update,
    /// PATCH of one object (answered, never performed).
    Patch,
}

impl Verb {
    /// The RBAC spelling (`get`, `list`, `watch`, `create`, `delete`).
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Delete => "delete",
            Verb::Update => "update",
            Verb::Patch => "patch",
        }
    }
}

impl fmt::Display for Verb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a request goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `GET /version`.
    Version,
    /// `GET /readyz`: always ready (the simulator has no start-up to wait for).
    Readyz,
    /// `GET /api`.
    CoreVersions,
    /// `GET /api/v1`.
    CoreResources,
    /// `GET /apis`.
    Groups,
    /// A request on a served resource.
    Resource(ResourceRequest),
    /// `GET /api/v1/namespaces/<ns>/pods/<name>/log`: the pod log endpoint.
    PodLog {
        /// The namespace.
        namespace: String,
        /// The pod.
        name: String,
    },
    /// A path shaped like a served resource but with a method the simulator does not serve.
    MethodNotAllowed,
    /// Anything else.
    Unknown,
}

/// A request on namespaces, pods or Secrets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceRequest {
    /// The resource addressed.
    pub resource: Resource,
    /// The verb.
    pub verb: Verb,
    /// The namespace from the path; `None` for namespaces themselves and all-namespace lists.
    pub namespace: Option<String>,
    /// The object name for the verbs on one object (`get`, `delete`, `update`, `patch`).
    pub name: Option<String>,
}

/// Routes a request by method, path and decoded query.
pub fn route(method: &http::Method, path: &str, query: &Query) -> Route {
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').skip(1).collect();
    let get = method == http::Method::GET;
    match segments.as_slice() {
        ["version"] if get => Route::Version,
        ["readyz"] if get => Route::Readyz,
        ["api"] if get => Route::CoreVersions,
        ["api", "v1"] if get => Route::CoreResources,
        ["apis"] if get => Route::Groups,
        ["api", "v1", plural] => collection(method, Resource::from_plural(plural), None, query),
        ["api", "v1", "namespaces", name] => item(method, Some(Resource::Namespaces), None, name),
        ["api", "v1", "nodes", name] => item(method, Some(Resource::Nodes), None, name),
        ["api", "v1", "namespaces", ns, plural] => match Resource::from_plural(plural) {
            Some(Resource::Namespaces | Resource::Nodes) | None => Route::Unknown,
            some => collection(method, some, Some(ns), query),
        },
        ["api", "v1", "namespaces", ns, "pods", name, "log"] if get => Route::PodLog {
            namespace: percent_decode(ns),
            name: percent_decode(name),
        },
        ["api", "v1", "namespaces", ns, plural, name] => match Resource::from_plural(plural) {
            Some(Resource::Namespaces | Resource::Nodes) | None => Route::Unknown,
            some => item(method, some, Some(ns), name),
        },
        _ => Route::Unknown,
    }
}

fn collection(
    method: &http::Method,
    resource: Option<Resource>,
    ns: Option<&str>,
    query: &Query,
) -> Route {
    let Some(resource) = resource else {
        return Route::Unknown;
    };
    let verb = if method == http::Method::GET {
        if query.is_watch() {
            Verb::Watch
        } else {
            Verb::List
        }
    } else if method == http::Method::POST && (ns.is_some() || resource == Resource::Namespaces) {
        Verb::Create
    } else {
        return Route::MethodNotAllowed;
    };
    Route::Resource(ResourceRequest {
        resource,
        verb,
        namespace: ns.map(str::to_owned),
        name: None,
    })
}

fn item(method: &http::Method, resource: Option<Resource>, ns: Option<&str>, name: &str) -> Route {
    let Some(resource) = resource else {
        return Route::Unknown;
    };
    let verb = if method == http::Method::GET {
        Verb::Get
    } else if method == http::Method::DELETE {
        Verb::Delete
    } else if method == http::Method::PUT {
        Verb::Update
    } else if method == http::Method::PATCH {
        Verb::Patch
    } else {
        return Route::MethodNotAllowed;
    };
    Route::Resource(ResourceRequest {
        resource,
        verb,
        namespace: ns.map(str::to_owned),
        name: Some(percent_decode(name)),
    })
}

/// A decoded query string: `key=value` pairs in order, `+` and `%XX` decoded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    pairs: Vec<(String, String)>,
}

impl Query {
    /// Parses a raw query string (without the `?`). Empty pairs (as in kube's `?&a=b`) are skipped.
    pub fn parse(raw: &str) -> Query {
        let pairs = raw
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| match p.split_once('=') {
                Some((k, v)) => (form_decode(k), form_decode(v)),
                None => (form_decode(p), String::new()),
            })
            .collect();
        Query { pairs }
    }

    /// The first value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The first non-empty value of `key`.
    pub fn non_empty(&self, key: &str) -> Option<&str> {
        self.get(key).filter(|v| !v.is_empty())
    }

    /// Whether the request asks for a watch (`watch=true` or `watch=1`, as the apiserver accepts).
    pub fn is_watch(&self) -> bool {
        matches!(self.get("watch"), Some("true" | "1" | "True" | "TRUE"))
    }

    /// Whether a boolean parameter is set to true.
    pub fn flag(&self, key: &str) -> bool {
        matches!(self.get(key), Some("true" | "1" | "True" | "TRUE"))
    }
}

/// Decodes `application/x-www-form-urlencoded` text: `+` is a space, `%XX` a byte.
fn form_decode(s: &str) -> String {
    percent_decode(&s.replace('+', " "))
}

/// Decodes `%XX` escapes; malformed escapes are kept literally and invalid UTF-8 is replaced.
pub fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = bytes.get(i + 1..i + 3)
            && let Some(b) = std::str::from_utf8(hex)
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;

    fn r(method: Method, path: &str, query: &str) -> Route {
        route(&method, path, &Query::parse(query))
    }

    fn req(resource: Resource, verb: Verb, ns: Option<&str>, name: Option<&str>) -> Route {
        Route::Resource(ResourceRequest {
            resource,
            verb,
            namespace: ns.map(str::to_owned),
            name: name.map(str::to_owned),
        })
    }

    /// Every verb of the request table of deploy.md § Cluster interface and requests routes to the
    /// right resource and verb.
    #[test]
    fn apiserver_contract_requests_route_to_their_verbs() {
        use Resource::*;
        use Verb::*;
        assert_eq!(
            r(Method::GET, "/api/v1/namespaces/a", ""),
            req(Namespaces, Get, None, Some("a"))
        );
        assert_eq!(
            r(Method::POST, "/api/v1/namespaces", ""),
            req(Namespaces, Create, None, None)
        );
        assert_eq!(
            r(Method::GET, "/api/v1/namespaces", ""),
            req(Namespaces, List, None, None)
        );
        assert_eq!(
            r(
                Method::GET,
                "/api/v1/namespaces/a/pods",
                "&labelSelector=x%3Dy"
            ),
            req(Pods, List, Some("a"), None)
        );
        assert_eq!(
            r(Method::GET, "/api/v1/namespaces/a/pods", "watch=true"),
            req(Pods, Watch, Some("a"), None)
        );
        assert_eq!(
            r(Method::GET, "/api/v1/namespaces/a/secrets", "watch=1"),
            req(Secrets, Watch, Some("a"), None)
        );
        assert_eq!(
            r(Method::GET, "/api/v1/namespaces/a/pods", "watch=false"),
            req(Pods, List, Some("a"), None)
        );
        assert_eq!(
            r(Method::POST, "/api/v1/namespaces/a/secrets", ""),
            req(Secrets, Create, Some("a"), None)
        );
        assert_eq!(
            r(Method::GET, "/api/v1/namespaces/a/pods/p", ""),
            req(Pods, Get, Some("a"), Some("p"))
        );
        assert_eq!(
            r(Method::DELETE, "/api/v1/namespaces/a/pods/p", ""),
            req(Pods, Delete, Some("a"), Some("p"))
        );
        assert_eq!(
            r(Method::GET, "/api/v1/pods", ""),
            req(Pods, List, None, None)
        );
        assert_eq!(
            r(Method::GET, "/api/v1/nodes/node-1", ""),
            req(Nodes, Get, None, Some("node-1"))
        );
    }

    /// Nodes are cluster-scoped: no path inside a namespace reaches them.
    #[test]
    fn nodes_route_only_at_the_cluster_scope() {
        assert_eq!(
            r(Method::GET, "/api/v1/namespaces/a/nodes/n", ""),
            Route::Unknown
        );
        assert_eq!(
            r(Method::GET, "/api/v1/namespaces/a/nodes", ""),
            Route::Unknown
        );
        assert_eq!(
            r(Method::DELETE, "/api/v1/nodes/n", ""),
            req(Resource::Nodes, Verb::Delete, None, Some("n"))
        );
    }

    /// Discovery paths route to discovery; unknown shapes and unserved methods are told apart.
    #[test]
    fn discovery_unknown_and_unserved_methods() {
        assert_eq!(r(Method::GET, "/api", ""), Route::CoreVersions);
        assert_eq!(r(Method::GET, "/api/v1", ""), Route::CoreResources);
        assert_eq!(r(Method::GET, "/api/v1/", ""), Route::CoreResources);
        assert_eq!(r(Method::GET, "/apis", ""), Route::Groups);
        assert_eq!(r(Method::GET, "/version", ""), Route::Version);
        assert_eq!(r(Method::GET, "/openapi/v2", ""), Route::Unknown);
        assert_eq!(
            r(Method::GET, "/api/v1/namespaces/a/configmaps", ""),
            Route::Unknown
        );
        assert_eq!(
            r(Method::GET, "/api/v1/namespaces/a/pods/p/exec", ""),
            Route::Unknown
        );
        assert_eq!(
            r(Method::GET, "/api/v1/namespaces/a/pods/p/log", ""),
            Route::PodLog {
                namespace: "a".to_owned(),
                name: "p".to_owned()
            }
        );
        assert_eq!(
            r(Method::PUT, "/api/v1/namespaces/a/secrets/s", ""),
            req(Resource::Secrets, Verb::Update, Some("a"), Some("s"))
        );
        assert_eq!(
            r(Method::PATCH, "/api/v1/namespaces/a/pods/p", ""),
            req(Resource::Pods, Verb::Patch, Some("a"), Some("p"))
        );
        assert_eq!(
            r(Method::POST, "/api/v1/namespaces/a/pods/p", ""),
            Route::MethodNotAllowed
        );
        assert_eq!(r(Method::POST, "/api/v1/pods", ""), Route::MethodNotAllowed);
        assert_eq!(r(Method::POST, "/api", ""), Route::Unknown);
    }

    /// Query decoding handles kube's leading `&`, `%XX`, `+` and repeated keys (first wins).
    #[test]
    fn query_decoding() {
        let q = Query::parse("&labelSelector=app%3Dweb%2Ctier+in+%28a%29&limit=2&limit=3&flag");
        assert_eq!(q.get("labelSelector"), Some("app=web,tier in (a)"));
        assert_eq!(q.get("limit"), Some("2"));
        assert_eq!(q.get("flag"), Some(""));
        assert_eq!(q.non_empty("flag"), None);
        assert_eq!(q.get("absent"), None);
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%41"), "%zzA");
    }

    /// Boolean query parameters accept the spellings the apiserver accepts.
    #[test]
    fn watch_flag_spellings() {
        for yes in ["watch=true", "watch=1"] {
            assert!(Query::parse(yes).is_watch(), "{yes}");
        }
        for no in ["watch=false", "watch=0", "watch=", "", "watch=yes"] {
            assert!(!Query::parse(no).is_watch(), "{no}");
        }
    }
}
