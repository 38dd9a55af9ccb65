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

/// The substrings of each rule, tested on the lower-cased message in this order; first match wins.
const RULES: [(PullFailure, &[&str]); 3] = [
    (
        PullFailure::Unauthorized,
        &[
            "401",
            "unauthorized",
            "403",
            "denied",
            "authentication required",
        ],
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
    (
        PullFailure::ArchMismatch,
        &["no match for platform", "no matching manifest"],
    ),
];

/// Classify a kubelet pull-waiting message (`ErrImagePull`/`ImagePullBackOff`). `None` means the
/// failure may heal (for example `dial tcp: i/o timeout`) and the pod counts as recoverable.
pub fn classify_pull_message(message: &str) -> Option<PullFailure> {
    let lower = message.to_lowercase();
    RULES
        .iter()
        .find(|(_, needles)| needles.iter().any(|n| lower.contains(n)))
        .map(|(kind, _)| *kind)
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
