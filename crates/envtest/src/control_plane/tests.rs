//! Unit tests of the control plane's pure helpers; the real-server tests live in
//! `crates/envtest/tests/control_plane.rs`.

use super::lifecycle::*;
use super::logs::log_tail;
use super::options::Identity;

/// The tail keeps the last lines in order, and says why when the file is missing.
#[test]
fn log_tail_keeps_the_last_lines() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.log");
    std::fs::write(&path, "1\n2\n3\n4\n").unwrap();
    assert_eq!(log_tail(&path, 2), "3\n4");
    assert_eq!(log_tail(&path, 10), "1\n2\n3\n4");
    assert!(log_tail(&dir.path().join("missing"), 2).starts_with("(cannot read "));
}

/// Free ports come out distinct and non-zero.
#[test]
fn free_ports_are_distinct() {
    let [a, b, c] = free_ports::<3>().unwrap();
    assert!(a != 0 && b != 0 && c != 0);
    assert!(a != b && b != c && a != c);
}

/// Tokens are 32 hex digits and differ from call to call.
#[test]
fn tokens_are_fresh_hex() {
    let (a, b) = (random_token(), random_token());
    assert_eq!(a.len(), 32);
    assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
    assert_ne!(a, b);
}

/// Only a bind collision is retried on another port.
#[test]
fn only_address_in_use_counts_as_a_port_collision() {
    assert!(port_taken(
        "listen tcp 127.0.0.1:2379: bind: address already in use"
    ));
    assert!(!port_taken("open /nonexistent: no such file or directory"));
}

/// The two identities authenticate as the user names RBAC bindings name; the unprivileged one
/// is a user of this process alone when the process runs against the run's shared plane.
#[test]
fn identities_have_stable_user_names() {
    assert_eq!(Identity::Admin.user_name(), "apiary-admin");
    if std::env::var_os(super::PLANE_VAR).is_some_and(|v| !v.is_empty()) {
        assert!(Identity::User.user_name().starts_with("apiary-user-"));
    } else {
        assert_eq!(Identity::User.user_name(), "apiary-user");
    }
    assert_eq!(Identity::User.user_name(), Identity::User.user_name());
}
