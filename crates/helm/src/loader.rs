//! Loading a chart from a directory or a packaged `.tgz`, as Helm's `chart/v2/loader` does:
//! the same file classification, subcharts (directories or archives, recursively), the same
//! error messages, and the same safety rules and size limits for archives.
//!
//! Archive entries are never written to disk. Stricter than Helm (issue 14): an archive holding
//! a symbolic or hard link, an absolute path or a `..` path component is refused with a message
//! naming the entry (Helm loads a link as an empty file, drops a leading `/` with the first path
//! component, and only refuses a `..` that climbs out of the chart).

use std::path::Path;

use crate::chart::{Chart, File, Metadata};
use crate::error::Error;
use crate::ignore::{HELM_IGNORE, Rules};
use crate::values::load_values;

/// Helm's `MaxDecompressedChartSize`: all files of an archive together, decompressed.
pub const MAX_DECOMPRESSED_CHART_SIZE: u64 = 100 * 1024 * 1024;
/// Helm's `MaxDecompressedFileSize`: the largest single file of a chart.
pub const MAX_DECOMPRESSED_FILE_SIZE: u64 = 5 * 1024 * 1024;

const UTF8_BOM: &[u8] = &[0xEF, 0xBB, 0xBF];

/// Loads the chart at `path`: a directory, or a file holding a gzipped tar archive.
pub fn load(path: &Path) -> Result<Chart, Error> {
    let meta = std::fs::metadata(path).map_err(|e| Error::Io {
        context: format!("stat {}", path.display()),
        source: e,
    })?;
    if meta.is_dir() {
        load_dir(path)
    } else {
        let data = std::fs::read(path).map_err(|e| Error::Io {
            context: format!("open {}", path.display()),
            source: e,
        })?;
        ensure_archive(&path.display().to_string(), &data)?;
        load_archive(&data)
    }
}

/// Helm's `EnsureArchive`: a clear message when CHART is not a gzip file (often a values file
/// given in the chart's place).
fn ensure_archive(name: &str, data: &[u8]) -> Result<(), Error> {
    if data.starts_with(b"\x1f\x8b\x08") {
        return Ok(());
    }
    if name.ends_with(".yml") || name.ends_with(".yaml") {
        return Err(Error::Load(format!(
            "file '{name}' seems to be a YAML file, but expected a gzipped archive"
        )));
    }
    Err(Error::Load(format!(
        "file '{name}' does not appear to be a gzipped archive; got '{}'",
        sniff_content_type(data)
    )))
}

/// The few answers of Go's `http.DetectContentType` a mistaken chart argument gets.
fn sniff_content_type(data: &[u8]) -> &'static str {
    let head = &data[..data.len().min(512)];
    if head.is_empty() {
        return "text/plain; charset=utf-8";
    }
    if head.starts_with(b"PK\x03\x04") {
        return "application/zip";
    }
    let binary = head.iter().any(|&b| {
        b <= 0x08 || b == 0x0B || (0x0E..=0x1A).contains(&b) || (0x1C..=0x1F).contains(&b)
    });
    if binary {
        "application/octet-stream"
    } else {
        "text/plain; charset=utf-8"
    }
}

/// Loads a chart from a directory, honouring its `.helmignore` (and Helm's default rule that
/// hidden files under `templates/` are skipped). Symbolic links are followed.
pub fn load_dir(dir: &Path) -> Result<Chart, Error> {
    load_files(dir_files(dir)?)
}

/// The files `helm package` would put in a chart's archive: those of the directory that its
/// `.helmignore` (and Helm's default rules) keep, relative to the chart's root.
pub fn dir_files(dir: &Path) -> Result<Vec<File>, Error> {
    let mut rules = match std::fs::read(dir.join(HELM_IGNORE)) {
        Ok(text) => Rules::parse(&String::from_utf8_lossy(&text)).map_err(Error::Load)?,
        Err(_) => Rules::default(),
    };
    rules.add_defaults();
    let mut files = Vec::new();
    walk(dir, "", &rules, &mut files, 0)?;
    Ok(files)
}

