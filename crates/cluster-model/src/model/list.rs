//! Lists: [`ListOptions`] (selectors, `limit`, `continue`), one [`ListPage`] of an answer, and the
//! paging rule: pages over the stored keys in order, with opaque continue tokens that remember
//! the list's resourceVersion and expire (410 `Expired`) once the compaction horizon passes it.
//!
//! Layer: part of the pure model. It reads the objects it is given and nothing else; it stores
//! nothing and reads no clock.

use std::fmt::Write as _;

use super::store::{Key, Stored};
use crate::error::ModelError;
use crate::selector::{FieldSelector, HasFields, LabelSelector};

/// List parameters (the query of a list request).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListOptions {
    /// `labelSelector`.
    pub label_selector: Option<String>,
    /// `fieldSelector`.
    pub field_selector: Option<String>,
    /// `limit`; `None` or 0 = everything.
    pub limit: Option<u64>,
    /// `continue`: a token from a previous page.
    pub continue_token: Option<String>,
}

/// One page of a list answer.
#[derive(Clone, Debug, PartialEq)]
pub struct ListPage<T> {
    /// The objects, ordered by namespace then name.
    pub items: Vec<T>,
    /// `metadata.resourceVersion` of the list: the counter when the first page was served.
    pub resource_version: String,
    /// `metadata.continue`: present when more items match; opaque.
    pub continue_token: Option<String>,
    /// `metadata.remainingItemCount`: how many matching items follow this page.
    pub remaining_item_count: Option<i64>,
}

/// The model's counters a page depends on.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Snapshot {
    /// The resourceVersion counter now (a first page's list resourceVersion).
    pub(crate) counter: u64,
    /// The compaction horizon: a token from below it has expired.
    pub(crate) horizon: u64,
}

/// The page `options` asks for out of `all` (every stored object of the kind in the listed
/// namespaces, in key order).
///
/// # Errors
/// `BadRequest` for a malformed selector or continue token; `Expired` for a compacted token.
pub(crate) fn page<'a, T: Stored + 'a>(
    all: impl Iterator<Item = (&'a Key, &'a T)>,
    options: &ListOptions,
    snapshot: Snapshot,
) -> Result<ListPage<T>, ModelError> {
    let labels = LabelSelector::parse(options.label_selector.as_deref().unwrap_or(""))?;
    let fields = FieldSelector::parse(
        <T as HasFields>::KIND,
        options.field_selector.as_deref().unwrap_or(""),
    )?;
    let (list_rv, after) = match options.continue_token.as_deref() {
        Some(token) if !token.is_empty() => {
            let (rv, key) = decode_continue(token, snapshot.horizon)?;
            (rv, Some(key))
        }
        _ => (snapshot.counter, None),
    };
    let keys: Vec<(&Key, &T)> = all
        .filter(|(k, _)| after.as_ref().is_none_or(|a| *k > a))
        .collect();
    let matching: Vec<(&Key, &T)> = keys
        .iter()
        .filter(|(_, o)| labels.matches(o.meta().labels.as_ref()) && fields.matches(*o))
        .copied()
        .collect();
    let limit = options
        .limit
        .filter(|l| *l > 0)
        .and_then(|l| usize::try_from(l).ok());
    let (taken, rest) = match limit {
        Some(l) if l < matching.len() => matching.split_at(l),
        _ => (matching.as_slice(), &[][..]),
    };
    // The apiserver pages over the stored keys, not over the matches: a page that filled its
    // limit carries a continue token whenever any key follows it, even when none of those
    // match (the next page is then empty), as kube-apiserver v1.20 does.
    let filled = limit.is_some_and(|l| taken.len() == l);
    let continue_token = match taken.last() {
        Some((last, _)) if !rest.is_empty() || (filled && keys.iter().any(|(k, _)| k > last)) => {
            Some(hex_encode(&format!("{list_rv}/{}/{}", last.0, last.1)))
        }
        _ => None,
    };
    Ok(ListPage {
        items: taken.iter().map(|(_, o)| (*o).clone()).collect(),
        resource_version: list_rv.to_string(),
        // The apiserver counts the rest only for an unfiltered list (it cannot know how
        // many of the remaining keys a selector would match without reading them).
        remaining_item_count: continue_token
            .as_ref()
            .filter(|_| labels.requirements().is_empty() && fields.requirements().is_empty())
            .map(|_| i64::try_from(rest.len()).unwrap_or(i64::MAX)),
        continue_token,
    })
}

/// The list resourceVersion and last key a continue token carries.
fn decode_continue(token: &str, horizon: u64) -> Result<(u64, Key), ModelError> {
    let invalid = || ModelError::BadRequest {
        message: "invalid continue token: continue key is not valid: the continue token is \
                  malformed"
            .to_owned(),
    };
    let text = hex_decode(token).ok_or_else(invalid)?;
    let mut parts = text.splitn(3, '/');
    let rv: u64 = parts
        .next()
        .and_then(|r| r.parse().ok())
        .ok_or_else(invalid)?;
    let ns = parts.next().ok_or_else(invalid)?;
    let name = parts.next().ok_or_else(invalid)?;
    if rv < horizon {
        return Err(ModelError::Expired {
            message: "The provided continue parameter is too old to display a consistent \
                      list result. You can start a new list without the continue parameter, \
                      or use the continue token in this response to retrieve the remainder \
                      of the results. Continuing with the provided token results in an \
                      inconsistent list - objects that were created, modified, or deleted \
                      between the time the first chunk was returned and now may show up in \
                      the list."
                .to_owned(),
        });
    }
    Ok((rv, (ns.to_owned(), name.to_owned())))
}

fn hex_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    for b in text.bytes() {
        let _ = write!(out, "{b:02x}");
    }
    out
}

fn hex_decode(text: &str) -> Option<String> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

#[cfg(test)]
mod tests;
