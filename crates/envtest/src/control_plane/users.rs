//! The unprivileged user of a test process. Tests bind roles to it cluster-wide (a namespace
//! verb can only be granted so), which would leak between processes sharing one control plane
//! and one user. So a shared plane (`sharing`) knows [`SHARED_USERS`] users, `apiary-user-<i>`,
//! and each process claims one for itself alone by creating `users/<i>` in the plane's directory
//! (`create_new`: the file system decides, once). Without a shared plane the user is
//! `apiary-user`.
//!
//! Layer: test support. Creates empty files in the shared plane's directory; holds no token.

use std::fs::OpenOptions;
use std::path::Path;
use std::sync::OnceLock;

/// The environment variable naming the directory of a control plane shared by the test
/// processes (set by the `apiary_node` wrapper).
pub const PLANE_VAR: &str = "APIARY_PLANE";

/// How many users a shared plane knows: more than the test processes of one run that use it
/// (about 200 in the workspace's suite).
pub(super) const SHARED_USERS: usize = 1024;

/// The name of the shared plane's user `index`.
pub(super) fn shared_user_name(index: usize) -> String {
    format!("apiary-user-{index}")
}

/// This process's unprivileged user.
pub(super) struct ProcessUser {
    /// Its name.
    pub(super) name: String,
    /// Its index among a shared plane's users, when the process runs against one.
    pub(super) index: Option<usize>,
}

/// The unprivileged user of this process: `apiary-user`, or under [`PLANE_VAR`] a user of the
/// shared plane claimed for this process (decided once, at first use).
///
/// # Panics
/// When no user of the shared plane is left to claim, or its directory cannot be written.
pub(super) fn process_user() -> &'static ProcessUser {
    static USER: OnceLock<ProcessUser> = OnceLock::new();
    USER.get_or_init(|| match plane_dir() {
        None => ProcessUser {
            name: "apiary-user".to_owned(),
            index: None,
        },
        Some(dir) => {
            let index = claim(&dir).unwrap_or_else(|error| {
                panic!(
                    "cannot claim a user of the shared control plane in {}: {error}",
                    dir.display()
                )
            });
            ProcessUser {
                name: shared_user_name(index),
                index: Some(index),
            }
        }
    })
}

/// The shared plane's directory, when [`PLANE_VAR`] names one.
pub(crate) fn plane_dir() -> Option<std::path::PathBuf> {
    std::env::var_os(PLANE_VAR)
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
}

/// The first index whose `users/<i>` this process could create.
fn claim(dir: &Path) -> std::io::Result<usize> {
    let users = dir.join("users");
    for index in 0..SHARED_USERS {
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(users.join(index.to_string()))
        {
            Ok(_) => return Ok(index),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(error) => return Err(error),
        }
    }
    Err(std::io::Error::other(format!(
        "all {SHARED_USERS} users are claimed"
    )))
}

#[cfg(test)]
mod tests {
    //! Claiming a user of a shared plane.

    use super::*;

    /// Each claim takes the lowest index nobody created yet, once; a full list is an error.
    #[test]
    fn a_user_is_claimed_once() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("users")).unwrap();
        assert_eq!(claim(dir.path()).unwrap(), 0);
        std::fs::write(dir.path().join("users/2"), "").unwrap();
        assert_eq!(claim(dir.path()).unwrap(), 1);
        assert_eq!(claim(dir.path()).unwrap(), 3);
        for index in 4..SHARED_USERS {
            std::fs::write(dir.path().join(format!("users/{index}")), "").unwrap();
        }
        assert!(claim(dir.path()).is_err());
        assert_eq!(shared_user_name(7), "apiary-user-7");
    }
}
