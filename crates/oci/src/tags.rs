//! Choosing a tag: the highest semver tag in a range (Flux's `ref.semver`, optionally narrowed
//! by the regular expression `ref.semverFilter`), and sorting tags for `list artifacts`.

use ferroflux_semver::{Range, Version, latest_matching};

use crate::error::{Error, Result};

/// The highest tag of `tags` within `range` whose name matches `filter`; the error lists the
/// highest semver tags there are.
pub fn pick_semver(
    repository: &str,
    tags: &[String],
    range: &str,
    filter: Option<&str>,
) -> Result<String> {
    let parsed = Range::parse(range).map_err(|e| Error::InvalidReference {
        reference: repository.to_string(),
        why: format!("semver range {range:?}: {e}"),
    })?;
    let filter =
        filter
            .map(regex::Regex::new)
            .transpose()
            .map_err(|e| Error::InvalidReference {
                reference: repository.to_string(),
                why: format!("semverFilter: {e}"),
            })?;
    let candidates: Vec<&str> = tags
        .iter()
        .map(String::as_str)
        .filter(|t| filter.as_ref().is_none_or(|f| f.is_match(t)))
        .collect();
    if let Some(v) = latest_matching(&parsed, candidates.iter().copied()) {
        return Ok(v.original);
    }
    let sorted = sort_semver_desc(&candidates);
    let closest = if sorted.is_empty() {
        ", the repository has no semver tags".to_string()
    } else {
        format!(
            ", closest tags: {}",
            sorted
                .iter()
                .take(5)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    Err(Error::NoMatchingTag {
        repository: repository.to_string(),
        range: range.to_string(),
        closest,
    })
}

/// The tags matching the regular expression `re` (`--filter-regex`, `ref.semverFilter`).
pub fn filter_regex(tags: Vec<String>, re: &str) -> Result<Vec<String>> {
    let re = regex::Regex::new(re).map_err(|e| Error::InvalidReference {
        reference: re.to_string(),
        why: format!("invalid regular expression: {e}"),
    })?;
    Ok(tags.into_iter().filter(|t| re.is_match(t)).collect())
}

/// The semver tags of `tags`, highest first (others dropped).
pub fn sort_semver_desc(tags: &[&str]) -> Vec<String> {
    let mut v: Vec<Version> = tags
        .iter()
        .filter_map(|t| Version::parse_tag(t).ok())
        .collect();
    v.sort_by(|a, b| b.compare(a).then_with(|| b.original.cmp(&a.original)));
    v.into_iter().map(|v| v.original).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_highest_in_range() {
        let tags: Vec<String> = ["1.0.0", "1.2.0", "2.0.0", "latest", "1.3.0-rc.1"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(pick_semver("r", &tags, "^1", None).unwrap(), "1.2.0");
        assert_eq!(pick_semver("r", &tags, ">=0.0.0", None).unwrap(), "2.0.0");
        assert_eq!(
            pick_semver("r", &tags, ">=1.0.0-0", Some("rc")).unwrap(),
            "1.3.0-rc.1"
        );
        let e = pick_semver("r", &tags, ">=3", None)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "no tag of r matches \">=3\", closest tags: 2.0.0, 1.3.0-rc.1, 1.2.0, 1.0.0"
        );
    }
}
