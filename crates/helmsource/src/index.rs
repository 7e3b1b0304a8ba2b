//! A Helm repository's `index.yaml`: parsed with Helm's rules (an `apiVersion` is required,
//! entries whose version is not semver are skipped) and searched for a chart version the way
//! source-controller does (an exact match first, then the highest version in the range, equal
//! versions ordered by `created`).

use std::collections::BTreeMap;

use ferroflux_semver::{Range, Version};
use serde::Deserialize;
use serde_json::Value;

/// The index of a chart repository.
#[derive(Debug, Clone, Default)]
pub struct IndexFile {
    /// `apiVersion` of the index.
    pub api_version: String,
    /// Chart versions by chart name, newest first.
    pub entries: BTreeMap<String, Vec<ChartVersion>>,
}

/// One version of a chart in the index.
#[derive(Debug, Clone, Default)]
pub struct ChartVersion {
    /// The chart's name.
    pub name: String,
    /// The chart's version.
    pub version: String,
    /// Where the chart archive can be downloaded, absolute or relative to the repository.
    pub urls: Vec<String>,
    /// sha256 of the archive, as the index gives it.
    pub digest: String,
    /// When the version was packaged (RFC 3339).
    pub created: String,
    /// `appVersion` of the chart.
    pub app_version: String,
}

/// An entry as written: real indexes leave numbers unquoted (`appVersion: 1.16`,
/// `version: 1.0`), which Helm reads as strings; so does this.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawChartVersion {
    #[serde(default)]
    name: Value,
    #[serde(default)]
    version: Value,
    #[serde(default)]
    urls: Value,
    #[serde(default)]
    digest: Value,
    #[serde(default)]
    created: Value,
    #[serde(default)]
    app_version: Value,
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

