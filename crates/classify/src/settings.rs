//! Naming what differs (deploy.md § Naming what differs): the pod records, beside its create
//! intent, one short digest per setting of the intent's template under
//! [`ANNOTATION_INTENT_SETTINGS`]; comparing the recorded digests with a configuration's names
//! the settings that differ, by their flags, never a value.
//!
//! It also holds the one declaration of the settings ([`SETTINGS`]: each member of the
//! template, its setting's name and the `deploy` flags that set it) and of the `deploy` flags
//! that are not the pod's shape ([`UNHASHED`]); the digests are named from it, the labels read
//! from it, and the CLI's tests check it against the command line.
//!
//! Pure: the shell computes the digests (`apiary-substrate`'s intent module) and reads the
//! annotation; this module only parses, compares and declares. The fingerprint alone still
//! decides whether the intent differs; the settings only name how.

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

/// How a person reads a setting's name: the flag that sets it (`--image`), or what it is when
/// no one flag sets it ([`Setting::label`]). A name this build does not declare (a newer
/// apiary's) reads as the flag it would be.
pub fn setting_label(name: &str) -> String {
    match SETTINGS.iter().find(|setting| setting.name == name) {
        Some(setting) => setting.label(),
        None => format!("--{name}"),
    }
}

/// Where a setting is in the create-intent template (deploy.md § Create-intent fingerprint):
/// declared with `'static` names, looked up with the names of a serialized template.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Member<Name = &'static str> {
    /// A member of the template itself, by its JSON name (`cpu_limit`).
    Template(Name),
    /// A member of the template's `pod_options` block, by its JSON name (`node_selector`).
    PodOption(Name),
}

/// One setting of the create-intent template: its name in [`ANNOTATION_INTENT_SETTINGS`], the
/// member whose value it digests, and the `deploy` flags that set it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setting {
    /// The name recorded on the pod: the flag that sets it, without its dashes, when one flag
    /// does. A wire string: renaming one makes every recorded pod name it as differing.
    pub name: &'static str,
    /// The template member its digest is taken of.
    pub member: Member,
    /// The long names (without dashes) of the `deploy` flags that set it; none for a constant
    /// of the template or an option only the buzz provider sets.
    pub flags: &'static [&'static str],
    /// What it is, for a setting that is not read as its one flag.
    pub what: Option<&'static str>,
}

impl Setting {
    /// How a person reads it: `--flag` for a setting of one flag named like it, else what it is,
    /// with the flags that set it in parentheses.
    #[must_use]
    pub fn label(&self) -> String {
        let Some(what) = self.what else {
            return format!("--{}", self.name);
        };
        if self.flags.is_empty() {
            return what.to_owned();
        }
        let flags: Vec<String> = self.flags.iter().map(|flag| format!("--{flag}")).collect();
        format!("{what} ({})", flags.join(", "))
    }
}

/// A `deploy` flag that enters no setting, with why: it is not the pod's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unhashed {
    /// The long name, without dashes.
    pub flag: &'static str,
    /// Why a new pod would not differ for it.
    pub why: &'static str,
}

/// One row of [`SETTINGS`]: a setting of one flag named like it.
macro_rules! flag {
    ($member:ident($json:literal) $name:literal) => {
        Setting {
            name: $name,
            member: Member::$member($json),
            flags: &[$name],
            what: None,
        }
    };
}

