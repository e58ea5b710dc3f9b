//! Which files a config path stands for: the path itself when it is a
//! file, else every `*.yaml`, `*.yml` and `*.json` below the directory,
//! subdirectories included, in name order. Entries whose names start with
//! a dot are skipped: hidden files, and the `..data` and timestamped
//! directories of a ConfigMap volume, whose files the volume also links
//! at the top (reading both would load every CRD twice). The loader and
//! the reloader's change detection read the same list.

use std::io;
use std::path::{Path, PathBuf};

/// The config files of `path` (a file, or a directory walked recursively).
pub fn config_files(path: &Path) -> io::Result<Vec<PathBuf>> {
    if std::fs::metadata(path)?.is_file() {
        return Ok(vec![path.to_owned()]);
    }
    let mut files = Vec::new();
    walk(path, &mut files, 0)?;
    files.sort();
    Ok(files)
}

/// Deeper than any config layout; stops a symlink loop.
const MAX_DEPTH: usize = 16;

fn walk(dir: &Path, files: &mut Vec<PathBuf>, depth: usize) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let hidden = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_none_or(|n| n.starts_with('.'));
        if hidden {
            continue;
        }
        if path.is_dir() {
            if depth < MAX_DEPTH {
                walk(&path, files, depth + 1)?;
            }
        } else if path.is_file() && is_config_name(&path) {
            files.push(path);
        }
    }
    Ok(())
}

fn is_config_name(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml" | "json")
    )
}

/// A kustomize file (`kustomization.yaml` and its spellings), which lives
/// next to CRDs in many repositories and is not config.
pub fn is_kustomization(path: &str) -> bool {
    let name = Path::new(path)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    matches!(
        name,
        "kustomization.yaml" | "kustomization.yml" | "Kustomization"
    )
}

/// The text of every config file of `source` (kustomization files left
/// out), each with the name the loader reports it under: for the offline
/// commands that read the config's documents themselves
/// (`webhook-config`, `storage-migration`).
pub fn texts(source: &super::ConfigSource) -> Result<Vec<(String, String)>, String> {
    let path = match source {
        super::ConfigSource::Embedded => {
            return Ok(super::embedded::FILES
                .iter()
                .map(|(name, text)| (format!("embedded:{name}"), (*text).to_owned()))
                .collect())
        }
        super::ConfigSource::Dir(path) => path,
    };
    let paths = config_files(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = Vec::with_capacity(paths.len());
    for path in paths {
        let name = path.display().to_string();
        if is_kustomization(&name) {
            continue;
        }
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{name}: cannot read: {e}"))?;
        out.push((name, text));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_are_walked_and_dot_entries_skipped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::create_dir_all(root.join("team-a/crds")).expect("mkdir");
        std::fs::create_dir_all(root.join("..data")).expect("mkdir");
        for f in [
            "top.yaml",
            "team-a/crds/a.yml",
            "team-a/b.json",
            "..data/top.yaml",
            ".hidden.yaml",
            "notes.md",
        ] {
            std::fs::write(root.join(f), "x: 1\n").expect("write");
        }
        let files = config_files(root).expect("listed");
        let rel: Vec<String> = files
            .iter()
            .map(|p| p.strip_prefix(root).unwrap().display().to_string())
            .collect();
        assert_eq!(rel, ["team-a/b.json", "team-a/crds/a.yml", "top.yaml"]);
        // A single file is its own list, whatever its name.
        let one = root.join("notes.md");
        assert_eq!(config_files(&one).expect("file"), [one]);
        assert!(config_files(&root.join("missing")).is_err());
    }

    #[test]
    fn kustomization_files_are_recognised_by_name() {
        assert!(is_kustomization("repo/kustomization.yaml"));
        assert!(is_kustomization("Kustomization"));
        assert!(!is_kustomization("repo/crontab.yaml"));
    }
}