/// Deepest directory nesting followed (a symlink loop would otherwise never end).
const MAX_WALK_DEPTH: usize = 64;

fn walk(
    dir: &Path,
    rel: &str,
    rules: &Rules,
    out: &mut Vec<File>,
    depth: usize,
) -> Result<(), Error> {
    if depth > MAX_WALK_DEPTH {
        return Err(Error::Load(format!(
            "chart directory {} is nested deeper than {MAX_WALK_DEPTH} levels (a symbolic link loop?)",
            dir.display()
        )));
    }
    let io = |e: std::io::Error, p: &Path| Error::Io {
        context: format!("read {}", p.display()),
        source: e,
    };
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| io(e, dir))?
        .collect::<Result<_, _>>()
        .map_err(|e| io(e, dir))?;
    // Go's filepath.Walk visits names in lexical order.
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let rel_name = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        let path = entry.path();
        // Follow symlinks, as Helm's sympath.Walk does.
        let meta = std::fs::metadata(&path).map_err(|e| io(e, &path))?;
        if meta.is_dir() {
            if rules.ignore(&rel_name, true) {
                continue;
            }
            walk(&path, &rel_name, rules, out, depth + 1)?;
            continue;
        }
        if rules.ignore(&rel_name, false) {
            continue;
        }
        if !meta.is_file() {
            return Err(Error::Load(format!(
                "cannot load irregular file {} as it has file mode type bits set",
                path.display()
            )));
        }
        if meta.len() > MAX_DECOMPRESSED_FILE_SIZE {
            return Err(Error::Load(format!(
                "chart file {name:?} is larger than the maximum file size {MAX_DECOMPRESSED_FILE_SIZE}"
            )));
        }
        let data = std::fs::read(&path)
            .map_err(|e| Error::Load(format!("error reading {rel_name}: {e}")))?;
        out.push(File {
            name: rel_name,
            data: strip_bom(data),
        });
    }
    Ok(())
}

fn strip_bom(mut data: Vec<u8>) -> Vec<u8> {
    if data.starts_with(UTF8_BOM) {
        data.drain(..3);
    }
    data
}

/// Loads a chart from the bytes of a gzipped tar archive, with Helm's path checks and limits.
pub fn load_archive(data: &[u8]) -> Result<Chart, Error> {
    load_files(archive_files(data)?)
}

