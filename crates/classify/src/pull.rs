//! Pull failures (deploy.md § Pull-failure classifier and Secret settling, § Pull-failure report
//! text): which kubelet pull messages mean "this will never heal", and the text a person reads.
//!
//! Pure: no Kubernetes types, no clock, no I/O. The kubelet's raw message is an input to the
//! classifier only; it never reaches any text produced here, because it can echo credentials.

use std::fmt;

/// A pull failure that will not heal on its own. Reporting only: it never authorises a delete,
/// which is why it appears only in `Action::Report` and never in a destructive variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PullFailure {
    /// The nodes may not pull the image (401/403, denied, authentication required).
    Unauthorized,
    /// The registry has no such manifest or repository.
    ManifestUnknown,
    /// The image has no variant for the nodes' platform.
    ArchMismatch,
}

impl PullFailure {
    /// Every kind, for exhaustive tests.
    pub const ALL: [PullFailure; 3] = [
        PullFailure::Unauthorized,
        PullFailure::ManifestUnknown,
        PullFailure::ArchMismatch,
    ];
}

/// The substrings of each rule but the status-code one, tested on the lower-cased message with
/// every image reference and digest removed, in this order; the first match wins. Platform
/// mismatch comes first because containerd reports it as "no match for platform in manifest:
/// not found", which the `not found` of the manifest rule would otherwise claim.
const RULES: [(PullFailure, &[&str]); 3] = [
    (
        PullFailure::ArchMismatch,
        &["no match for platform", "no matching manifest"],
    ),
    (
        PullFailure::Unauthorized,
        &["unauthorized", "denied", "authentication required"],
    ),
    (
        PullFailure::ManifestUnknown,
        &[
            "manifest unknown",
            "manifest_unknown",
            "not found",
            "repository does not exist",
        ],
    ),
];

/// The HTTP status codes that mean the nodes may not pull, matched only as whole numbers.
const DENIED_CODES: [&str; 2] = ["401", "403"];

/// The digest algorithm prefix every pinned reference carries.
const DIGEST_PREFIX: &str = "sha256:";
/// The hex digits of a sha256 digest.
const DIGEST_HEX_LEN: usize = 64;

/// Classify a kubelet pull-waiting message (`ErrImagePull`/`ImagePullBackOff`) for a pod whose
/// container runs `image` (deploy.md § Pull-failure classifier and Secret settling). `None`
/// means the failure may heal (for example `dial tcp: i/o timeout`) and the pod counts as
/// recoverable.
///
/// The message is lower-cased and stripped of every image reference and digest before any rule
/// is tested, because a 64-hex digest contains `401` or `403` about 3 % of the time and an image
/// name can contain any rule's word.
pub fn classify_pull_message(message: &str, image: &str) -> Option<PullFailure> {
    let text = strip_references(&message.to_lowercase(), &image.to_lowercase());
    RULES
        .iter()
        .find(|(kind, needles)| {
            needles.iter().any(|n| text.contains(n))
                || (*kind == PullFailure::Unauthorized && has_denied_code(&text))
        })
        .map(|(kind, _)| *kind)
}

/// `text` (already lower-case) without the configured `image`, without every double-quoted
/// reference (a quoted run with no whitespace: `image "x"`, `reference "x"`, a quoted URL),
/// without every `name@sha256:<hex>` and without every remaining `sha256:<hex>`. Each removal
/// leaves a space, so the pieces around it never join into a new word or number.
fn strip_references(text: &str, image: &str) -> String {
    let text = if image.is_empty() {
        text.to_owned()
    } else {
        text.replace(image, " ")
    };
    strip_digests(&strip_quoted(&text))
}

/// Remove every double-quoted run that holds no whitespace (a repeated reference), quotes
/// included. A quoted run with whitespace is prose and stays, quotes and all.
fn strip_quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('"') {
        let (before, from_quote) = rest.split_at(open);
        out.push_str(before);
        let inner = &from_quote[1..];
        match inner.find('"') {
            Some(close) if !inner[..close].contains(char::is_whitespace) => {
                out.push(' ');
                rest = &inner[close + 1..];
            }
            _ => {
                out.push('"');
                rest = inner;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Whether `c` can be part of an image name (`registry:5000/team/agent_x.y-z`).
fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/' | ':')
}

/// Remove every `sha256:<hex>` (up to the 64 hex digits of a digest) together with the `name@`
/// that may precede it.
fn strip_digests(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(DIGEST_PREFIX) {
        let (before, from_digest) = rest.split_at(at);
        let kept = match before.strip_suffix('@') {
            Some(named) => named.trim_end_matches(is_name_char),
            None => before,
        };
        out.push_str(kept);
        out.push(' ');
        let hex = &from_digest[DIGEST_PREFIX.len()..];
        let digits = hex
            .bytes()
            .take(DIGEST_HEX_LEN)
            .take_while(u8::is_ascii_hexdigit)
            .count();
        rest = &hex[digits..];
    }
    out.push_str(rest);
    out
}

/// Whether `text` holds `401` or `403` as a whole number: not touching a letter or digit on
/// either side (`: 401 unauthorized`, `status 403`), so digits inside a hash or a longer number
/// never count.
fn has_denied_code(text: &str) -> bool {
    DENIED_CODES.iter().any(|code| {
        text.match_indices(code).any(|(at, _)| {
            let before = text[..at].chars().next_back();
            let after = text[at + code.len()..].chars().next();
            !before.is_some_and(|c| c.is_ascii_alphanumeric())
                && !after.is_some_and(|c| c.is_ascii_alphanumeric())
        })
    })
}

/// The registry named by a normalized image reference: the first path component when it contains
/// `.` or `:` or is `localhost`; `None` when the reference names no registry (the default one).
pub fn registry_of(image: &str) -> Option<&str> {
    // The digest contains a `:`, so only the repository part before `@` is looked at.
    let name = image.split('@').next().unwrap_or(image);
    let (first, _rest) = name.split_once('/')?;
    (first.contains('.') || first.contains(':') || first == "localhost").then_some(first)
}

/// The pull-failure report text for `kind` and the configured `image` (deploy.md § Pull-failure
/// report text). Never contains the kubelet's message.
pub fn pull_failure_text(kind: PullFailure, image: &str) -> String {
    PullReport { kind, image }.to_string()
}

/// Display adapter for [`pull_failure_text`].
struct PullReport<'a> {
    kind: PullFailure,
    image: &'a str,
}

impl fmt::Display for PullReport<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let image = self.image;
        let registry = registry_of(image).unwrap_or("the default registry");
        match self.kind {
            PullFailure::Unauthorized => write!(
                f,
                "the cluster is not authorized to pull {image} from {registry}; this retries \
                 indefinitely and will not succeed on its own; grant the nodes access to that \
                 registry (or attach an image pull secret to the service account)"
            ),
            PullFailure::ManifestUnknown => write!(
                f,
                "{registry} has no image at {image}; check the digest and repository"
            ),
            PullFailure::ArchMismatch => write!(
                f,
                "{image} has no variant for the architecture of the nodes it was scheduled on"
            ),
        }
    }
}

#[cfg(test)]
mod tests;
