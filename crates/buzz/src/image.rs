//! The image reference rules of the buzz binding (buzz-provider.md § 3.4): every image must be
//! digest-pinned, because the pod runs with the agent's private key; the normalized form
//! `name@sha256:<64 hex>` is what the pod and the create-intent fingerprint use.
//!
//! Pure. These are the binding's own rules and messages, distinct from apiary's native
//! `apiary_substrate::image` (which accepts tags); must not accept any tag-only reference.

/// Why an image reference was refused; each `Display` is the exact wire message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ImageError {
    /// Empty or whitespace only.
    #[error(
        "provider_config.image is required: no image is assumed at parse time, so the \
         digest-pinned image to run must be given explicitly"
    )]
    Missing,
    /// No `@`: a tag (or nothing) alone.
    #[error(
        "provider_config.image {0:?} is not digest-pinned: a tag is a mutable pointer, and this \
         object runs with the agent's private key. Use name@sha256:<64 hex chars>"
    )]
    NotPinned(String),
    /// More than one `@`.
    #[error("provider_config.image {0:?} contains more than one '@'")]
    SeveralDigests(String),
    /// The digest is not a `sha256:` digest.
    #[error("provider_config.image digest {0:?} must start with 'sha256:'")]
    NotSha256(String),
    /// The digest's hex is not 64 lowercase hex characters.
    #[error("provider_config.image digest {0:?} must be exactly 64 lowercase hex characters")]
    BadHex(String),
    /// Nothing is left of the name once a tag is dropped.
    #[error("provider_config.image {0:?} has no repository name")]
    NoRepository(String),
}

/// Parse and normalize an image reference: trim, require exactly one `@sha256:<64 lowercase
/// hex>`, drop a tag from the name (its last `:segment`, only when that segment has no `/`, so a
/// registry port stays), and answer `name@sha256:<hex>`.
///
/// # Errors
///
/// [`ImageError`], checked in the order of the rules.
pub fn parse(input: &str) -> Result<String, ImageError> {
    let reference = input.trim();
    if reference.is_empty() {
        return Err(ImageError::Missing);
    }
    let mut parts = reference.split('@');
    let (Some(name), Some(digest)) = (parts.next(), parts.next()) else {
        return Err(ImageError::NotPinned(reference.to_owned()));
    };
    if parts.next().is_some() {
        return Err(ImageError::SeveralDigests(reference.to_owned()));
    }
    let Some(hex) = digest.strip_prefix("sha256:") else {
        return Err(ImageError::NotSha256(digest.to_owned()));
    };
    // Uppercase is refused so that one digest has exactly one spelling (and one fingerprint).
    if hex.len() != 64 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(ImageError::BadHex(digest.to_owned()));
    }
    let name = match name.rsplit_once(':') {
        Some((repository, tag)) if !tag.contains('/') => repository,
        _ => name,
    };
    if name.is_empty() {
        return Err(ImageError::NoRepository(reference.to_owned()));
    }
    Ok(format!("{name}@sha256:{hex}"))
}

#[cfg(test)]
mod tests;
