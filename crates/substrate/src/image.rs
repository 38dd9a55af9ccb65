//! Digest-pinned image references (deploy.md § Image reference): parsing, refusal of every
//! tag-only reference, and normalization to `name@sha256:<64 hex>`.
//!
//! Pure string work: no I/O, no registry lookups. It must never accept a reference that is not
//! pinned by a lowercase sha256 digest, because the pod receives the agent's secrets.

use std::fmt;

/// The only digest algorithm accepted.
const DIGEST_PREFIX: &str = "sha256:";
/// Hex characters of a sha256 digest.
const DIGEST_HEX_CHARS: usize = 64;

/// Why an image reference was refused. Image references are not secret and are quoted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ImageError {
    /// The reference is empty or whitespace only.
    #[error("an image is required (--image): it must be digest-pinned, as name@sha256:<64 hex>")]
    Required,
    /// The reference has no `@digest`: every tag-only reference is refused.
    #[error(
        "image {reference:?} (--image) is not digest-pinned: a tag is a mutable pointer and this \
         pod receives the agent's secrets; pin it as name@sha256:<64 hex>, using the digest the \
         registry reports for the tag at the time of pinning"
    )]
    TagOnly {
        /// The refused reference (trimmed).
        reference: String,
    },
    /// The reference contains more than one `@`.
    #[error(
        "image {reference:?} (--image) contains more than one '@': write it as \
         name@sha256:<64 hex>"
    )]
    MultipleAt {
        /// The refused reference (trimmed).
        reference: String,
    },
    /// The digest does not start with `sha256:`.
    #[error(
        "image digest {digest:?} (--image) does not start with 'sha256:': only sha256 digests \
         are accepted, as name@sha256:<64 hex>"
    )]
    UnsupportedAlgorithm {
        /// The part after `@`.
        digest: String,
    },
    /// The digest is not exactly 64 lowercase hex characters after `sha256:`.
    #[error(
        "image digest {digest:?} (--image) is malformed: after 'sha256:' it must be exactly 64 \
         lowercase hex characters (uppercase is refused so a digest has one spelling)"
    )]
    MalformedDigest {
        /// The part after `@`.
        digest: String,
    },
    /// Nothing is left of the name once the tag is dropped.
    #[error(
        "image {reference:?} (--image) has no repository name: write it as name@sha256:<64 hex>"
    )]
    NoRepositoryName {
        /// The refused reference (trimmed).
        reference: String,
    },
}

/// A normalized, digest-pinned image reference: `name@sha256:<64 lowercase hex>`, tag dropped.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ImageRef {
    normalized: String,
    /// Byte length of the name part (before `@`).
    name_len: usize,
}

impl ImageRef {
    /// Parses and normalizes `reference` per deploy.md § Image reference.
    ///
    /// # Errors
    ///
    /// Returns the [`ImageError`] for the first rule broken: empty, tag-only, several `@`, a
    /// digest that is not sha256 or not 64 lowercase hex, or an empty repository name.
    pub fn parse(reference: &str) -> Result<Self, ImageError> {
        let reference = reference.trim();
        if reference.is_empty() {
            return Err(ImageError::Required);
        }
        let mut parts = reference.split('@');
        let (Some(name), Some(digest)) = (parts.next(), parts.next()) else {
            return Err(ImageError::TagOnly {
                reference: reference.to_owned(),
            });
        };
        if parts.next().is_some() {
            return Err(ImageError::MultipleAt {
                reference: reference.to_owned(),
            });
        }
        let Some(hex) = digest.strip_prefix(DIGEST_PREFIX) else {
            return Err(ImageError::UnsupportedAlgorithm {
                digest: digest.to_owned(),
            });
        };
        let lower_hex = hex.len() == DIGEST_HEX_CHARS
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if !lower_hex {
            return Err(ImageError::MalformedDigest {
                digest: digest.to_owned(),
            });
        }
        let name = drop_tag(name);
        if name.is_empty() {
            return Err(ImageError::NoRepositoryName {
                reference: reference.to_owned(),
            });
        }
        Ok(Self {
            normalized: format!("{name}@{digest}"),
            name_len: name.len(),
        })
    }

    /// The normalized reference `name@sha256:<hex>`.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.normalized
    }

    /// The repository name, without tag or digest.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.normalized[..self.name_len]
    }

    /// The digest, `sha256:<64 hex>`.
    #[must_use]
    pub fn digest(&self) -> &str {
        &self.normalized[self.name_len + 1..]
    }
}

impl fmt::Display for ImageRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.normalized)
    }
}

impl std::str::FromStr for ImageRef {
    type Err = ImageError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// Drops a trailing `:tag`: the last `:segment` goes only if it contains no `/`, so a registry
/// port (`host:5000/x`) survives.
fn drop_tag(name: &str) -> &str {
    match name.rsplit_once(':') {
        Some((head, tail)) if !tail.contains('/') => head,
        _ => name,
    }
}

#[cfg(test)]
mod tests;
