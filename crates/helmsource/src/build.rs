//! Chart builds as source-controller's chart builders do them: a chart pulled from a
//! repository (kept byte for byte unless values files or version metadata require packaging
//! again), or packaged from a directory of a source artifact with its missing dependencies
//! resolved. A build whose name and version equal the cached artifact's is skipped unless
//! forced (a new generation).

use std::collections::{BTreeMap, HashMap};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use ferroflux_helm::File;
use ferroflux_semver::{Range, Version};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::http::{Client, RepositoryAccess, normalize_url, redact, resolve_reference};
use crate::index::{self, IndexFile};

/// Flux's `--helm-chart-max-size` default: the largest chart archive downloaded.
pub const MAX_CHART_SIZE: u64 = 10 << 20;
/// Flux's `--helm-index-max-size` default: the largest `index.yaml` downloaded.
pub const MAX_INDEX_SIZE: u64 = 50 << 20;

/// What to build besides the chart itself.
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    /// `spec.valuesFiles`, merged in order into the packaged `values.yaml`.
    pub values_files: Vec<String>,
    /// `spec.ignoreMissingValuesFiles`.
    pub ignore_missing_values_files: bool,
    /// Build metadata appended to the version (`+<revision>`, `+<generation>`).
    pub version_metadata: Option<String>,
    /// The chart archive of the current artifact, reused when name and version match.
    pub cached_chart: Option<PathBuf>,
    /// `spec.valuesFiles` that went into the cached chart (`status.observedValuesFiles`).
    pub cached_values_files: Vec<String>,
    /// Build even when the cached chart matches (the object's generation changed).
    pub force: bool,
}

impl BuildOptions {
    /// Flux's `GetValuesFiles`: a lone `values.yaml` is the chart's default, so no values files.
    pub fn effective_values_files(&self) -> &[String] {
        if self.values_files.len() == 1 && clean(&self.values_files[0]) == "values.yaml" {
            return &[];
        }
        &self.values_files
    }
}

/// The result of a build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Build {
    /// The chart's name.
    pub name: String,
    /// The chart's version, with any build metadata added.
    pub version: String,
    /// The new archive; `None` when the cached chart was kept.
    pub archive: Option<Vec<u8>>,
    /// Whether the archive was packaged here (rather than pulled as it was).
    pub packaged: bool,
    /// The values files merged into the chart's values.
    pub values_files: Vec<String>,
    /// How many missing dependencies were added.
    pub resolved_dependencies: usize,
}

impl Build {
    /// Flux's build summary, the Ready message of a HelmChart:
    /// `pulled 'podinfo' chart with version '6.0.0'`.
    pub fn summary(&self) -> String {
        let action = if self.packaged { "packaged" } else { "pulled" };
        let mut s = format!(
            "{action} '{}' chart with version '{}'",
            self.name, self.version
        );
        if !self.values_files.is_empty() {
            s.push_str(&format!(
                " and merged values files [{}]",
                self.values_files.join(" ")
            ));
        }
        s
    }

    /// `<name>-<version>.tgz`, the artifact's file name.
    pub fn file_name(&self) -> String {
        format!("{}-{}.tgz", self.name, self.version)
    }
}

/// Go's `filepath.Clean` for the relative paths of values files.
fn clean(p: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out.join("/")
}

/// Name and version in the cached chart's Chart.yaml, when it loads and validates.
fn cached_metadata(path: &Path) -> Option<(String, String)> {
    let data = std::fs::read(path).ok()?;
    let files = ferroflux_helm::archive_files(&data).ok()?;
    let chart_yaml = files.iter().find(|f| f.name == "Chart.yaml")?;
    let v: Value = serde_saphyr::from_slice(&chart_yaml.data).ok()?;
    Some((
        v.get("name")?.as_str()?.to_string(),
        v.get("version")?.as_str()?.to_string(),
    ))
}

/// The cached chart's build, when it is the one asked for and no rebuild is forced.
pub(crate) fn reuse_cached(
    name: &str,
    version: &str,
    opts: &BuildOptions,
    packaged: bool,
) -> Option<Build> {
    if opts.force {
        return None;
    }
    let path = opts.cached_chart.as_ref()?;
    let (cached_name, cached_version) = cached_metadata(path)?;
    (cached_name == name && cached_version == version).then(|| Build {
        name: name.to_string(),
        version: version.to_string(),
        archive: None,
        packaged,
        values_files: if opts.cached_values_files.is_empty() {
            opts.effective_values_files().to_vec()
        } else {
            opts.cached_values_files.clone()
        },
        resolved_dependencies: 0,
    })
}

