//! The `ImageRepository` reconciler, as image-reflector-controller's: the image is parsed as
//! go-containerregistry does (Docker Hub and `library/` implied, no scheme, no tag), the
//! registry's tag list is read with `ferroflux-oci` (paginated, credentials from `secretRef`,
//! TLS from `certSecretRef`, plain HTTP with `insecure`, under `spec.timeout` or the interval),
//! the tags matching `exclusionList` are dropped, and the rest go to the [`TagStore`] under the
//! canonical image name. The status gets `lastScanResult` (tag count, the ten highest tags in
//! descending string order, scan time, and the Adler-32 checksum of the stored list as Flux's
//! database computes it), `canonicalImageName`, `observedExclusionList`, and Ready
//! "successful scan: found N tags with checksum C".
//!
//! A scan runs as Flux's `shouldScan` decides: never scanned, a `reconcile.fluxcd.io/requestedAt`
//! not yet handled, a new image name, a new exclusion list, no tags in the store (after a
//! restart), or the interval elapsed since the last scan; otherwise the pass only requeues for
//! the rest of the interval.
//!
//! Where the tags are kept: Flux keeps them in the controller's own database (badger, on an
//! emptyDir), not in the status, which holds only the ten latest. ferroflux keeps them in the
//! controller's memory ([`TagStore`]), shared with the ImagePolicy reconciler; like Flux's
//! emptyDir it does not survive the pod, and an empty store makes the next pass scan again
//! ("no tags in database").

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::finalizer;
use crate::gitrepository::Reconciled;
use crate::metrics::Metrics;
use crate::ocirepository::registry_options;
use crate::sourcefetch::FetchError;
use crate::sourceloop;
use crate::step::{self, Failure};
use ferroflux_api::conditions::{self, Conditions, reason};
use ferroflux_api::image::{ImageProvider, LATEST_TAGS, ScanResult};
use ferroflux_api::{ImageRepository, RECONCILE_REQUESTED_AT};
use ferroflux_oci::{Client, ClientOptions};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::reflector::Store;
use std::future::Future;
use std::pin::Pin;

const FIELD_MANAGER: &str = "image-reflector-controller";
const KIND: &str = "ImageRepository";

/// Flux's reasons of the image kinds (`image.toolkit.fluxcd.io/v1`'s condition_types.go).
pub mod image_reason {
    /// The image cannot be parsed.
    pub const IMAGE_URL_INVALID: &str = "ImageURLInvalid";
    /// The referred object is missing or not ready.
    pub const DEPENDENCY_NOT_READY: &str = "DependencyNotReady";
    /// Credentials missing or refused.
    pub const AUTHENTICATION_FAILED: &str = "AuthenticationFailed";
    /// The registry could not be read.
    pub const READ_OPERATION_FAILED: &str = "ReadOperationFailed";
    /// `digestReflectionPolicy: Always` without an interval.
    pub const INTERVAL_NOT_CONFIGURED: &str = "IntervalNotConfigured";
    /// The policy or its tag filter cannot be used.
    pub const INVALID_POLICY: &str = "InvalidPolicy";
    /// What ferroflux does not do yet.
    pub const UNSUPPORTED: &str = "UnsupportedFeature";
}

/// The tags of every scanned image, by canonical name (`index.docker.io/library/alpine`), in
/// the controller's memory: what Flux's tag database holds.
#[derive(Clone, Default)]
pub struct TagStore(Arc<Mutex<BTreeMap<String, Vec<String>>>>);

impl TagStore {
    /// The stored tags of `canonical` (empty when never scanned since the process started).
    pub fn tags(&self, canonical: &str) -> Vec<String> {
        self.0
            .lock()
            .map(|m| m.get(canonical).cloned().unwrap_or_default())
            .unwrap_or_default()
    }

    /// Replaces the tags of `canonical`; returns their checksum.
    pub fn set(&self, canonical: &str, tags: Vec<String>) -> String {
        let sum = checksum(&tags);
        if let Ok(mut m) = self.0.lock() {
            m.insert(canonical.to_string(), tags);
        }
        sum
    }
}