impl From<RawChartVersion> for ChartVersion {
    fn from(raw: RawChartVersion) -> Self {
        ChartVersion {
            name: scalar(&raw.name),
            version: scalar(&raw.version),
            urls: match &raw.urls {
                Value::Array(items) => items.iter().map(scalar).collect(),
                Value::Null => Vec::new(),
                other => vec![scalar(other)],
            },
            digest: scalar(&raw.digest),
            created: scalar(&raw.created),
            app_version: scalar(&raw.app_version),
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawIndex {
    #[serde(default)]
    api_version: Value,
    #[serde(default)]
    entries: Option<BTreeMap<String, Option<Vec<Option<RawChartVersion>>>>>,
}

/// Parses an index. `source` (the index URL) prefixes every message.
pub fn parse(data: &[u8], source: &str) -> Result<IndexFile, String> {
    if data.iter().all(|b| b.is_ascii_whitespace()) {
        return Err(format!("{source}: empty index.yaml file"));
    }
    let text = std::str::from_utf8(data)
        .map_err(|e| format!("{source}: the index is not UTF-8 text: {e}"))?;
    let raw: RawIndex = serde_saphyr::from_str(text).map_err(|e| format!("{source}: {e}"))?;
    let mut entries = BTreeMap::new();
    for (name, versions) in raw.entries.unwrap_or_default() {
        let mut kept = Vec::new();
        for cv in versions
            .unwrap_or_default()
            .into_iter()
            .flatten()
            .map(ChartVersion::from)
        {
            // Helm skips invalid entries with a log line instead of refusing the whole index.
            if Version::parse_tag(&cv.version).is_err() {
                tracing::debug!(chart = %name, version = %cv.version, "skipping index entry with an invalid version");
                continue;
            }
            let mut cv = cv;
            if cv.name.is_empty() {
                cv.name = name.clone();
            }
            kept.push(cv);
        }
        sort_newest_first(&mut kept);
        entries.insert(name, kept);
    }
    let api_version = scalar(&raw.api_version);
    if api_version.is_empty() {
        return Err(format!("{source}: no API version specified"));
    }
    Ok(IndexFile {
        api_version,
        entries,
    })
}

fn sort_newest_first(versions: &mut [ChartVersion]) {
    versions.sort_by(|a, b| {
        match (
            Version::parse_tag(&a.version),
            Version::parse_tag(&b.version),
        ) {
            (Ok(va), Ok(vb)) => vb.compare(&va).then_with(|| b.created.cmp(&a.created)),
            _ => std::cmp::Ordering::Equal,
        }
    });
}

/// How many names or versions a "not found" message lists.
const LISTED: usize = 20;

fn listing(items: &[&str]) -> String {
    let mut s = items
        .iter()
        .take(LISTED)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > LISTED {
        s.push_str(&format!(" and {} more", items.len() - LISTED));
    }
    s
}

impl IndexFile {
    /// The version of chart `name` that `range` selects (empty or `*`: the latest stable),
    /// as source-controller's `GetChartVersion`. Errors say what the index has instead.
    pub fn chart_version(&self, name: &str, range: &str) -> Result<&ChartVersion, String> {
        let Some(versions) = self.entries.get(name) else {
            let names: Vec<&str> = self.entries.keys().map(String::as_str).collect();
            return Err(if names.is_empty() {
                format!("no chart name found: the index has no charts (looked for '{name}')")
            } else {
                format!(
                    "no chart name found: '{name}' is not in the index (charts: {})",
                    listing(&names)
                )
            });
        };
        if versions.is_empty() {
            return Err(format!("no chart version found: '{name}' has no versions"));
        }
        let range = range.trim();
        if !range.is_empty()
            && let Some(exact) = versions.iter().find(|cv| cv.version == range)
        {
            return Ok(exact);
        }
        let constraint = if range.is_empty() { "*" } else { range };
        let parsed = Range::parse(constraint)
            .map_err(|e| format!("invalid version range '{constraint}': {e}"))?;
        // Newest first already; the first match is the highest (then the newest created).
        versions
            .iter()
            .find(|cv| {
                Version::parse_tag(&cv.version)
                    .map(|v| parsed.matches(&v))
                    .unwrap_or(false)
            })
            .ok_or_else(|| {
                let have: Vec<&str> = versions.iter().map(|cv| cv.version.as_str()).collect();
                format!(
                    "no '{name}' chart with version matching '{range}' found (versions in the index: {})",
                    listing(&have)
                )
            })
    }
}

/// Masterminds' `SetMetadata` then `String`: the version with `+<metadata>` replacing any
/// build metadata it had.
pub fn with_metadata(version: &str, metadata: &str) -> Result<String, String> {
    let v = Version::parse_loose(version)
        .map_err(|e| format!("failed to parse version '{version}': {e}"))?;
    let valid = !metadata.is_empty()
        && metadata
            .split('.')
            .all(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'));
    if !valid {
        return Err(format!("invalid build metadata '{metadata}'"));
    }
    let pre = if v.pre.is_empty() {
        String::new()
    } else {
        format!("-{}", v.pre)
    };
    Ok(format!(
        "{}.{}.{}{pre}+{metadata}",
        v.major, v.minor, v.patch
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const INDEX: &str = r#"
apiVersion: v1
entries:
  podinfo:
    - name: podinfo
      version: 6.0.0
      urls: [podinfo-6.0.0.tgz]
      created: "2024-01-01T00:00:00Z"
    - name: podinfo
      version: 6.1.0
      urls: [podinfo-6.1.0.tgz]
    - name: podinfo
      version: 7.0.0-rc.1
      urls: [podinfo-7.0.0-rc.1.tgz]
    - name: podinfo
      version: not-a-version
      urls: [x.tgz]
  redis: []
generated: "2024-01-01T00:00:00Z"
"#;

    #[test]
    fn selects_like_source_controller() {
        let idx = parse(INDEX.as_bytes(), "http://h/index.yaml").unwrap();
        assert_eq!(idx.entries["podinfo"].len(), 3, "invalid entry skipped");
        assert_eq!(idx.chart_version("podinfo", "*").unwrap().version, "6.1.0");
        assert_eq!(idx.chart_version("podinfo", "").unwrap().version, "6.1.0");
        assert_eq!(
            idx.chart_version("podinfo", "<6.1").unwrap().version,
            "6.0.0"
        );
        assert_eq!(
            idx.chart_version("podinfo", "7.0.0-rc.1").unwrap().version,
            "7.0.0-rc.1"
        );
        assert_eq!(
            idx.chart_version("podinfo", ">=7.0.0-0").unwrap().version,
            "7.0.0-rc.1"
        );
        let e = idx.chart_version("podinfo", ">=8").unwrap_err();
        assert_eq!(
            e,
            "no 'podinfo' chart with version matching '>=8' found (versions in the index: 7.0.0-rc.1, 6.1.0, 6.0.0)"
        );
        let e = idx.chart_version("nginx", "*").unwrap_err();
        assert!(
            e.contains("'nginx' is not in the index (charts: podinfo, redis)"),
            "{e}"
        );
        assert!(
            idx.chart_version("redis", "*")
                .unwrap_err()
                .contains("no chart version found")
        );
    }

    #[test]
    fn bad_indexes_are_named() {
        let e = parse(b"  \n", "http://h/index.yaml").unwrap_err();
        assert_eq!(e, "http://h/index.yaml: empty index.yaml file");
        let e = parse(b"entries: {}\n", "u").unwrap_err();
        assert!(e.ends_with("no API version specified"), "{e}");
        let e = parse(b"apiVersion: v1\nentries: [\n", "u").unwrap_err();
        assert!(e.starts_with("u: "), "{e}");
    }

    #[test]
    fn metadata_replaces_build_metadata() {
        assert_eq!(with_metadata("1.2.3", "abc123").unwrap(), "1.2.3+abc123");
        assert_eq!(
            with_metadata("1.2.3-rc.1+old", "5").unwrap(),
            "1.2.3-rc.1+5"
        );
        assert!(with_metadata("1.2.3", "bad_meta").is_err());
    }
}