/// A chart repository: its client and index.
pub struct Repository {
    /// The client, with the repository's credentials and TLS.
    pub client: Client,
    /// The parsed index.
    pub index: Arc<IndexFile>,
}

/// Parsed indexes by stored file (whose name holds the index's digest, so an entry never goes
/// stale): a thousand HelmCharts of one repository parse its index once, as source-controller's
/// index cache does.
static INDEX_CACHE: Mutex<Vec<(PathBuf, Arc<IndexFile>)>> = Mutex::new(Vec::new());
/// How many parsed indexes stay in memory.
const INDEX_CACHE_SIZE: usize = 16;

impl Repository {
    /// Downloads and parses `<url>/index.yaml`; returns the repository and the raw index bytes.
    pub fn fetch(access: RepositoryAccess, max_index_size: u64) -> Result<(Self, Vec<u8>)> {
        let client = Client::new(access)?;
        let url = format!("{}/index.yaml", client.url());
        let full = format!("{}/index.yaml", client.configured_url());
        let data = client
            .get(&full, max_index_size)
            .map_err(Error::IndexFetch)?;
        let index = Arc::new(index::parse(&data, &url).map_err(Error::IndexLoad)?);
        Ok((Repository { client, index }, data))
    }

    /// A repository whose index was already fetched (the HelmRepository's artifact).
    pub fn from_index(access: RepositoryAccess, index_data: &[u8]) -> Result<Self> {
        let client = Client::new(access)?;
        let url = format!("{}/index.yaml", client.url());
        let index = Arc::new(index::parse(index_data, &url).map_err(Error::IndexLoad)?);
        Ok(Repository { client, index })
    }

    /// A repository whose index is the stored file `path` (the HelmRepository's artifact,
    /// named by its digest), parsed once and then shared.
    pub fn from_index_file(access: RepositoryAccess, path: &Path) -> Result<Self> {
        let cached = INDEX_CACHE
            .lock()
            .ok()
            .and_then(|c| c.iter().find(|(p, _)| p == path).map(|(_, i)| i.clone()));
        if let Some(index) = cached {
            return Ok(Repository {
                client: Client::new(access)?,
                index,
            });
        }
        let data = std::fs::read(path).map_err(|e| Error::storage(path, e))?;
        let repo = Self::from_index(access, &data)?;
        if let Ok(mut c) = INDEX_CACHE.lock() {
            c.retain(|(p, _)| p != path);
            c.push((path.to_path_buf(), repo.index.clone()));
            let excess = c.len().saturating_sub(INDEX_CACHE_SIZE);
            c.drain(..excess);
        }
        Ok(repo)
    }

    /// Downloads the archive of `cv` (its first URL), at most `MAX_CHART_SIZE` bytes.
    pub fn download(&self, cv: &index::ChartVersion) -> std::result::Result<Vec<u8>, String> {
        let Some(first) = cv.urls.first() else {
            return Err(format!("chart '{}' has no downloadable URLs", cv.name));
        };
        let url = resolve_reference(self.client.configured_url(), first);
        self.client.get(&url, MAX_CHART_SIZE)
    }
}

/// Builds chart `name` at `range` from a repository, as source-controller's remote builder.
pub fn build_from_repository(
    repo: &Repository,
    name: &str,
    range: &str,
    opts: &BuildOptions,
) -> Result<Build> {
    let cv = repo.index.chart_version(name, range).map_err(|e| {
        Error::chart_reference(format!(
            "failed to get chart version for remote reference: {e}"
        ))
    })?;
    let mut version = cv.version.clone();
    if let Some(meta) = &opts.version_metadata {
        version = index::with_metadata(&version, meta).map_err(Error::metadata_patch)?;
    }
    let values_files = opts.effective_values_files();
    let requires_packaging = !values_files.is_empty() || opts.version_metadata.is_some();
    if let Some(cached) = reuse_cached(&cv.name, &version, opts, requires_packaging) {
        return Ok(cached);
    }
    let data = repo.download(cv).map_err(|e| {
        Error::chart_pull(format!(
            "failed to download chart for remote reference: {e}"
        ))
    })?;
    finish_remote(&cv.name, "the index", version, data, opts)
}

