//! Charts in OCI registries (`HelmRepository` `type: oci`), as source-controller's
//! `OCIChartRepository` and Helm's registry client do them, on `ferroflux-oci`.
//!
//! A chart `NAME` of the repository `oci://HOST/PATH` lives at `oci://HOST/PATH/NAME`, one tag
//! per chart version. Helm writes a version's `+` as `_` in the tag (a tag cannot hold `+`) and
//! reads it back. An exact version (`1.2.3`) is pulled by its tag without listing tags, as Flux
//! does; a range (or no version) lists the tags and takes the highest semver tag in it. The
//! manifest must be Helm's: config `application/vnd.cncf.helm.config.v1+json` and a layer
//! `application/vnd.cncf.helm.chart.content.v1.tar+gzip`, the chart archive.

use ferroflux_oci::manifest::{self, Manifest};
use ferroflux_oci::{Client, ClientOptions, Reference, artifact};
use ferroflux_semver::{Range, Version, latest_matching};

use crate::build::{Build, BuildOptions, MAX_CHART_SIZE, finish_remote, reuse_cached};
use crate::error::{Error, Result};
use crate::index;

/// An OCI chart repository: `oci://HOST/PATH` and a client of its registry.
pub struct OciRepository {
    /// The repository URL without tag (`HOST/PATH`).
    pub base: Reference,
    client: Client,
}

/// Helm's tag for a chart version (`+` is not allowed in a tag).
pub fn tag_of(version: &str) -> String {
    version.replace('+', "_")
}

/// The chart version a tag stands for.
pub fn version_of(tag: &str) -> String {
    tag.replace('_', "+")
}

impl OciRepository {
    /// The repository at `url` (`oci://HOST/PATH`, no tag or digest).
    pub fn new(url: &str, opts: ClientOptions) -> Result<Self> {
        let invalid = |detail: String| Error::InvalidUrl {
            url: url.to_string(),
            detail,
        };
        if !url.starts_with("oci://") {
            return Err(invalid(
                "an OCI Helm repository URL starts with oci://".into(),
            ));
        }
        let base =
            Reference::parse(url.trim_end_matches('/')).map_err(|e| invalid(e.to_string()))?;
        if base.tag.is_some() || base.digest.is_some() {
            return Err(invalid(
                "the URL names a repository of charts, without tag or digest".into(),
            ));
        }
        let client = Client::for_reference(&base, opts).map_err(|e| invalid(e.to_string()))?;
        Ok(OciRepository { base, client })
    }

    /// `oci://HOST/PATH/NAME`.
    pub fn chart_reference(&self, name: &str) -> Result<Reference> {
        let text = format!("oci://{}/{name}", self.base.repo_url());
        Reference::parse(&text)
            .map_err(|e| Error::chart_reference(format!("invalid chart name '{name}': {e}")))
    }

    /// The version of chart `name` that `range` picks (source-controller's
    /// `GetChartVersion`): an exact version as is, else the highest semver tag in the range.
    pub fn chart_version(&self, name: &str, range: &str) -> Result<String> {
        let chart = self.chart_reference(name)?;
        let range = range.trim();
        if Version::parse_tag(range).is_ok() {
            return Ok(range.to_string());
        }
        let wrap = |detail: String| {
            Error::chart_reference(format!(
                "failed to get chart version for remote reference: {detail}"
            ))
        };
        let tags = self.client.list_tags(&chart.repository).map_err(|e| {
            classify(e, |d| {
                wrap(format!("could not get tags for \"{name}\": {d}"))
            })
        })?;
        if tags.is_empty() {
            return Err(wrap(format!(
                "unable to locate any tags in provided repository: {name}"
            )));
        }
        let versions: Vec<String> = tags.iter().map(|t| version_of(t)).collect();
        if !range.is_empty()
            && let Some(exact) = versions.iter().find(|v| *v == range)
        {
            return Ok(exact.clone());
        }
        let constraint = if range.is_empty() { "*" } else { range };
        let parsed = Range::parse(constraint)
            .map_err(|e| wrap(format!("invalid version range '{constraint}': {e}")))?;
        if let Some(v) = latest_matching(&parsed, versions.iter().map(String::as_str)) {
            return Ok(v.original);
        }
        let refs: Vec<&str> = versions.iter().map(String::as_str).collect();
        let closest = ferroflux_oci::tags::sort_semver_desc(&refs);
        let listing = if closest.is_empty() {
            format!(
                "the repository has no semver tags (tags: {})",
                first(&versions)
            )
        } else {
            format!("closest tags: {}", first(&closest))
        };
        Err(wrap(format!(
            "could not locate a version matching provided version string {constraint} in {}: {listing}",
            chart.repo_url()
        )))
    }

