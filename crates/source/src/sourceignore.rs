//! The `.sourceignore` rules, in one place for the two that apply them: the GitRepository
//! reconciler packing a commit into an artifact ([`Rules::for_artifact`], used by
//! [`crate::pack_tree`]) and the CLI's `build`/`diff` copying a local directory
//! ([`Rules::load_dir`]), as fluxcd/pkg's `sourceignore` package serves both source-controller
//! and the flux CLI.
//!
//! Patterns are in .gitignore syntax (gix's matcher, so negations, anchors and `**` behave as in
//! Git); a `.sourceignore` file applies below its own directory; a later pattern wins over an
//! earlier one. Paths are matched relative to the root of what is packed or copied.

use std::path::{Path, PathBuf};

use gix::bstr::{BStr, ByteSlice};

/// The name of the per-directory ignore file.
pub const IGNORE_FILE: &str = ".sourceignore";

/// Patterns always excluded from an artifact (source-controller's `ExcludeVCS`).
pub const VCS_EXCLUDES: &[&str] = &[".git/", ".gitignore", ".gitmodules", ".gitattributes"];

/// Patterns excluded from an artifact unless `.sourceignore` or `spec.ignore` give patterns of
/// their own (source-controller's `ExcludeExt`, `ExcludeCI` and `ExcludeExtra`).
pub const DEFAULT_EXCLUDES: &[&str] = &[
    "*.jpg",
    "*.jpeg",
    "*.gif",
    "*.png",
    "*.wmv",
    "*.flv",
    "*.tar.gz",
    "*.zip",
    ".github/",
    ".circleci/",
    ".travis.yml",
    ".gitlab-ci.yml",
    "appveyor.yml",
    ".drone.yml",
    "cloudbuild.yaml",
    "codeship-services.yml",
    "codeship-steps.yml",
    "**/.goreleaser.yml",
    "**/.sops.yaml",
    "**/.flux.yaml",
];

/// A failure to read ignore rules.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file or directory of the local tree could not be read.
    #[error("reading {}: {source}", path.display())]
    Read {
        /// The file or directory.
        path: PathBuf,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// gix refused a list of patterns (`origin` names where they came from).
    #[error("reading {origin} patterns: {source}")]
    Patterns {
        /// Where the patterns came from, as the caller named them (e.g. `.sourceignore`).
        origin: String,
        /// What gix said.
        #[source]
        source: std::io::Error,
    },
}

/// Where every list of patterns is anchored: only the part below it matters (it places each
/// list's directory), so it need not exist.
const ROOT: &str = "/root";

/// A set of ignore rules over paths relative to one root.
#[derive(Default)]
pub struct Rules {
    search: gix::ignore::Search,
}

impl Rules {
    /// Adds the patterns `bytes` (named `origin` in errors, e.g. [`IGNORE_FILE`]) that apply
    /// below `dir`, a directory relative to the root (empty for the root itself).
    pub fn add(&mut self, dir: &Path, origin: &str, bytes: &[u8]) -> Result<(), Error> {
        let root = Path::new(ROOT);
        self.search
            .add_patterns_buffer(
                bytes,
                root.join(dir).join(origin),
                Some(root),
                gix::ignore::search::Ignore::default(),
            )
            .map_err(|source| Error::Patterns {
                origin: origin.to_string(),
                source,
            })
    }

    /// Source-controller's rules for one artifact: [`VCS_EXCLUDES`]; [`DEFAULT_EXCLUDES`] unless
    /// a `.sourceignore` file or `spec.ignore` holds a pattern; each `.sourceignore` file
    /// (`(directory, contents)`, the directory '/'-separated and relative to the root) below its
    /// directory; and last `spec.ignore` at the root, so it wins over the files.
    pub fn for_artifact(
        sourceignore_files: &[(impl AsRef<BStr>, Vec<u8>)],
        spec_ignore: Option<&str>,
    ) -> Result<Rules, Error> {
        let mut rules = Rules::default();
        let root = Path::new("");
        rules.add(root, IGNORE_FILE, VCS_EXCLUDES.join("\n").as_bytes())?;
        let user_patterns = sourceignore_files.iter().any(|(_, b)| has_patterns(b))
            || spec_ignore.is_some_and(|s| has_patterns(s.as_bytes()));
        if !user_patterns {
            rules.add(root, IGNORE_FILE, DEFAULT_EXCLUDES.join("\n").as_bytes())?;
        }
        for (dir, bytes) in sourceignore_files {
            let dir: PathBuf = dir
                .as_ref()
                .split_str("/")
                .filter(|p| !p.is_empty())
                .map(|p| p.to_str_lossy().into_owned())
                .collect();
            rules.add(&dir, IGNORE_FILE, bytes)?;
        }
        if let Some(s) = spec_ignore {
            rules.add(root, IGNORE_FILE, s.as_bytes())?;
        }
        Ok(rules)
    }