/// The rest of a remote build once the chart archive is downloaded: checked, and packaged
/// again when values files or version metadata ask for it. `origin` names where the expected
/// chart name came from, for the message when the archive holds another chart.
pub(crate) fn finish_remote(
    name: &str,
    origin: &str,
    version: String,
    data: Vec<u8>,
    opts: &BuildOptions,
) -> Result<Build> {
    let values_files = opts.effective_values_files();
    let requires_packaging = !values_files.is_empty() || opts.version_metadata.is_some();
    let files = ferroflux_helm::archive_files(&data)
        .map_err(|e| Error::chart_pull(format!("failed to load downloaded chart: {e}")))?;
    let chart = load_checked(files.clone()).map_err(Error::chart_pull)?;
    if chart.metadata.name != name {
        return Err(Error::chart_pull(format!(
            "the downloaded chart is named '{}', {origin} says '{name}'",
            chart.metadata.name
        )));
    }
    if !requires_packaging {
        return Ok(Build {
            name: name.to_string(),
            version,
            archive: Some(data),
            packaged: false,
            values_files: Vec::new(),
            resolved_dependencies: 0,
        });
    }
    let mut files = files;
    let mut merged_files = Vec::new();
    if !values_files.is_empty() {
        let (merged, used) = merge_chart_values(
            &chart,
            &files,
            values_files,
            opts.ignore_missing_values_files,
        )?;
        if replace_values(&mut files, &merged)? {
            merged_files = used;
        }
    }
    set_version(&mut files, &version)?;
    let archive = package(name, &files)?;
    Ok(Build {
        name: name.to_string(),
        version,
        archive: Some(archive),
        packaged: true,
        values_files: merged_files,
        resolved_dependencies: 0,
    })
}

/// Loads and validates a chart's files, with Helm's messages.
fn load_checked(files: Vec<File>) -> std::result::Result<ferroflux_helm::Chart, String> {
    let mut chart = ferroflux_helm::load_files(files).map_err(|e| e.to_string())?;
    chart.metadata.validate().map_err(|e| e.to_string())?;
    Ok(chart)
}

/// Parses one values file as a YAML map.
fn parse_values(data: &[u8], path: &str) -> Result<Map<String, Value>> {
    ferroflux_helm::load_values(&String::from_utf8_lossy(data))
        .map_err(|e| Error::values_files(format!("unmarshaling values from '{path}' failed: {e}")))
}

/// source-controller's `mergeChartValues`: values files inside the chart, `values.yaml` being
/// the chart's defaults.
fn merge_chart_values(
    chart: &ferroflux_helm::Chart,
    files: &[File],
    paths: &[String],
    ignore_missing: bool,
) -> Result<(Map<String, Value>, Vec<String>)> {
    let mut merged = Map::new();
    let mut used = Vec::new();
    for p in paths {
        let name = clean(p);
        if name == "values.yaml" {
            merged = ferroflux_helm::merge_maps(merged, chart.values.clone());
            used.push(p.clone());
            continue;
        }
        let Some(f) = files.iter().find(|f| f.name == name) else {
            if ignore_missing {
                continue;
            }
            return Err(Error::values_files(format!(
                "no values file found at path '{p}'"
            )));
        };
        merged = ferroflux_helm::merge_maps(merged, parse_values(&f.data, p)?);
        used.push(p.clone());
    }
    Ok((merged, used))
}

/// source-controller's `OverwriteChartDefaultValues`: `values.yaml` becomes the merged values.
/// Returns whether it changed.
fn replace_values(files: &mut Vec<File>, merged: &Map<String, Value>) -> Result<bool> {
    let data = if merged.is_empty() {
        Vec::new()
    } else {
        serde_saphyr::to_string(&Value::Object(merged.clone()))
            .map_err(|e| Error::values_files(format!("failed to encode merged values: {e}")))?
            .into_bytes()
    };
    match files.iter_mut().find(|f| f.name == "values.yaml") {
        Some(f) if f.data == data => Ok(false),
        Some(f) => {
            f.data = data;
            Ok(true)
        }
        None => {
            files.push(File {
                name: "values.yaml".into(),
                data,
            });
            Ok(true)
        }
    }
}