    /// Downloads the chart archive of `name` at `version`; checks that the manifest is a Helm
    /// chart's. Returns the archive and the manifest's digest.
    pub fn download(&self, name: &str, version: &str) -> Result<(Vec<u8>, String)> {
        let chart = self.chart_reference(name)?.with_tag(&tag_of(version));
        let url = format!("oci://{}:{}", chart.repo_url(), tag_of(version));
        let fail = |d: String| {
            Error::chart_pull(format!(
                "failed to download chart for remote reference: failed to get '{url}': {d}"
            ))
        };
        let resolved = artifact::resolve(&self.client, &chart).map_err(|e| classify(e, fail))?;
        check_helm_manifest(&url, &resolved.manifest).map_err(fail)?;
        let layer =
            artifact::select_layer(&chart, &resolved.manifest, Some(manifest::HELM_CONTENT))
                .map_err(|e| fail(e.to_string()))?
                .clone();
        let mut file = artifact::fetch_layer(
            &self.client,
            &chart.with_digest(&resolved.digest),
            &layer,
            MAX_CHART_SIZE,
        )
        .map_err(|e| classify(e, fail))?;
        let mut data = Vec::with_capacity(layer.size as usize);
        std::io::Read::read_to_end(&mut file, &mut data)
            .map_err(|e| fail(format!("cannot read the downloaded layer: {e}")))?;
        Ok((data, resolved.digest))
    }
}

/// A registry error as the build reports it: refused credentials become Flux's
/// `AuthenticationFailed` ("failed to authenticate with the Helm repository"), others `wrap`.
fn classify(e: ferroflux_oci::Error, wrap: impl Fn(String) -> Error) -> Error {
    match e {
        ferroflux_oci::Error::Unauthorized { .. } | ferroflux_oci::Error::InvalidCredentials(_) => {
            Error::authentication(e.to_string())
        }
        other => wrap(other.to_string()),
    }
}

fn first(items: &[String]) -> String {
    let mut shown: Vec<&str> = items.iter().take(5).map(String::as_str).collect();
    if items.len() > 5 {
        shown.push("...");
    }
    shown.join(", ")
}

/// Helm's check of a pulled manifest: a chart config and a chart layer.
fn check_helm_manifest(url: &str, m: &Manifest) -> std::result::Result<(), String> {
    if m.config.media_type != manifest::HELM_CONFIG {
        return Err(format!(
            "{url} is not a Helm chart: its config has media type \"{}\" (a chart's is \"{}\")",
            m.config.media_type,
            manifest::HELM_CONFIG
        ));
    }
    if !m
        .layers
        .iter()
        .any(|l| l.media_type == manifest::HELM_CONTENT)
    {
        let found: Vec<&str> = m.layers.iter().map(|l| l.media_type.as_str()).collect();
        return Err(format!(
            "{url} is not a Helm chart: no layer has media type \"{}\" (layers: {})",
            manifest::HELM_CONTENT,
            found.join(", ")
        ));
    }
    Ok(())
}

/// What a pull from an OCI repository built, with the manifest digest it came from (`None`
/// when the cached chart was kept without a request).
pub struct OciBuild {
    /// The build.
    pub build: Build,
    /// `sha256:<hex>` of the chart's manifest.
    pub digest: Option<String>,
}

