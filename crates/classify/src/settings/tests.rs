//! Parsing and comparing recorded settings.

use super::*;

/// A changed digest, a setting set on one side only, and equal ones: only the first two are
/// named, sorted, and labelled by flag.
#[test]
fn differing_digests_and_one_sided_settings_are_named() {
    let recorded = "cpu-limit=aa,image=11,node-selector=33";
    let desired = "cpu-limit=aa,image=22,toleration=44";
    assert_eq!(
        differing_settings(Some(recorded), desired),
        SettingsDiff::Named(vec![
            "image".into(),
            "node-selector".into(),
            "toleration".into()
        ])
    );
    assert_eq!(
        differing_settings(Some(recorded), recorded),
        SettingsDiff::Named(Vec::new())
    );
    let labels: Vec<String> = ["image", "env-keys", "template", "grace-period"]
        .iter()
        .map(|n| setting_label(n))
        .collect();
    assert_eq!(
        labels,
        [
            "--image",
            "the environment's keys (--env, --env-file)",
            "the pod template version (a newer apiary)",
            "--grace-period"
        ]
    );
}

/// No annotation, or one not in the `name=digest` form, is unrecorded; an empty one records
/// no setting.
#[test]
fn missing_or_malformed_records_are_unrecorded() {
    assert_eq!(
        differing_settings(None, "image=1"),
        SettingsDiff::Unrecorded
    );
    for bad in ["image", "image=", "=1", "image=1,,cpu=2"] {
        assert_eq!(
            differing_settings(Some(bad), "image=1"),
            SettingsDiff::Unrecorded,
            "{bad:?}"
        );
    }
    assert_eq!(
        differing_settings(Some(""), "image=1"),
        SettingsDiff::Named(vec!["image".into()])
    );
}

/// Every setting a pod can record, and one this build does not know, read as a person reads
/// it: the literal labels `status` and `deploy` print, whatever declares them.
#[test]
fn every_setting_has_its_label() {
    let expected = [
        ("template", "the pod template version (a newer apiary)"),
        ("namespace", "--namespace"),
        ("image", "--image"),
        ("cpu-request", "--cpu-request"),
        ("memory-request", "--memory-request"),
        ("cpu-limit", "--cpu-limit"),
        ("memory-limit", "--memory-limit"),
        ("service-account", "--service-account"),
        ("command", "--command"),
        ("arg", "--arg"),
        ("restart-policy", "the pod's restart-policy"),
        ("grace-period", "--grace-period"),
        ("env-keys", "the environment's keys (--env, --env-file)"),
        (
            "env-from-secret-placeholder",
            "the pod's env-from-secret-placeholder",
        ),
        ("workspace", "--workspace"),
        ("run-as-user", "--run-as-user"),
        ("run-as-group", "--run-as-group"),
        ("node-selector", "--node-selector"),
        ("toleration", "--toleration"),
        ("workspace-size-limit", "--workspace-size-limit"),
        ("ephemeral-storage-request", "--ephemeral-storage-request"),
        ("ephemeral-storage-limit", "--ephemeral-storage-limit"),
        ("active-deadline-seconds", "--active-deadline-seconds"),
        ("setup-pending", "--setup-pending"),
        ("runtime-class", "--runtime-class"),
        ("priority-class", "--priority-class"),
        ("resource", "--resource"),
        ("image-pull-secret", "--image-pull-secret"),
        ("label", "--label"),
        ("annotation", "--annotation"),
        ("env-from-secret", "--env-from-secret"),
        ("env-secret", "--env-secret"),
        ("isolate", "--isolate"),
        ("allow-egress", "--allow-egress"),
        ("workspace-size", "--workspace-size"),
        ("overrides", "--overrides"),
        ("from-a-newer-apiary", "--from-a-newer-apiary"),
    ];
    for (name, label) in expected {
        assert_eq!(setting_label(name), label, "{name}");
    }
}

/// The declaration names each setting, member and flag once, and a setting of one flag with
/// no description of its own is named like that flag (so its label is the flag).
#[test]
fn the_declaration_names_each_setting_member_and_flag_once() {
    let mut names = std::collections::BTreeSet::new();
    let mut members = Vec::new();
    for setting in SETTINGS {
        assert!(names.insert(setting.name), "{} twice", setting.name);
        assert!(!members.contains(&setting.member), "{:?}", setting.member);
        members.push(setting.member);
        if setting.what.is_none() && !setting.flags.is_empty() {
            assert_eq!(setting.flags, [setting.name]);
        }
    }
    let mut flags = std::collections::BTreeSet::new();
    for flag in deploy_flags() {
        assert!(flags.insert(flag), "--{flag} declared twice");
        assert!(!flag.starts_with('-') && !flag.is_empty(), "{flag:?}");
    }
    // Every flag of the declaration, the settings' first and then the unhashed ones, and no other.
    let declared: Vec<&str> = SETTINGS
        .iter()
        .flat_map(|setting| setting.flags.iter().copied())
        .chain(UNHASHED.iter().map(|unhashed| unhashed.flag))
        .collect();
    assert_eq!(deploy_flags().collect::<Vec<_>>(), declared);
    for flag in ["image", "cpu-limit", "env", "timeout", "ttl", "replace"] {
        assert!(flags.contains(flag), "--{flag} is a deploy flag");
    }
}

/// A file's key is its flag in camelCase.
#[test]
fn a_key_is_its_flag_in_camel_case() {
    for (flag, key) in [
        ("image", "image"),
        ("cpu-limit", "cpuLimit"),
        ("image-pull-secret", "imagePullSecret"),
        ("ephemeral-storage-request", "ephemeralStorageRequest"),
    ] {
        assert_eq!(camel_case_key(flag), key);
    }
}