/// Flux's revision of a tag list: the Adler-32 checksum of its JSON, in decimal.
pub fn checksum(tags: &[String]) -> String {
    adler32(&serde_json::to_vec(tags).unwrap_or_default()).to_string()
}

/// Adler-32 (RFC 1950), which Go's `hash/adler32` computes.
fn adler32(bytes: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for &byte in bytes {
        a = (a + u32::from(byte)) % 65521;
        b = (b + a) % 65521;
    }
    (b << 16) | a
}

/// An image parsed as go-containerregistry's `name.ParseReference` in its default mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageName {
    /// `host[:port]`; `index.docker.io` when the image names none.
    pub registry: String,
    /// The repository path (`library/alpine`).
    pub repository: String,
}

impl ImageName {
    /// `registry/repository`: what Flux writes as `canonicalImageName`.
    pub fn canonical(&self) -> String {
        format!("{}/{}", self.registry, self.repository)
    }
}

const REPOSITORY_CHARS: &str = "abcdefghijklmnopqrstuvwxyz0123456789_-./";

/// Parses `spec.image` with Flux's checks and messages: no URL scheme, no tag.
pub fn parse_image(image: &str) -> Result<ImageName, String> {
    if let Some((scheme, _)) = image.split_once("://") {
        return Err(format!(
            "image '{image}' should not include URL scheme; remove '{scheme}://'"
        ));
    }
    let name = image.split_once('@').map_or(image, |(n, _)| n);
    let (registry, rest) = match name.split_once('/') {
        Some((host, rest)) if host.contains(['.', ':']) || host == "localhost" => {
            (host.to_string(), rest.to_string())
        }
        _ => ("index.docker.io".to_string(), name.to_string()),
    };
    if let Some((_, tag)) = rest.split_once(':') {
        return Err(format!(
            "image '{image}' should not include a tag; remove ':{tag}'"
        ));
    }
    if rest.is_empty() {
        return Err("a repository name must be specified".into());
    }
    if rest.chars().any(|c| !REPOSITORY_CHARS.contains(c)) {
        return Err(format!(
            "repository can only contain the characters `{REPOSITORY_CHARS}`: {rest}"
        ));
    }
    let repository = if registry == "index.docker.io" && !rest.contains('/') {
        format!("library/{rest}")
    } else {
        rest
    };
    Ok(ImageName {
        registry,
        repository,
    })
}