/// Writes `version` into Chart.yaml (the rest of it kept, keys in their order).
fn set_version(files: &mut [File], version: &str) -> Result<()> {
    let Some(f) = files.iter_mut().find(|f| f.name == "Chart.yaml") else {
        return Err(Error::metadata_patch("the chart has no Chart.yaml"));
    };
    let mut v: Value = serde_saphyr::from_slice(&f.data)
        .map_err(|e| Error::metadata_patch(format!("cannot load Chart.yaml: {e}")))?;
    let Some(obj) = v.as_object_mut() else {
        return Err(Error::metadata_patch("Chart.yaml is not a mapping"));
    };
    if obj.get("version").and_then(Value::as_str) == Some(version) {
        return Ok(());
    }
    obj.insert("version".into(), Value::String(version.to_string()));
    f.data = serde_saphyr::to_string(&v)
        .map_err(|e| Error::metadata_patch(format!("cannot write Chart.yaml: {e}")))?
        .into_bytes();
    Ok(())
}

/// A chart archive as `helm package` lays it out: every file under `<name>/`, reproducible
/// (sorted, fixed times and modes), then loaded back to prove Helm can read it.
pub fn package(name: &str, files: &[File]) -> Result<Vec<u8>> {
    let mut sorted: Vec<&File> = files.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    for f in sorted {
        let mut header = tar::Header::new_gnu();
        header.set_size(f.data.len() as u64);
        header.set_mode(0o644);
        header.set_mtime(0);
        header.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut header, format!("{name}/{}", f.name), f.data.as_slice())
            .map_err(|e| Error::package(format!("failed to write {}: {e}", f.name)))?;
    }
    let gz = tar
        .into_inner()
        .map_err(|e| Error::package(e.to_string()))?;
    let data = gz.finish().map_err(|e| Error::package(e.to_string()))?;
    ferroflux_helm::load_archive(&data)
        .map_err(|e| Error::package(format!("the packaged chart does not load: {e}")))?;
    Ok(data)
}

/// How a dependency's repository is reached: source-controller looks for a HelmRepository of
/// the namespace with that URL (its credentials and TLS), else goes anonymously.
pub trait DependencyRepositories {
    /// The access to repository `url` (normalized, no trailing slash).
    fn access(&self, url: &str) -> std::result::Result<RepositoryAccess, String>;
}

/// Anonymous access to every dependency repository.
pub struct AnonymousRepositories;

impl DependencyRepositories for AnonymousRepositories {
    fn access(&self, url: &str) -> std::result::Result<RepositoryAccess, String> {
        Ok(RepositoryAccess::anonymous(url))
    }
}

/// Joins `rel` under `root` without leaving it (`..` stops at the root, as securejoin does).
fn secure_join(root: &Path, rel: &str) -> PathBuf {
    let mut out = PathBuf::new();
    for c in Path::new(rel).components() {
        match c {
            Component::Normal(p) => out.push(p),
            Component::ParentDir => {
                out.pop();
            }
            _ => {}
        }
    }
    root.join(out)
}

/// The path of `p` below `root`, for messages.
fn shown(root: &Path, p: &Path) -> String {
    p.strip_prefix(root)
        .map(|r| format!("/{}", r.display()))
        .unwrap_or_else(|_| p.display().to_string())
}

/// Builds the chart at `chart_path` of a source artifact unpacked in `root`, as
/// source-controller's local builder: packaged with the merged values files (paths relative to
/// `root`), the version's metadata and its missing dependencies (`file://` paths inside `root`,
/// or charts from repositories reached through `repos`).
pub fn build_from_source(
    root: &Path,
    chart_path: &str,
    opts: &BuildOptions,
    repos: &dyn DependencyRepositories,
) -> Result<Build> {
    let path = secure_join(root, chart_path);
    let meta = std::fs::metadata(&path).map_err(|_| {
        Error::chart_reference(format!(
            "path '{chart_path}' does not exist in the source artifact"
        ))
    })?;
    let is_dir = meta.is_dir();
    let (mut files, dir) = if is_dir {
        let files = ferroflux_helm::dir_files(&path).map_err(|e| {
            Error::chart_reference(format!(
                "failed to load chart from path '{chart_path}': {e}"
            ))
        })?;
        (files, Some(path.clone()))
    } else {
        let data = std::fs::read(&path).map_err(|e| Error::storage(&path, e))?;
        let files = ferroflux_helm::archive_files(&data).map_err(|e| {
            Error::chart_reference(format!(
                "failed to load chart from path '{chart_path}': {e}"
            ))
        })?;
        (files, None)
    };
    let chart = load_checked(files.clone()).map_err(|e| {
        Error::chart_reference(format!(
            "failed to load chart metadata from path '{chart_path}': {e}"
        ))
    })?;
    let name = chart.metadata.name.clone();
    let mut version = chart.metadata.version.clone();
    if let Some(m) = &opts.version_metadata {
        version = index::with_metadata(&version, m).map_err(Error::metadata_patch)?;
    }
    let values_files = opts.effective_values_files();
    let requires_packaging = is_dir || opts.version_metadata.is_some() || !values_files.is_empty();
    if let Some(cached) = reuse_cached(&name, &version, opts, requires_packaging) {
        return Ok(cached);
    }
    if !requires_packaging {
        let data = std::fs::read(&path).map_err(|e| Error::storage(&path, e))?;
        return Ok(Build {
            name,
            version,
            archive: Some(data),
            packaged: false,
            values_files: Vec::new(),
            resolved_dependencies: 0,
        });
    }
    let mut merged_files = Vec::new();
    if !values_files.is_empty() {
        let (merged, used) =
            merge_source_values(root, values_files, opts.ignore_missing_values_files)?;
        if replace_values(&mut files, &merged)? {
            merged_files = used;
        }
    }
    set_version(&mut files, &version)?;
    let resolved = match &dir {
        Some(dir) => add_missing_dependencies(root, dir, &chart, &mut files, repos)?,
        None => 0,
    };
    let archive = package(&name, &files)?;
    Ok(Build {
        name,
        version,
        archive: Some(archive),
        packaged: true,
        values_files: merged_files,
        resolved_dependencies: resolved,
    })
}

