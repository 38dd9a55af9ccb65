//! Naming what differs (deploy.md § Naming what differs): the pod records, beside its create
//! intent, one short digest per setting of the intent's template under
//! [`ANNOTATION_INTENT_SETTINGS`]; comparing the recorded digests with a configuration's names
//! the settings that differ, by their flags, never a value.
//!
//! Pure: the shell computes the digests (`apiary-substrate`'s intent module) and reads the
//! annotation; this module only parses and compares. The fingerprint alone still decides
//! whether the intent differs; the settings only name how.

use std::collections::BTreeMap;

/// The pod annotation holding `name=digest` pairs, comma-separated, sorted by name.
pub const ANNOTATION_INTENT_SETTINGS: &str = "apiary.dev/intent-settings";

/// How a pod's recorded settings compare with a configuration's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SettingsDiff {
    /// The settings whose digests differ, by name, sorted; a setting set on one side only
    /// counts. Empty when the digests agree although the fingerprints do not.
    Named(Vec<String>),
    /// The pod records no settings (created before they were recorded, or by another binding)
    /// or records them in a form this build cannot read.
    Unrecorded,
}

/// The `name=digest` pairs of `text`, or `None` when it is not in that form.
fn parse(text: &str) -> Option<BTreeMap<&str, &str>> {
    if text.is_empty() {
        return Some(BTreeMap::new());
    }
    text.split(',')
        .map(|pair| {
            let (name, digest) = pair.split_once('=')?;
            (!name.is_empty() && !digest.is_empty()).then_some((name, digest))
        })
        .collect()
}

/// Compare the settings a pod recorded (`recorded`, the annotation's value) with the desired
/// ones (`desired`, in the same form).
pub fn differing_settings(recorded: Option<&str>, desired: &str) -> SettingsDiff {
    let (Some(recorded), Some(desired)) = (recorded.and_then(parse), parse(desired)) else {
        return SettingsDiff::Unrecorded;
    };
    let mut names: Vec<String> = recorded
        .keys()
        .chain(desired.keys())
        .filter(|name| recorded.get(*name) != desired.get(*name))
        .map(|name| (*name).to_owned())
        .collect();
    names.sort();
    names.dedup();
    SettingsDiff::Named(names)
}

/// How a person reads a setting's name: its flag (`--image`), or what it is when no one flag
/// sets it.
pub fn setting_label(name: &str) -> String {
    match name {
        "template" => "the pod template version (a newer apiary)".to_owned(),
        "env-keys" => "the environment's keys (--env, --env-file)".to_owned(),
        "namespace" => "--namespace".to_owned(),
        "restart-policy" | "env-from-secret-placeholder" => format!("the pod's {name}"),
        other => format!("--{other}"),
    }
}

#[cfg(test)]
mod tests;