/// The tags not matching any of `patterns`; Flux's message when one does not compile.
pub fn exclude(tags: Vec<String>, patterns: &[String]) -> Result<Vec<String>, String> {
    let compiled = patterns
        .iter()
        .map(|p| {
            regex::Regex::new(p)
                .map_err(|e| format!("failed to compile regex {p}: {}", go_regex_error(p, &e)))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(tags
        .into_iter()
        .filter(|t| !compiled.iter().any(|r| r.is_match(t)))
        .collect())
}

/// Go's `regexp` wording of a pattern that does not compile (`error parsing regexp: missing
/// closing ): `(``) for the mistakes people make; others keep the Rust regex engine's detail.
pub fn go_regex_error(pattern: &str, e: &regex::Error) -> String {
    let detail = e.to_string();
    let last = detail
        .lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("error: "))
        .unwrap_or(detail.as_str())
        .to_string();
    let code = match last.as_str() {
        "unclosed group" => "missing closing )",
        "unopened group" => "unexpected )",
        "unclosed character class" => "missing closing ]",
        "repetition operator missing expression" => "missing argument to repetition operator",
        _ => return format!("error parsing regexp: {last}: `{pattern}`"),
    };
    format!("error parsing regexp: {code}: `{pattern}`")
}

/// The first [`LATEST_TAGS`] of `tags` in descending string order, as Flux sorts them.
pub fn latest_tags(tags: &mut [String]) -> Vec<String> {
    tags.sort_by(|a, b| b.cmp(a));
    tags.iter().take(LATEST_TAGS).cloned().collect()
}

/// Why a scan runs now (Flux's reasons), or `None` with the time left until the next one.
pub fn should_scan(
    obj: &ImageRepository,
    canonical: &str,
    store: &TagStore,
    now: Timestamp,
    interval: Duration,
) -> Result<&'static str, Duration> {
    let status = obj.status.clone().unwrap_or_default();
    let Some(last) = status.last_scan_result.as_ref() else {
        return Ok("first scan");
    };
    let requested = obj.annotations().get(RECONCILE_REQUESTED_AT);
    if requested.is_some() && requested != status.last_handled_reconcile_at.as_ref() {
        return Ok("reconcile requested");
    }
    if status.canonical_image_name.as_deref() != Some(canonical) {
        return Ok("new image name");
    }
    if status.observed_exclusion_list.unwrap_or_default() != obj.exclusion_list() {
        return Ok("updated exclusion list");
    }
    if store.tags(canonical).is_empty() && last.tag_count > 0 {
        return Ok("no tags in database");
    }
    let elapsed = last
        .scan_time
        .as_deref()
        .and_then(|t| t.parse::<Timestamp>().ok())
        .map(|t| now.duration_since(t))
        .and_then(|d| Duration::try_from(d).ok())
        .unwrap_or(interval);
    if elapsed >= interval {
        return Ok("triggered by interval");
    }
    Err(interval - elapsed)
}

/// What a scan found.
#[derive(Debug, Clone)]
pub struct Scanned {
    /// The tags kept (exclusion list applied), in descending order.
    pub tags: Vec<String>,
}

/// Reads the tag list and applies the exclusion list (blocking).
pub fn scan(
    image: &ImageName,
    opts: ClientOptions,
    exclusions: &[String],
) -> Result<Scanned, String> {
    let client = Client::new(&image.registry, opts).map_err(|e| e.to_string())?;
    let tags = client
        .list_tags(&image.repository)
        .map_err(|e| e.to_string())?;
    let mut tags = exclude(tags, exclusions)?;
    tags.sort_by(|a, b| b.cmp(a));
    Ok(Scanned { tags })
}

/// Settings of the image controllers.
#[derive(Clone, Default)]
pub struct Options {
    /// Where scanned tags are kept, shared with the ImagePolicy reconciler.
    pub tags: TagStore,
}

/// A failure of the API server (the pass is retried by the loop).
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// The Kubernetes API.
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
}

fn timeout_of(obj: &ImageRepository, interval: Duration) -> Duration {
    obj.spec
        .timeout
        .as_deref()
        .and_then(|t| ferroflux_api::duration::parse_duration(t).ok())
        .unwrap_or(interval)
        .max(Duration::from_secs(1))
}