/// source-controller's `mergeFileValues`: values files relative to the source's root.
fn merge_source_values(
    root: &Path,
    paths: &[String],
    ignore_missing: bool,
) -> Result<(Map<String, Value>, Vec<String>)> {
    let mut merged = Map::new();
    let mut used = Vec::new();
    for p in paths {
        let full = secure_join(root, p);
        if !full.is_file() {
            if ignore_missing && !full.exists() {
                continue;
            }
            return Err(Error::values_files(format!(
                "no values file found at path '{}' (reference '{p}')",
                shown(root, &full)
            )));
        }
        let data = std::fs::read(&full).map_err(|e| Error::storage(&full, e))?;
        merged = ferroflux_helm::merge_maps(merged, parse_values(&data, p)?);
        used.push(p.clone());
    }
    Ok((merged, used))
}

/// One entry of Chart.lock or of Chart.yaml's `dependencies`.
struct Wanted {
    name: String,
    version: String,
    repository: String,
}

/// The dependencies to resolve: Chart.lock's when there is one (exact versions), else
/// Chart.yaml's.
fn wanted_dependencies(files: &[File], chart: &ferroflux_helm::Chart) -> Result<Vec<Wanted>> {
    if let Some(lock) = files.iter().find(|f| f.name == "Chart.lock") {
        let v: Value = serde_saphyr::from_slice(&lock.data)
            .map_err(|e| Error::dependency(format!("cannot load Chart.lock: {e}")))?;
        let str_of =
            |d: &Value, k: &str| d.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        return Ok(v
            .get("dependencies")
            .and_then(Value::as_array)
            .map(|deps| {
                deps.iter()
                    .map(|d| Wanted {
                        name: str_of(d, "name"),
                        version: str_of(d, "version"),
                        repository: str_of(d, "repository"),
                    })
                    .collect()
            })
            .unwrap_or_default());
    }
    Ok(chart
        .metadata
        .dependencies
        .iter()
        .flatten()
        .map(|d| Wanted {
            name: d.name.clone(),
            version: d.version.clone(),
            repository: d.repository.clone(),
        })
        .collect())
}

/// source-controller's dependency manager: every dependency not already in `charts/` is added
/// as `charts/<name>-<version>.tgz`. Returns how many were added.
fn add_missing_dependencies(
    root: &Path,
    chart_dir: &Path,
    chart: &ferroflux_helm::Chart,
    files: &mut Vec<File>,
    repos: &dyn DependencyRepositories,
) -> Result<usize> {
    let wanted = wanted_dependencies(files, chart)?;
    let present: Vec<&str> = chart.dependencies.iter().map(|c| c.name()).collect();
    if present.len() == wanted.len() {
        return Ok(0);
    }
    let mut repositories: HashMap<String, Repository> = HashMap::new();
    let mut added = 0;
    let mut names = BTreeMap::new();
    for dep in &wanted {
        if present.contains(&dep.name.as_str()) || names.contains_key(&dep.name) {
            continue;
        }
        let (version, data) = if let Some(rel) = dep.repository.strip_prefix("file://") {
            add_local(root, chart_dir, dep, rel).map_err(|e| {
                Error::dependency(format!(
                    "failed to add local dependency '{}': {e}",
                    dep.name
                ))
            })?
        } else {
            add_remote(dep, &mut repositories, repos).map_err(|e| {
                Error::dependency(format!(
                    "failed to add remote dependency '{}': {e}",
                    dep.name
                ))
            })?
        };
        names.insert(dep.name.clone(), ());
        files.push(File {
            name: format!("charts/{}-{version}.tgz", dep.name),
            data,
        });
        added += 1;
    }
    Ok(added)
}

