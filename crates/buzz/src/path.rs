//! The PATH the provider's kubeconfig credential plugins run with (buzz-provider.md § 3.5): a
//! Finder-launched desktop passes launchd's minimal PATH, so `aws` or `gke-gcloud-auth-plugin`
//! would not be found; the provider prepends the usual install locations.
//!
//! Pure: a function of the inherited `PATH` and `HOME`, both passed in. Must not: keep an empty
//! entry (it would mean the current directory, the agent workdir).

use std::ffi::{OsStr, OsString};

/// The directories always put first, in order.
pub const PREPENDED: [&str; 2] = ["/opt/homebrew/bin", "/usr/local/bin"];

/// The rewritten PATH: `/opt/homebrew/bin`, `/usr/local/bin`, `$HOME/.local/bin` (only when
/// `HOME` is set and non-empty), then the inherited entries in order with empty ones dropped.
pub fn plugin_path(path: Option<&OsStr>, home: Option<&OsStr>) -> OsString {
    let mut entries: Vec<OsString> = PREPENDED.iter().map(OsString::from).collect();
    if let Some(home) = home.filter(|home| !home.is_empty()) {
        let mut local = home.to_owned();
        local.push("/.local/bin");
        entries.push(local);
    }
    if let Some(path) = path {
        entries.extend(
            std::env::split_paths(path)
                .map(OsString::from)
                .filter(|entry| !entry.is_empty()),
        );
    }
    let mut joined = OsString::new();
    for (index, entry) in entries.iter().enumerate() {
        if index > 0 {
            joined.push(":");
        }
        joined.push(entry);
    }
    joined
}

#[cfg(test)]
mod tests {
    //! The PATH rule of buzz-provider.md § 3.5.

    use super::*;

    fn rewrite(path: Option<&str>, home: Option<&str>) -> String {
        plugin_path(path.map(OsStr::new), home.map(OsStr::new))
            .into_string()
            .expect("utf-8")
    }

    /// The three prepended entries come first, then the inherited ones in order.
    #[test]
    fn prepends_homebrew_local_and_home_bin() {
        assert_eq!(
            rewrite(Some("/usr/bin:/bin"), Some("/Users/a")),
            "/opt/homebrew/bin:/usr/local/bin:/Users/a/.local/bin:/usr/bin:/bin"
        );
    }

    /// Without HOME there is no `~/.local/bin` entry.
    #[test]
    fn no_home_no_local_bin() {
        assert_eq!(
            rewrite(Some("/usr/bin"), None),
            "/opt/homebrew/bin:/usr/local/bin:/usr/bin"
        );
        assert_eq!(
            rewrite(Some("/usr/bin"), Some("")),
            "/opt/homebrew/bin:/usr/local/bin:/usr/bin"
        );
    }

    /// Empty entries (leading, trailing, doubled colons) are dropped: an empty entry would mean
    /// the current directory.
    #[test]
    fn empty_entries_are_dropped() {
        assert_eq!(
            rewrite(Some(":/usr/bin::/bin:"), None),
            "/opt/homebrew/bin:/usr/local/bin:/usr/bin:/bin"
        );
        assert_eq!(rewrite(Some(""), None), "/opt/homebrew/bin:/usr/local/bin");
        assert_eq!(rewrite(None, None), "/opt/homebrew/bin:/usr/local/bin");
    }

    /// Duplicates are kept: the rule only prepends and drops empties.
    #[test]
    fn duplicates_are_kept() {
        assert_eq!(
            rewrite(Some("/usr/local/bin"), None),
            "/opt/homebrew/bin:/usr/local/bin:/usr/local/bin"
        );
    }
}