/// One reconcile of `ns/name`.
pub async fn reconcile(
    client: &kube::Client,
    settings: &Options,
    ns: &str,
    name: &str,
) -> Result<Reconciled, ReconcileError> {
    let api: Api<ImageRepository> = Api::namespaced(client.clone(), ns);
    let Some(obj) = finalizer::begin(&api, name, |_| async {
        // As Flux: the tags stay, keyed by image, which other ImageRepositories may share.
        Ok::<(), ReconcileError>(())
    })
    .await?
    else {
        return Ok(Reconciled::default());
    };
    let interval = ferroflux_api::duration::parse_duration(&obj.spec.interval)
        .unwrap_or(Duration::from_secs(600));
    let now = Timestamp::now();
    let mut status = obj.status.clone().unwrap_or_default();
    let generation = obj.metadata.generation;
    let requested = obj.annotations().get(RECONCILE_REQUESTED_AT).cloned();

    let outcome = pass(client, settings, &obj, ns, now, interval).await;
    let mut conds = Conditions::of(&mut status.conditions, generation, now);
    let mut event = None;
    let requeue;
    match outcome {
        Pass::Scanned(image, scanned) => {
            let canonical = image.canonical();
            let mut tags = scanned.tags;
            let latest = latest_tags(&mut tags);
            let count = tags.len();
            let sum = settings.tags.set(&canonical, tags);
            let message = format!("successful scan: found {count} tags with checksum {sum}");
            let was_ready = conditions::is_true(obj_conditions(&obj), conditions::READY);
            let changed = status
                .last_scan_result
                .as_ref()
                .and_then(|r| r.revision.as_deref())
                != Some(sum.as_str());
            conds
                .mark_true(conditions::READY, reason::SUCCEEDED, &message)
                .delete(conditions::STALLED)
                .delete(conditions::RECONCILING);
            if changed || !was_ready {
                event = Some(("Normal".into(), reason::SUCCEEDED.into(), message.clone()));
            }
            status.last_scan_result = Some(ScanResult {
                latest_tags: (!latest.is_empty()).then_some(latest),
                revision: Some(sum.clone()),
                scan_time: Some(now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()),
                tag_count: count as i64,
            });
            status.canonical_image_name = Some(canonical);
            status.observed_exclusion_list = Some(obj.exclusion_list());
            step::log_success(KIND, ns, name, &sum, &message);
            requeue = interval;
        }
        // Not yet time to scan: the last result stands.
        Pass::NotYet(left) => requeue = left,
        Pass::Failed(f) => {
            f.mark(&mut conds);
            event = Some(("Warning".into(), f.reason.to_string(), f.message.clone()));
            step::log_failure(KIND, ns, name, &f);
            requeue = f.requeue;
        }
    }
    status.observed_generation = generation;
    if let Some(r) = requested {
        status.last_handled_reconcile_at = Some(r);
    }
    api.patch_status(
        name,
        &PatchParams::apply(FIELD_MANAGER),
        &Patch::Merge(&serde_json::json!({ "status": status })),
    )
    .await?;
    Ok(Reconciled {
        requeue_after: Some(requeue),
        event,
    })
}

fn obj_conditions(
    obj: &ImageRepository,
) -> &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition] {
    use ferroflux_api::FluxObject;
    obj.conditions()
}

/// What one pass did.
enum Pass {
    /// The registry was read.
    Scanned(ImageName, Scanned),
    /// Nothing to do before this much time has passed.
    NotYet(Duration),
    /// The spec, the credentials or the registry failed.
    Failed(Failure),
}

/// The checks, credentials and scan of one pass.
async fn pass(
    client: &kube::Client,
    settings: &Options,
    obj: &ImageRepository,
    ns: &str,
    now: Timestamp,
    interval: Duration,
) -> Pass {
    let image = match parse_image(&obj.spec.image) {
        Ok(i) => i,
        Err(m) => {
            return Pass::Failed(Failure::stalled(
                image_reason::IMAGE_URL_INVALID,
                m,
                interval,
            ));
        }
    };
    let unsupported =
        |what: String| Pass::Failed(Failure::stalled(image_reason::UNSUPPORTED, what, interval));
    if obj.provider() != ImageProvider::Generic {
        return unsupported(format!(
            "not supported yet: provider '{}' (only 'generic')",
            obj.provider().as_str()
        ));
    }
    if obj.spec.service_account_name.is_some() {
        return unsupported("not supported yet: serviceAccountName (use secretRef)".into());
    }
    let canonical = image.canonical();
    let timeout = timeout_of(obj, interval);
    let opts = match registry_options(
        client,
        ns,
        crate::ocirepository::RegistrySecrets {
            secret_ref: obj.spec.secret_ref.as_ref(),
            cert_secret_ref: obj.spec.cert_secret_ref.as_ref(),
            proxy_secret_ref: obj.spec.proxy_secret_ref.as_ref(),
        },
        obj.spec.insecure.unwrap_or(false),
        &image.registry,
        timeout,
    )
    .await
    {
        Ok(o) => o,
        Err(FetchError { message, .. }) => {
            return Pass::Failed(Failure::retry(
                image_reason::AUTHENTICATION_FAILED,
                format!("failed to configure authentication options: {message}"),
                interval,
            ));
        }
    };
    if let Err(left) = should_scan(obj, &canonical, &settings.tags, now, interval) {
        return Pass::NotYet(left);
    }
    let exclusions = obj.exclusion_list();
    let target = image.clone();
    let task = tokio::task::spawn_blocking(move || scan(&target, opts, &exclusions));
    let scanned = match tokio::time::timeout(timeout, task).await {
        Ok(Ok(r)) => r,
        Ok(Err(join)) => Err(format!("the scan task failed: {join}")),
        Err(_) => Err(format!(
            "timed out after {}",
            ferroflux_api::duration::format_duration(timeout)
        )),
    };
    match scanned {
        Ok(s) => Pass::Scanned(image, s),
        Err(m) => Pass::Failed(Failure::retry(
            image_reason::READ_OPERATION_FAILED,
            format!("scan failed: {m}"),
            interval,
        )),
    }
}