/// Helm's `LoadArchiveFiles`: the archive's files with their first path component removed.
pub fn archive_files(data: &[u8]) -> Result<Vec<File>, Error> {
    use std::io::Read;
    let gz = flate2::read::GzDecoder::new(data);
    let mut archive = tar::Archive::new(gz);
    let bad = |m: String| Error::Load(m);
    let mut files = Vec::new();
    let mut remaining = MAX_DECOMPRESSED_CHART_SIZE;
    let entries = archive.entries().map_err(|e| bad(e.to_string()))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| bad(e.to_string()))?;
        let kind = entry.header().entry_type();
        if kind.is_dir() || kind.is_pax_global_extensions() || kind.is_pax_local_extensions() {
            continue;
        }
        if kind.is_gnu_longname() || kind.is_gnu_longlink() {
            continue;
        }
        let raw_name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let delimiter = if raw_name.contains('\\') { '\\' } else { '/' };
        let parts: Vec<&str> = raw_name.split(delimiter).collect();
        refuse_unsafe_entry(&entry, &raw_name, &parts)?;
        let joined = parts[1..].join("/");
        if joined.starts_with('/') {
            return Err(bad("chart illegally contains absolute paths".into()));
        }
        let name = clean(&joined);
        if name == "." {
            return Err(bad(format!(
                "chart illegally contains content outside the base directory: {raw_name:?}"
            )));
        }
        if name.starts_with("..") {
            return Err(bad("chart illegally references parent directory".into()));
        }
        let bytes = name.as_bytes();
        if bytes.len() >= 3
            && bytes[0].is_ascii_alphabetic()
            && bytes[1] == b':'
            && bytes[2] == b'/'
        {
            return Err(bad("chart contains illegally named files".into()));
        }
        if parts[0] == "Chart.yaml" {
            return Err(bad("chart yaml not in base directory".into()));
        }
        let size = entry.header().size().map_err(|e| bad(e.to_string()))?;
        if size > remaining {
            return Err(bad(format!(
                "decompressed chart is larger than the maximum size {MAX_DECOMPRESSED_CHART_SIZE}"
            )));
        }
        if size > MAX_DECOMPRESSED_FILE_SIZE {
            return Err(bad(format!(
                "decompressed chart file {raw_name:?} is larger than the maximum file size {MAX_DECOMPRESSED_FILE_SIZE}"
            )));
        }
        let mut buf = Vec::new();
        let read = (&mut entry)
            .take(remaining)
            .read_to_end(&mut buf)
            .map_err(|e| bad(e.to_string()))? as u64;
        remaining -= read;
        if read < size || remaining == 0 {
            return Err(bad(format!(
                "decompressed chart is larger than the maximum size {MAX_DECOMPRESSED_CHART_SIZE}"
            )));
        }
        files.push(File {
            name,
            data: strip_bom(buf),
        });
    }
    if files.is_empty() {
        return Err(bad("no files in chart archive".into()));
    }
    Ok(files)
}

/// What Helm would load but ferroflux refuses (issue 14): an entry that is a symbolic or hard
/// link (Helm loads it as an empty file of that name), an absolute path (Helm drops the leading
/// `/` with the first component) and a `..` component anywhere, the first included (Helm drops
/// the first component unseen). None can escape today, since nothing is written to disk; they
/// are refused because no honest chart packer writes them and a later consumer of the archive
/// might extract it. Entries Helm itself refuses keep Helm's message (checked after this).
fn refuse_unsafe_entry<R: std::io::Read>(
    entry: &tar::Entry<'_, R>,
    raw_name: &str,
    parts: &[&str],
) -> Result<(), Error> {
    let kind = entry.header().entry_type();
    if kind.is_symlink() || kind.is_hard_link() {
        let target = entry
            .link_name_bytes()
            .map(|t| String::from_utf8_lossy(&t).into_owned())
            .unwrap_or_default();
        let what = if kind.is_symlink() {
            "symbolic"
        } else {
            "hard"
        };
        return Err(Error::Load(format!(
            "chart archive refused: entry {raw_name:?} is a {what} link (to {target:?}); links are not allowed in a chart archive"
        )));
    }
    let bytes = raw_name.as_bytes();
    let drive = bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':';
    if raw_name.starts_with('/') || raw_name.starts_with('\\') || drive {
        return Err(Error::Load(format!(
            "chart archive refused: entry {raw_name:?} has an absolute path"
        )));
    }
    // Helm refuses a `..` that climbs out after its first component is dropped, with its own
    // message; any other `..` (in the first component, or one that stays inside) is ours.
    if parts.contains(&"..") && !clean(&parts[1..].join("/")).starts_with("..") {
        return Err(Error::Load(format!(
            "chart archive refused: entry {raw_name:?} has a '..' path component"
        )));
    }
    Ok(())
}