fn check_constraint(dep: &Wanted, version: &str) -> std::result::Result<(), String> {
    if dep.version.trim().is_empty() {
        return Ok(());
    }
    let range = Range::parse(&dep.version)
        .map_err(|e| format!("invalid version/constraint format '{}': {e}", dep.version))?;
    let v = Version::parse_loose(version).map_err(|e| e.to_string())?;
    if !range.matches(&v) {
        return Err(format!(
            "can't get a valid version for constraint '{}' (the chart is at {version})",
            dep.version
        ));
    }
    Ok(())
}

fn add_local(
    root: &Path,
    chart_dir: &Path,
    dep: &Wanted,
    rel: &str,
) -> std::result::Result<(String, Vec<u8>), String> {
    let rel_dir = chart_dir.strip_prefix(root).unwrap_or(Path::new(""));
    let target = secure_join(root, &rel_dir.join(rel).to_string_lossy());
    if !target.exists() {
        return Err(format!(
            "no chart found at '{}' (reference '{}')",
            shown(root, &target),
            dep.repository
        ));
    }
    let files = if target.is_dir() {
        ferroflux_helm::dir_files(&target).map_err(|e| e.to_string())?
    } else {
        let data = std::fs::read(&target).map_err(|e| e.to_string())?;
        ferroflux_helm::archive_files(&data).map_err(|e| e.to_string())?
    };
    let sub = load_checked(files.clone()).map_err(|e| {
        format!(
            "failed to load chart from '{}' (reference '{}'): {e}",
            shown(root, &target),
            dep.repository
        )
    })?;
    check_constraint(dep, &sub.metadata.version)?;
    let data = package(&sub.metadata.name, &files).map_err(|e| e.to_string())?;
    Ok((sub.metadata.version.clone(), data))
}

fn add_remote(
    dep: &Wanted,
    cache: &mut HashMap<String, Repository>,
    repos: &dyn DependencyRepositories,
) -> std::result::Result<(String, Vec<u8>), String> {
    let url = normalize_url(&dep.repository);
    if url.is_empty() {
        return Err("it is not in charts/ and names no repository".into());
    }
    if url.starts_with('@') || url.starts_with("alias:") {
        return Err(format!(
            "repository aliases ('{url}') are not supported: give the repository URL"
        ));
    }
    if url.starts_with("oci://") {
        return Err(format!(
            "OCI dependency repositories ('{url}') are not supported yet"
        ));
    }
    if !cache.contains_key(&url) {
        let access = repos
            .access(&url)
            .map_err(|e| format!("failed to get chart repository for URL '{url}': {e}"))?;
        let (repo, _) = Repository::fetch(access, MAX_INDEX_SIZE)
            .map_err(|e| format!("failed to get chart repository for URL '{url}': {e}"))?;
        cache.insert(url.clone(), repo);
    }
    let Some(repo) = cache.get(&url) else {
        return Err(format!("no chart repository for URL '{}'", redact(&url)));
    };
    let cv = repo
        .index
        .chart_version(&dep.name, &dep.version)
        .map_err(|e| {
            format!(
                "failed to get chart '{}' version '{}' from '{}': {e}",
                dep.name,
                dep.version,
                redact(&url)
            )
        })?;
    let data = repo
        .download(cv)
        .map_err(|e| format!("chart download of version '{}' failed: {e}", cv.version))?;
    let files = ferroflux_helm::archive_files(&data).map_err(|e| {
        format!(
            "failed to load downloaded archive of version '{}': {e}",
            cv.version
        )
    })?;
    load_checked(files).map_err(|e| {
        format!(
            "failed to load downloaded archive of version '{}': {e}",
            cv.version
        )
    })?;
    Ok((cv.version.clone(), data))
}