/// The ImageRepository controller: its cache and the future running [`reconcile`] for every
/// object on its interval, on changes of its spec and on `reconcile.fluxcd.io/requestedAt`,
/// until `shutdown` resolves.
pub fn controller(
    client: kube::Client,
    settings: Options,
    concurrency: u16,
    metrics: Arc<Metrics>,
    shutdown: Pin<Box<dyn Future<Output = ()> + Send + Sync>>,
) -> (
    Store<ImageRepository>,
    Pin<Box<dyn Future<Output = ()> + Send>>,
) {
    let run = sourceloop::reconcile_fn(client.clone(), settings, |c, s, ns, name| async move {
        reconcile(&c, &s, &ns, &name).await
    });
    sourceloop::controller_on_spec::<ImageRepository>(
        client,
        "imagerepository",
        run,
        concurrency,
        metrics,
        shutdown,
        |c| c,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_parse_as_go_containerregistry_does() {
        let i = parse_image("alpine").unwrap();
        assert_eq!(i.canonical(), "index.docker.io/library/alpine");
        let i = parse_image("ghcr.io/stefanprodan/podinfo").unwrap();
        assert_eq!(i.registry, "ghcr.io");
        assert_eq!(i.repository, "stefanprodan/podinfo");
        assert_eq!(
            parse_image("localhost:5000/podinfo").unwrap().canonical(),
            "localhost:5000/podinfo"
        );
        assert_eq!(
            parse_image("fluxcd/flux").unwrap().canonical(),
            "index.docker.io/fluxcd/flux"
        );
        assert_eq!(
            parse_image("https://ghcr.io/a/b").unwrap_err(),
            "image 'https://ghcr.io/a/b' should not include URL scheme; remove 'https://'"
        );
        assert_eq!(
            parse_image("ghcr.io/a/b:1.0").unwrap_err(),
            "image 'ghcr.io/a/b:1.0' should not include a tag; remove ':1.0'"
        );
    }

    #[test]
    fn exclusion_list_and_latest_tags() {
        let tags: Vec<String> = ["5.0.0", "5.0.1", "sha256-abc.sig", "4.0.6"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut kept = exclude(tags, &[r"^.*\.sig$".to_string()]).unwrap();
        assert_eq!(kept.len(), 3);
        assert_eq!(latest_tags(&mut kept), vec!["5.0.1", "5.0.0", "4.0.6"]);
        assert_eq!(
            exclude(vec![], &["(".to_string()]).unwrap_err(),
            "failed to compile regex (: error parsing regexp: missing closing ): `(`"
        );
    }

    /// Adler-32's published check value, and the checksum is over the list's JSON.
    #[test]
    fn checksum_is_adler32_of_the_json_list() {
        assert_eq!(adler32(b"Wikipedia"), 0x11E6_0398);
        assert_eq!(
            checksum(&["a".to_string()]),
            adler32(br#"["a"]"#).to_string()
        );
    }
}
