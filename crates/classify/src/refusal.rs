//! What refused a request (deploy.md § Who refused it): a `403 Forbidden` is not always a missing
//! role. The API server's message says which authority refused: RBAC, or an admission plugin
//! (ResourceQuota, LimitRanger, a webhook, PodSecurity), or an admission plugin whose own lookup
//! failed (transient). Read from the upstream message formats of kube-apiserver.
//!
//! Pure: text in, a value out. Nothing here decides what to do; the shell words the fix.

use crate::failure::RequestFailure;
use crate::workspace::quantity_value;

/// The admission plugin a refusal names, where known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plugin {
    /// `ResourceQuota`.
    ResourceQuota,
    /// `LimitRanger`.
    LimitRanger,
    /// A validating or mutating admission webhook.
    Webhook,
    /// `PodSecurity` (Kubernetes 1.23 and later).
    PodSecurity,
}

impl Plugin {
    /// The plugin's name as the API server's configuration spells it (`webhook` for webhooks).
    pub fn as_str(self) -> &'static str {
        match self {
            Plugin::ResourceQuota => "ResourceQuota",
            Plugin::LimitRanger => "LimitRanger",
            Plugin::Webhook => "webhook",
            Plugin::PodSecurity => "PodSecurity",
        }
    }
}

/// One resource of a quota refusal: `limits.memory=128Mi`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuotaFigure {
    /// The quota resource (`limits.memory`, `requests.cpu`, `pods`, ...).
    pub resource: String,
    /// The quantity, as the server wrote it.
    pub quantity: String,
}

/// What refused a request, read from the API server's message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// RBAC: `User "<user>" cannot <verb> resource "<resource>" …`.
    Rbac {
        /// The user the server named.
        user: String,
        /// The verb refused.
        verb: String,
        /// The resource refused.
        resource: String,
    },
    /// ResourceQuota: `exceeded quota: <name>, requested: …, used: …, limited: …`.
    Quota {
        /// The quota's name.
        name: String,
        /// What the request asked for.
        requested: Vec<QuotaFigure>,
        /// What the namespace already uses.
        used: Vec<QuotaFigure>,
        /// The quota's limits.
        limited: Vec<QuotaFigure>,
    },
    /// LimitRanger: one or more bounds, each `<minimum|maximum> <resource> usage per
    /// <Container|Pod> is <bound>, but <limit|request> is <value>` or the ratio form.
    LimitRange {
        /// The bounds broken, as the server wrote them.
        bounds: Vec<String>,
    },
    /// A webhook: `admission webhook "<name>" denied the request: <message>`.
    Webhook {
        /// The webhook's name.
        name: String,
        /// Its message, as it gave it.
        message: String,
    },
    /// PodSecurity: `violates PodSecurity "<level>:<version>": <fields>`.
    PodSecurity {
        /// The level (`baseline`, `restricted`).
        level: String,
        /// The version (`latest`, `v1.25`).
        version: String,
        /// What violates it.
        detail: String,
    },
    /// An admission plugin's own lookup failed (`Get "…": dial tcp …`, `connection refused`,
    /// `i/o timeout`, `context deadline exceeded`): the refusal says nothing about the request,
    /// and a retry may be admitted.
    Transient,
    /// None of these: the API server's own words, with no guess.
    Other,
}

impl Refusal {
    /// For a quota refusal, whether the request alone asks more than the quota allows for some
    /// resource (it can never fit), as against not fitting beside what is already used (it fits
    /// once that is freed); `false` for any other refusal (deploy.md § Who refused it).
    pub fn exceeds_quota(&self) -> bool {
        let Refusal::Quota {
            requested, limited, ..
        } = self
        else {
            return false;
        };
        requested.iter().any(|r| {
            limited.iter().any(|l| {
                l.resource == r.resource
                    && matches!(
                        (quantity_value(&r.quantity), quantity_value(&l.quantity)),
                        (Some(r), Some(l)) if r > l
                    )
            })
        })
    }

    /// Who refused: `rbac`, `admission`, or `apiserver` for the rest (the `-o json` field).
    pub fn refused_by(&self) -> &'static str {
        match self {
            Refusal::Rbac { .. } => "rbac",
            Refusal::Quota { .. }
            | Refusal::LimitRange { .. }
            | Refusal::Webhook { .. }
            | Refusal::PodSecurity { .. }
            | Refusal::Transient => "admission",
            Refusal::Other => "apiserver",
        }
    }

    /// Who refused, in words for an answer that has no fields for it (the buzz provider's
    /// `error`): `a missing role (RBAC)`, `the ResourceQuota "tight"`, `the LimitRanger`,
    /// `the admission webhook "<name>"`, `PodSecurity "<level>:<version>"`, `an admission
    /// plugin whose own lookup failed (transient)`, or `the API server`.
    pub fn authority(&self) -> String {
        match self {
            Refusal::Rbac { .. } => "a missing role (RBAC)".to_owned(),
            Refusal::Quota { name, .. } => format!("the ResourceQuota \"{name}\""),
            Refusal::LimitRange { .. } => {
                "the LimitRanger (a LimitRange of the namespace)".to_owned()
            }
            Refusal::Webhook { name, .. } => format!("the admission webhook \"{name}\""),
            Refusal::PodSecurity { level, version, .. } => {
                format!("PodSecurity \"{level}:{version}\"")
            }
            Refusal::Transient => {
                "an admission plugin whose own lookup failed (transient)".to_owned()
            }
            Refusal::Other => "the API server".to_owned(),
        }
    }

    /// The admission plugin, where known.
    pub fn plugin(&self) -> Option<Plugin> {
        match self {
            Refusal::Quota { .. } => Some(Plugin::ResourceQuota),
            Refusal::LimitRange { .. } => Some(Plugin::LimitRanger),
            Refusal::Webhook { .. } => Some(Plugin::Webhook),
            Refusal::PodSecurity { .. } => Some(Plugin::PodSecurity),
            Refusal::Rbac { .. } | Refusal::Transient | Refusal::Other => None,
        }
    }
}