/// Builds chart `name` at `range` from an OCI repository, as source-controller's remote builder
/// does with an `OCIChartRepository`: the cached chart is kept when name and version match.
pub fn build_from_oci(
    repo: &OciRepository,
    name: &str,
    range: &str,
    opts: &BuildOptions,
) -> Result<OciBuild> {
    let chart_version = repo.chart_version(name, range)?;
    let mut version = chart_version.clone();
    if let Some(meta) = &opts.version_metadata {
        version = index::with_metadata(&version, meta).map_err(Error::metadata_patch)?;
    }
    let requires_packaging =
        !opts.effective_values_files().is_empty() || opts.version_metadata.is_some();
    if let Some(cached) = reuse_cached(name, &version, opts, requires_packaging) {
        return Ok(OciBuild {
            build: cached,
            digest: None,
        });
    }
    let (data, digest) = repo.download(name, &chart_version)?;
    let build = finish_remote(name, "the HelmChart", version, data, opts)?;
    Ok(OciBuild {
        build,
        digest: Some(digest),
    })
}

/// Pushes a packaged chart (`.tgz`) as Helm does (`helm push`): its Chart.yaml as the JSON
/// config, the archive as the one layer, tagged with the chart's version (`+` as `_`) under
/// `oci://HOST/PATH/<chart name>`. Returns the reference pushed and the manifest digest.
pub fn push_chart(repo: &OciRepository, archive: &[u8]) -> Result<(Reference, String)> {
    let files = ferroflux_helm::archive_files(archive)
        .map_err(|e| Error::package(format!("cannot read the chart archive: {e}")))?;
    let chart = ferroflux_helm::load_files(files.clone())
        .map_err(|e| Error::package(format!("cannot load the chart: {e}")))?;
    let chart_yaml = files
        .iter()
        .find(|f| f.name == "Chart.yaml")
        .ok_or_else(|| Error::package("the chart has no Chart.yaml"))?;
    let meta: serde_json::Value = serde_saphyr::from_slice(&chart_yaml.data)
        .map_err(|e| Error::package(format!("cannot parse Chart.yaml: {e}")))?;
    let config = serde_json::to_vec(&meta)
        .map_err(|e| Error::package(format!("cannot encode Chart.yaml as JSON: {e}")))?;
    let target = repo
        .chart_reference(&chart.metadata.name)?
        .with_tag(&tag_of(&chart.metadata.version));
    let push_err = |e: ferroflux_oci::Error| Error::package(format!("push to {target}: {e}"));
    let repository = target.repository.clone();
    let config_desc = repo
        .client
        .push_blob_bytes(&repository, manifest::HELM_CONFIG, &config)
        .map_err(push_err)?;
    let layer = repo
        .client
        .push_blob_bytes(&repository, manifest::HELM_CONTENT, archive)
        .map_err(push_err)?;
    let m = Manifest {
        schema_version: 2,
        media_type: Some(manifest::OCI_MANIFEST.into()),
        artifact_type: None,
        config: config_desc,
        layers: vec![layer],
        annotations: Default::default(),
    };
    let bytes = serde_json::to_vec(&m)
        .map_err(|e| Error::package(format!("cannot encode the manifest: {e}")))?;
    let digest = repo
        .client
        .put_manifest(&target, manifest::OCI_MANIFEST, &bytes)
        .map_err(push_err)?;
    Ok((target, digest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_write_build_metadata_as_helm_does() {
        assert_eq!(tag_of("1.2.3+build.1"), "1.2.3_build.1");
        assert_eq!(version_of("1.2.3_build.1"), "1.2.3+build.1");
        assert_eq!(version_of("1.2.3"), "1.2.3");
    }

    #[test]
    fn a_flux_artifact_is_not_a_chart() {
        let desc = |mt: &str| ferroflux_oci::manifest::Descriptor {
            media_type: mt.into(),
            digest: "sha256:00".into(),
            size: 1,
            annotations: Default::default(),
            platform: None,
        };
        let m = Manifest {
            schema_version: 2,
            media_type: None,
            artifact_type: None,
            config: desc(manifest::FLUX_CONFIG),
            layers: vec![desc(manifest::FLUX_CONTENT)],
            annotations: Default::default(),
        };
        let e = check_helm_manifest("oci://h/c:1.0.0", &m).unwrap_err();
        assert_eq!(
            e,
            "oci://h/c:1.0.0 is not a Helm chart: its config has media type \"application/vnd.cncf.flux.config.v1+json\" (a chart's is \"application/vnd.cncf.helm.config.v1+json\")"
        );
    }
}