/// Go's `path.Clean`.
pub fn clean(p: &str) -> String {
    let rooted = p.starts_with('/');
    let mut out: Vec<&str> = Vec::new();
    for part in p.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if out.last().is_some_and(|l| *l != "..") {
                    out.pop();
                } else if !rooted {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    let joined = out.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

/// Helm's `LoadFiles`: classifies the files of one chart and loads its subcharts.
pub fn load_files(files: Vec<File>) -> Result<Chart, Error> {
    let mut metadata: Option<Metadata> = None;
    for f in &files {
        if f.name == "Chart.yaml" {
            let text = String::from_utf8_lossy(&f.data);
            let v = crate::yaml::unmarshal_typed(&text)
                .map_err(|e| Error::Load(format!("cannot load Chart.yaml: {e}")))?;
            let mut md = metadata.take().unwrap_or_default();
            md.merge_decode(&v)
                .map_err(|e| Error::Load(format!("cannot load Chart.yaml: {e}")))?;
            if md.api_version.is_empty() {
                md.api_version = "v1".into();
            }
            metadata = Some(md);
        }
    }
    let mut chart = Chart::default();
    // Subchart files by the first path component under charts/, in first-seen order.
    let mut subcharts: Vec<(String, Vec<File>)> = Vec::new();
    for f in files {
        match f.name.as_str() {
            "Chart.yaml" | "Chart.lock" | "requirements.lock" => {
                if f.name == "requirements.lock"
                    && metadata.as_ref().is_none_or(|m| m.api_version == "v1")
                {
                    chart.files.push(f);
                }
            }
            "values.yaml" => {
                let text = String::from_utf8_lossy(&f.data);
                chart.values = load_values(&text)
                    .map_err(|e| Error::Load(format!("cannot load values.yaml: {e}")))?;
            }
            "values.schema.json" => chart.schema = Some(f.data),
            "requirements.yaml" => {
                let md = metadata.get_or_insert_with(Metadata::default);
                let text = String::from_utf8_lossy(&f.data);
                let v = crate::yaml::unmarshal_typed(&text)
                    .map_err(|e| Error::Load(format!("cannot load requirements.yaml: {e}")))?;
                md.merge_decode(&v)
                    .map_err(|e| Error::Load(format!("cannot load requirements.yaml: {e}")))?;
                if md.api_version == "v1" {
                    chart.files.push(f);
                }
            }
            n if n.starts_with("templates/") => chart.templates.push(f),
            n if n.starts_with("charts/") => {
                if n.ends_with(".prov") {
                    chart.files.push(f);
                    continue;
                }
                let rest = &n["charts/".len()..];
                let cname = rest.split('/').next().unwrap_or(rest).to_string();
                let sub = File {
                    name: rest.to_string(),
                    data: f.data,
                };
                match subcharts.iter_mut().find(|(n, _)| *n == cname) {
                    Some((_, list)) => list.push(sub),
                    None => subcharts.push((cname, vec![sub])),
                }
            }
            _ => chart.files.push(f),
        }
    }
    let Some(mut metadata) = metadata else {
        return Err(Error::Load("Chart.yaml file is missing".into()));
    };
    metadata.validate()?;
    chart.metadata = metadata;
    // Helm iterates a Go map here (random order); sorting makes our order stable.
    subcharts.sort_by(|a, b| a.0.cmp(&b.0));
    for (n, files) in subcharts {
        if n.starts_with('_') || n.starts_with('.') {
            continue;
        }
        let sub = if n.ends_with(".tgz") {
            let file = &files[0];
            if file.name != n {
                return Err(Error::Load(format!(
                    "error unpacking subchart tar in {}: expected {n}, got {}",
                    chart.name(),
                    file.name
                )));
            }
            load_archive(&file.data)
        } else {
            let trimmed = files
                .into_iter()
                .filter_map(|f| {
                    let (_, rest) = f.name.split_once('/')?;
                    Some(File {
                        name: rest.to_string(),
                        data: f.data,
                    })
                })
                .collect();
            load_files(trimmed)
        };
        let sub = sub.map_err(|e| {
            Error::Load(format!(
                "error unpacking subchart {n} in {}: {e}",
                chart.name()
            ))
        })?;
        chart.dependencies.push(sub);
    }
    Ok(chart)
}