    /// The flux CLI's rules for a local directory (`build`/`diff --path DIR`): the
    /// `.sourceignore` files found under `dir` (outside `.git`), each below its own directory,
    /// then `extra` (`--ignore-paths`) at the root. No default exclusions: the CLI builds what
    /// the directory holds.
    pub fn load_dir(dir: &Path, extra: &[String]) -> Result<Rules, Error> {
        let mut rules = Rules::default();
        let mut files = Vec::new();
        find_ignore_files(dir, dir, &mut files)?;
        for (relative_dir, bytes) in files {
            rules.add(&relative_dir, IGNORE_FILE, &bytes)?;
        }
        if !extra.is_empty() {
            rules.add(Path::new(""), "--ignore-paths", extra.join("\n").as_bytes())?;
        }
        Ok(rules)
    }

    /// True when `path` ('/'-separated, relative to the root) is excluded: the last pattern
    /// that matches it is not a negation.
    pub fn excluded(&self, path: &BStr, is_dir: bool) -> bool {
        self.search
            .pattern_matching_relative_path(path, Some(is_dir), gix::glob::pattern::Case::Sensitive)
            .is_some_and(|m| !m.pattern.is_negative())
    }

    /// [`Rules::excluded`] for a path of the local file system, relative to the root.
    pub fn excluded_path(&self, relative: &Path, is_dir: bool) -> bool {
        let text = relative.to_string_lossy();
        self.excluded(BStr::new(text.as_bytes()), is_dir)
    }
}

/// True when `bytes` hold a pattern: a line that is neither blank nor a comment.
pub fn has_patterns(bytes: &[u8]) -> bool {
    bytes.lines().any(|l| {
        let t = l.trim();
        !t.is_empty() && !t.starts_with(b"#")
    })
}

/// Collects every `.sourceignore` file under `dir` (outside `.git`), depth-first in name
/// order, with its directory relative to `base`.
fn find_ignore_files(
    base: &Path,
    dir: &Path,
    out: &mut Vec<(PathBuf, Vec<u8>)>,
) -> Result<(), Error> {
    let read_err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Read { path, source }
    };
    let file = dir.join(IGNORE_FILE);
    if file.is_file() {
        let bytes = std::fs::read(&file).map_err(read_err(&file))?;
        let relative = dir
            .strip_prefix(base)
            .unwrap_or(Path::new(""))
            .to_path_buf();
        out.push((relative, bytes));
    }
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(read_err(dir))?
        .filter_map(Result::ok)
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let file_type = entry.file_type().map_err(read_err(&entry.path()))?;
        if file_type.is_dir() && entry.file_name() != ".git" {
            find_ignore_files(base, &entry.path(), out)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_rules_follow_gitignore_with_negations() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(IGNORE_FILE), "# exclude all\n/*\n").unwrap();
        let rules = Rules::load_dir(
            dir.path(),
            &["!configmap.yaml".into(), "!secret.yaml".into()],
        )
        .unwrap();
        assert!(rules.excluded_path(Path::new("not_deployable"), true));
        assert!(rules.excluded_path(Path::new(IGNORE_FILE), false));
        assert!(!rules.excluded_path(Path::new("configmap.yaml"), false));
        assert!(!rules.excluded_path(Path::new("secret.yaml"), false));
    }

    #[test]
    fn nested_files_apply_below_their_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::write(dir.path().join("a").join(IGNORE_FILE), "*.txt\n").unwrap();
        let rules = Rules::load_dir(dir.path(), &[]).unwrap();
        assert!(rules.excluded_path(Path::new("a/b/x.txt"), false));
        assert!(!rules.excluded_path(Path::new("x.txt"), false));
    }

    #[test]
    fn artifact_defaults_apply_only_without_user_patterns() {
        let none: &[(&BStr, Vec<u8>)] = &[];
        let rules = Rules::for_artifact(none, None).unwrap();
        assert!(rules.excluded(BStr::new("logo.png"), false));
        assert!(rules.excluded(BStr::new(".git"), true));
        let rules = Rules::for_artifact(none, Some("# only a comment\n")).unwrap();
        assert!(rules.excluded(BStr::new("logo.png"), false));
        let files = [(BStr::new("deploy"), b"*.yaml\n!keep.yaml\n".to_vec())];
        let rules = Rules::for_artifact(&files, None).unwrap();
        assert!(!rules.excluded(BStr::new("logo.png"), false));
        assert!(rules.excluded(BStr::new(".gitignore"), false));
        assert!(rules.excluded(BStr::new("deploy/app.yaml"), false));
        assert!(!rules.excluded(BStr::new("deploy/keep.yaml"), false));
        assert!(!rules.excluded(BStr::new("app.yaml"), false));
        // spec.ignore comes last and wins over the files.
        let rules = Rules::for_artifact(&files, Some("!deploy/app.yaml")).unwrap();
        assert!(!rules.excluded(BStr::new("deploy/app.yaml"), false));
    }
}
