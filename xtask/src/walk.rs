//! The one walk over the workspace's files that tidy and the citation check share.

use std::path::{Path, PathBuf};

/// Every file under `root` outside hidden folders, `target` folders and `mutants.out*`, sorted.
pub(crate) fn workspace_files(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if !(name.starts_with('.') || name == "target" || name.starts_with("mutants.out")) {
                    stack.push(path);
                }
            } else {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}