/// The settings of the create-intent template, in the template's order: the one declaration
/// of the pod shape's names (deploy.md § Naming what differs). The fingerprint's settings are
/// named from it (`apiary-substrate`'s intent module, whose tests check that every member of
/// the template is here and nothing else), their labels are read from it ([`setting_label`]),
/// and with [`UNHASHED`] it is every flag of `deploy` (the CLI's tests check it against the
/// command line, both ways), so a new flag cannot be missing from it.
pub const SETTINGS: &[Setting] = &[
    Setting {
        name: "template",
        member: Member::Template("template_version"),
        flags: &[],
        what: Some("the pod template version (a newer apiary)"),
    },
    flag!(Template("namespace") "namespace"),
    flag!(Template("image") "image"),
    flag!(Template("cpu_request") "cpu-request"),
    flag!(Template("memory_request") "memory-request"),
    flag!(Template("cpu_limit") "cpu-limit"),
    flag!(Template("memory_limit") "memory-limit"),
    flag!(Template("service_account") "service-account"),
    flag!(Template("command") "command"),
    flag!(Template("args") "arg"),
    Setting {
        name: "restart-policy",
        member: Member::Template("restart_policy"),
        flags: &[],
        what: Some("the pod's restart-policy"),
    },
    flag!(Template("termination_grace_period_seconds") "grace-period"),
    Setting {
        name: "env-keys",
        member: Member::Template("env_keys"),
        flags: &["env", "env-file"],
        what: Some("the environment's keys"),
    },
    Setting {
        name: "env-from-secret-placeholder",
        member: Member::Template("env_from_secret"),
        flags: &[],
        what: Some("the pod's env-from-secret-placeholder"),
    },
    flag!(Template("workspace_mount_path") "workspace"),
    flag!(Template("run_as_user") "run-as-user"),
    flag!(Template("run_as_group") "run-as-group"),
    flag!(PodOption("node_selector") "node-selector"),
    flag!(PodOption("tolerations") "toleration"),
    // The buzz provider's options (buzz-provider.md § 16.3): no flag of apiary sets them, and
    // a buzz pod records no settings; a name is still declared for each.
    buzz_only("workspace_size_limit", "workspace-size-limit"),
    flag!(PodOption("ephemeral_storage_request") "ephemeral-storage-request"),
    flag!(PodOption("ephemeral_storage_limit") "ephemeral-storage-limit"),
    buzz_only("active_deadline_seconds", "active-deadline-seconds"),
    buzz_only("setup_pending", "setup-pending"),
    flag!(PodOption("runtime_class") "runtime-class"),
    flag!(PodOption("priority_class") "priority-class"),
    flag!(PodOption("extended_resources") "resource"),
    flag!(PodOption("image_pull_secrets") "image-pull-secret"),
    flag!(PodOption("labels") "label"),
    flag!(PodOption("annotations") "annotation"),
    flag!(PodOption("env_from_secrets") "env-from-secret"),
    flag!(PodOption("env_secrets") "env-secret"),
    flag!(PodOption("isolate") "isolate"),
    flag!(PodOption("allow_egress") "allow-egress"),
    // Only that the pod mounts the claim (deploy.md § Create-intent fingerprint, rule 5).
    flag!(PodOption("workspace_claim") "workspace-size"),
    flag!(PodOption("overrides") "overrides"),
];

/// A buzz provider's pod option: no flag, read as the flag it would be.
const fn buzz_only(json: &'static str, name: &'static str) -> Setting {
    Setting {
        name,
        member: Member::PodOption(json),
        flags: &[],
        what: None,
    }
}

/// The flags of `deploy` that enter no setting: with [`SETTINGS`], every flag of `deploy`.
pub const UNHASHED: &[Unhashed] = &[
    Unhashed {
        flag: "storage-class",
        why: "the claim's class, which a claim never changes (a new pod mounts the same claim)",
    },
    Unhashed {
        flag: "timeout",
        why: "how long this call waits, not the pod",
    },
    Unhashed {
        flag: "replace",
        why: "what this call may do to a pod of another intent",
    },
    Unhashed {
        flag: "min-running",
        why: "when this call calls the pod started",
    },
    Unhashed {
        flag: "ttl",
        why: "the expiry annotation, which renew moves on a running pod",
    },
    Unhashed {
        flag: "kubeconfig",
        why: "which cluster is asked",
    },
    Unhashed {
        flag: "context",
        why: "which cluster is asked",
    },
    Unhashed {
        flag: "output",
        why: "the form of the result",
    },
    Unhashed {
        flag: "verbose",
        why: "the log on stderr",
    },
];

/// Every flag of `deploy` the declaration knows (long names, without dashes): the flags of
/// [`SETTINGS`], then [`UNHASHED`].
pub fn deploy_flags() -> impl Iterator<Item = &'static str> {
    let hashed = SETTINGS.iter().flat_map(|setting| setting.flags.iter());
    hashed
        .copied()
        .chain(UNHASHED.iter().map(|unhashed| unhashed.flag))
}

/// The key of a flag in a file of settings: its long name in camelCase (`cpu-limit` is
/// `cpuLimit`), so a key is never declared apart from its flag.
#[must_use]
pub fn camel_case_key(flag: &str) -> String {
    let mut words = flag.split('-');
    let mut key = words.next().unwrap_or_default().to_owned();
    for word in words {
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            key.extend(first.to_uppercase());
            key.push_str(chars.as_str());
        }
    }
    key
}

#[cfg(test)]
mod tests;