/// What refused `failure`, read from the server's words: for a `403 Forbidden` that no machine
/// explained already (a missing named service account carries its own hint); `None` for any
/// other failure.
pub fn refusal_of(failure: &RequestFailure) -> Option<Refusal> {
    (failure.code() == Some(403) && failure.hint().is_none())
        .then(|| read_refusal(failure.server_message().unwrap_or_default()))
}

/// Read a `403 Forbidden`'s message (the `Status.message`, which usually starts `<kind> "<name>"
/// is forbidden: `).
pub fn read_refusal(message: &str) -> Refusal {
    let body = message
        .split_once(" is forbidden: ")
        .map_or(message, |(_, rest)| rest)
        .trim();
    if let Some(refusal) = rbac(body) {
        return refusal;
    }
    if let Some(rest) = body.strip_prefix("exceeded quota: ") {
        return quota(rest).unwrap_or(Refusal::Other);
    }
    if let Some((name, message)) = find_after(body, "admission webhook \"")
        .and_then(|rest| rest.split_once("\" denied the request"))
    {
        return Refusal::Webhook {
            name: name.to_owned(),
            message: message.trim_start_matches(':').trim().to_owned(),
        };
    }
    if let Some((profile, detail)) =
        find_after(body, "violates PodSecurity \"").and_then(|rest| rest.split_once("\":"))
    {
        let (level, version) = profile.split_once(':').unwrap_or((profile, "latest"));
        return Refusal::PodSecurity {
            level: level.to_owned(),
            version: version.to_owned(),
            detail: detail.trim().to_owned(),
        };
    }
    if transient(body) {
        return Refusal::Transient;
    }
    let bounds = limit_bounds(body);
    if !bounds.is_empty() {
        return Refusal::LimitRange { bounds };
    }
    Refusal::Other
}

/// `User "<user>" cannot <verb> resource "<resource>" …`, with or without RBAC's `: RBAC: …`
/// suffix; a service account is a user too (`system:serviceaccount:ns:sa`).
fn rbac(body: &str) -> Option<Refusal> {
    let rest = body.strip_prefix("User \"")?;
    let (user, rest) = rest.split_once("\" cannot ")?;
    let (verb, rest) = rest.split_once(" resource \"")?;
    let (resource, _) = rest.split_once('"')?;
    Some(Refusal::Rbac {
        user: user.to_owned(),
        verb: verb.to_owned(),
        resource: resource.to_owned(),
    })
}

/// `<name>, requested: a=1,b=2, used: a=0,b=0, limited: a=1,b=1`.
fn quota(rest: &str) -> Option<Refusal> {
    let (name, rest) = rest.split_once(", requested: ")?;
    let (requested, rest) = rest.split_once(", used: ")?;
    let (used, limited) = rest.split_once(", limited: ")?;
    let figures = |text: &str| -> Vec<QuotaFigure> {
        text.split(',')
            .filter_map(|pair| pair.trim().split_once('='))
            .map(|(resource, quantity)| QuotaFigure {
                resource: resource.to_owned(),
                quantity: quantity.to_owned(),
            })
            .collect()
    };
    Some(Refusal::Quota {
        name: name.trim().to_owned(),
        requested: figures(requested),
        used: figures(used),
        limited: figures(limited.trim()),
    })
}

/// The LimitRanger bounds in `body`: its messages `minimum … usage per … is …, but … is …`,
/// `maximum …` and `… max limit to request ratio per … is …, but provided ratio is …`, one or
/// several, in brackets or not.
fn limit_bounds(body: &str) -> Vec<String> {
    let inner = body.trim().trim_start_matches('[').trim_end_matches(']');
    let mut bounds = Vec::new();
    let mut rest = inner;
    while let Some(start) = ["minimum ", "maximum ", " max limit to request ratio per "]
        .iter()
        .filter_map(|needle| rest.find(needle).map(|at| (at, *needle)))
        .min()
    {
        // The ratio form starts with its resource: back up to the start of that word.
        let (at, needle) = start;
        let begin = if needle.starts_with(' ') {
            rest[..at].rfind([' ', '[', ',']).map_or(0, |i| i + 1)
        } else {
            at
        };
        let tail = &rest[begin..];
        let Some(but) = tail.find(", but ") else {
            break;
        };
        let after = &tail[but + ", but ".len()..];
        let end = after.find(", ").map_or(after.len(), |i| i);
        let bound = &tail[..but + ", but ".len() + end];
        if !(bound.contains(" per Container is ") || bound.contains(" per Pod is ")) {
            break;
        }
        bounds.push(bound.to_owned());
        rest = &after[end..];
    }
    bounds
}

/// An admission plugin's own request failing, which says nothing about the refused request.
fn transient(body: &str) -> bool {
    let lookup = body.starts_with("Get \"") || body.contains("failed calling webhook");
    lookup
        && [
            "dial tcp",
            "connection refused",
            "i/o timeout",
            "context deadline exceeded",
            "connection reset",
            "EOF",
        ]
        .iter()
        .any(|needle| body.contains(needle))
}

fn find_after<'a>(text: &'a str, needle: &str) -> Option<&'a str> {
    text.find(needle).map(|at| &text[at + needle.len()..])
}

#[cfg(test)]
mod tests;
