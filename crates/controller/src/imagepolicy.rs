//! The `ImagePolicy` reconciler, as image-reflector-controller's: the referred ImageRepository
//! is read (its namespace, or another one its `accessFrom` admits), the policy built (`semver`
//! range with Flux's version parsing, `alphabetical` or `numerical` with `asc`/`desc`), the tags
//! of the [`TagStore`] narrowed by `filterTags` (a regular expression, and an `extract`
//! template whose expansion is what is compared), and the latest written to
//! `status.latestRef` with, per `digestReflectionPolicy`, the digest the registry gives for the
//! tag (`Always`: every pass, every `interval`; `IfNotPresent`: when the tag changes). The
//! previous ref goes to `observedPreviousRef` and Ready says "Latest image tag for IMAGE
//! resolved to TAG[ with digest D][ (previously …)]".
//!
//! A change of an ImageRepository (its spec or its scan's checksum) reconciles the policies that
//! refer to it. Bad input gets Flux's messages: a missing ImageRepository (DependencyNotReady,
//! retried), an invalid semver range or a tag filter that does not compile (InvalidPolicy,
//! Stalled), no tags yet (retried).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::finalizer;
use crate::gitrepository::Reconciled;
use crate::imagerepository::{Options, TagStore, go_regex_error, image_reason, parse_image};
use crate::metrics::Metrics;
use crate::ocirepository::registry_options;
use crate::sourceloop;
use crate::step::{self, Failure};
use ferroflux_api::conditions::{self, Conditions, reason};
use ferroflux_api::image::{ImagePolicyChoice, ImageRef, ReflectionPolicy, SortOrder};
use ferroflux_api::{FluxObject, ImagePolicy, ImageRepository, RECONCILE_REQUESTED_AT};
use ferroflux_oci::{Client, Reference};
use ferroflux_semver::{Range, Version};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::controller::Controller;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use std::future::Future;
use std::pin::Pin;

const FIELD_MANAGER: &str = "image-reflector-controller";
const KIND: &str = "ImagePolicy";
/// How soon a policy whose repository has no tags yet is looked at again.
pub const DEPENDENCY_REQUEUE: Duration = Duration::from_secs(10);
/// The interval of `digestReflectionPolicy: Always` when none is set (Flux's default).
const DEFAULT_REFLECT_INTERVAL: Duration = Duration::from_secs(600);

/// A policy: how the latest of a list of tags is chosen.
#[derive(Debug, Clone)]
pub enum Policer {
    /// The highest version within the range.
    SemVer(Range),
    /// String order; `asc` picks the last.
    Alphabetical(SortOrder),
    /// Number order; `asc` picks the highest.
    Numerical(SortOrder),
}

impl Policer {
    /// Flux's `PolicerFromSpec`, with its messages.
    pub fn from_spec(choice: &ImagePolicyChoice) -> Result<Policer, String> {
        if let Some(s) = &choice.semver {
            return Range::parse(&s.range)
                .map(Policer::SemVer)
                .map_err(|e| e.to_string());
        }
        if let Some(a) = &choice.alphabetical {
            return Ok(Policer::Alphabetical(a.order.unwrap_or_default()));
        }
        if let Some(n) = &choice.numerical {
            return Ok(Policer::Numerical(n.order.unwrap_or_default()));
        }
        Err("given ImagePolicyChoice object is invalid".into())
    }

    /// The latest of `tags`, or Flux's message why there is none.
    pub fn latest(&self, tags: &[String]) -> Result<String, String> {
        if tags.is_empty() {
            return Err("version list argument cannot be empty".into());
        }
        match self {
            Policer::SemVer(range) => tags
                .iter()
                .filter_map(|t| Version::parse_tag(t).ok())
                .filter(|v| range.matches(v))
                // Among equal versions the first in the list wins, as Flux's strict `>`.
                .fold(None::<Version>, |best, v| match best {
                    Some(b) if v.compare(&b) != std::cmp::Ordering::Greater => Some(b),
                    _ => Some(v),
                })
                .map(|v| v.original)
                .ok_or_else(|| "unable to determine latest version from provided list".into()),
            Policer::Alphabetical(order) => {
                let pick = match order {
                    SortOrder::Asc => tags.iter().max(),
                    SortOrder::Desc => tags.iter().min(),
                };
                Ok(pick.cloned().unwrap_or_default())
            }
            Policer::Numerical(order) => {
                let mut best: Option<(f64, &String)> = None;
                for t in tags {
                    let v: f64 = t
                        .parse()
                        .map_err(|_| format!("failed to parse invalid numeric value '{t}'"))?;
                    let better = match (best, order) {
                        (None, _) => true,
                        (Some((b, _)), SortOrder::Asc) => v >= b,
                        (Some((b, _)), SortOrder::Desc) => v <= b,
                    };
                    if better {
                        best = Some((v, t));
                    }
                }
                Ok(best.map(|(_, t)| t.clone()).unwrap_or_default())
            }
        }
    }
}

/// `filterTags`: which tags take part, and what of each is compared (`extract`'s expansion).
pub struct TagFilter {
    regex: regex::Regex,
    extract: String,
}

impl TagFilter {
    /// Compiles the pattern; Flux's message when it does not compile.
    pub fn new(pattern: &str, extract: &str) -> Result<TagFilter, String> {
        let regex = regex::Regex::new(pattern).map_err(|e| {
            format!(
                "invalid regular expression pattern '{pattern}': {}",
                go_regex_error(pattern, &e)
            )
        })?;
        Ok(TagFilter {
            regex,
            extract: extract.to_string(),
        })
    }

    /// The compared values of the matching tags, each with its tag.
    pub fn apply(&self, tags: &[String]) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for tag in tags {
            if let Some(caps) = self.regex.captures(tag) {
                let key = if self.extract.is_empty() {
                    tag.clone()
                } else {
                    let mut s = String::new();
                    caps.expand(&self.extract, &mut s);
                    s
                };
                out.insert(key, tag.clone());
            }
        }
        out
    }
}

/// The latest tag of `tags` under the policy and filter of `obj` (Flux's `applyPolicy`).
pub fn select(obj: &ImagePolicy, tags: &[String]) -> Result<String, Selection> {
    let policer = Policer::from_spec(&obj.spec.policy)
        .map_err(|e| Selection::Invalid(format!("invalid policy: {e}")))?;
    if tags.is_empty() {
        return Err(Selection::NoTags);
    }
    match &obj.spec.filter_tags {
        Some(f) => {
            let filter = TagFilter::new(
                f.pattern.as_deref().unwrap_or_default(),
                f.extract.as_deref().unwrap_or_default(),
            )
            .map_err(|e| {
                Selection::Invalid(format!("invalid policy: failed to filter tags: {e}"))
            })?;
            let kept = filter.apply(tags);
            let keys: Vec<String> = kept.keys().cloned().collect();
            let latest = policer.latest(&keys).map_err(Selection::Failed)?;
            Ok(kept.get(&latest).cloned().unwrap_or_default())
        }
        None => policer.latest(tags).map_err(Selection::Failed),
    }
}

/// Why no tag was selected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    /// The policy or its filter cannot be used (Stalled).
    Invalid(String),
    /// The repository has no tags (yet).
    NoTags,
    /// No tag qualifies.
    Failed(String),
}

/// Flux's Ready message of a selected ref.
pub fn ready_message(latest: &ImageRef, previous: Option<&ImageRef>) -> String {
    let mut msg = format!(
        "Latest image tag for {} resolved to {}",
        latest.name, latest.tag
    );
    if let Some(d) = latest.digest.as_deref().filter(|d| !d.is_empty()) {
        msg.push_str(&format!(" with digest {d}"));
    }
    if let Some(p) = previous.filter(|p| *p != latest) {
        msg.push_str(&format!(" (previously {}:{}", p.name, p.tag));
        if let Some(d) = p.digest.as_deref().filter(|d| !d.is_empty()) {
            msg.push_str(&format!("@{d}"));
        }
        msg.push(')');
    }
    msg
}

/// A failure of the API server (the pass is retried by the loop).
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// The Kubernetes API.
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
}

/// The ImageRepository a policy refers to, if this policy may read it.
async fn repository_of(
    client: &kube::Client,
    obj: &ImagePolicy,
    ns: &str,
) -> Result<ImageRepository, Failure> {
    let repo_ns = obj.repository_namespace().unwrap_or_else(|| ns.to_string());
    let name = &obj.spec.image_repository_ref.name;
    let api: Api<ImageRepository> = Api::namespaced(client.clone(), &repo_ns);
    let fail = |reason: &'static str, message: String| {
        Failure::retry(
            reason,
            format!("failed to get the referred ImageRepository: {message}"),
            DEPENDENCY_REQUEUE,
        )
    };
    let repo = match api.get_opt(name).await {
        Ok(Some(r)) => r,
        Ok(None) => {
            return Err(fail(
                image_reason::DEPENDENCY_NOT_READY,
                format!(
                    "referenced ImageRepository does not exist: imagerepositories.image.toolkit.fluxcd.io \"{name}\" not found"
                ),
            ));
        }
        Err(e) => return Err(fail(reason::FAILED, e.to_string())),
    };
    if repo_ns != ns {
        let allowed = match &repo.spec.access_from {
            None => false,
            Some(acl) => {
                let labels = Api::<Namespace>::all(client.clone())
                    .get_opt(ns)
                    .await
                    .ok()
                    .flatten()
                    .map(|n| n.labels().clone())
                    .unwrap_or_default();
                acl.namespace_selectors.iter().any(|s| {
                    s.match_labels
                        .as_ref()
                        .is_none_or(|m| m.iter().all(|(k, v)| labels.get(k) == Some(v)))
                })
            }
        };
        if !allowed {
            return Err(fail(
                reason::ACCESS_DENIED,
                format!(
                    "access denied: '{ns}/{}' can't access 'ImageRepository/{repo_ns}/{name}', namespace '{ns}' is not allowed by the ImageRepository's accessFrom",
                    obj.name_any()
                ),
            ));
        }
    }
    Ok(repo)
}

/// The digest of `image:tag` as the registry gives it (a HEAD of the manifest), with the
/// ImageRepository's credentials.
async fn fetch_digest(
    client: &kube::Client,
    repo: &ImageRepository,
    tag: &str,
) -> Result<String, String> {
    let image = parse_image(&repo.spec.image)?;
    let repo_ns = repo.namespace().unwrap_or_default();
    let interval = ferroflux_api::duration::parse_duration(&repo.spec.interval)
        .unwrap_or(Duration::from_secs(60));
    let timeout = repo
        .spec
        .timeout
        .as_deref()
        .and_then(|t| ferroflux_api::duration::parse_duration(t).ok())
        .unwrap_or(interval)
        .max(Duration::from_secs(1));
    let opts = registry_options(
        client,
        &repo_ns,
        crate::ocirepository::RegistrySecrets {
            secret_ref: repo.spec.secret_ref.as_ref(),
            cert_secret_ref: repo.spec.cert_secret_ref.as_ref(),
            proxy_secret_ref: repo.spec.proxy_secret_ref.as_ref(),
        },
        repo.spec.insecure.unwrap_or(false),
        &image.registry,
        timeout,
    )
    .await
    .map_err(|e| format!("failed to configure authentication options: {}", e.message))?;
    let reference = Reference {
        registry: image.registry.clone(),
        repository: image.repository.clone(),
        tag: Some(tag.to_string()),
        digest: None,
    };
    let shown = format!("{}:{tag}", repo.spec.image);
    let task = tokio::task::spawn_blocking(move || {
        let client = Client::new(&reference.registry, opts)?;
        client.head_manifest(&reference).map(|h| h.digest)
    });
    match tokio::time::timeout(timeout, task).await {
        Ok(Ok(Ok(d))) => Ok(d),
        Ok(Ok(Err(e))) => Err(format!("failed fetching descriptor for \"{shown}\": {e}")),
        Ok(Err(join)) => Err(format!("the digest task failed: {join}")),
        Err(_) => Err(format!(
            "failed fetching descriptor for \"{shown}\": timed out"
        )),
    }
}

/// What one pass decided.
enum Pass {
    /// A ref was selected.
    Selected(ImageRef),
    /// Not now.
    Failed(Failure),
}

async fn pass(client: &kube::Client, tags: &TagStore, obj: &ImagePolicy, ns: &str) -> Pass {
    let reflection = obj.reflection();
    let repo = match repository_of(client, obj, ns).await {
        Ok(r) => r,
        Err(f) => return Pass::Failed(f),
    };
    let image = match parse_image(&repo.spec.image) {
        Ok(i) => i,
        Err(m) => {
            return Pass::Failed(Failure::stalled(
                image_reason::IMAGE_URL_INVALID,
                m,
                DEPENDENCY_REQUEUE,
            ));
        }
    };
    let canonical = repo
        .status
        .as_ref()
        .and_then(|s| s.canonical_image_name.clone())
        .unwrap_or_else(|| image.canonical());
    let latest = match select(obj, &tags.tags(&canonical)) {
        Ok(t) => t,
        Err(Selection::Invalid(m)) => {
            return Pass::Failed(Failure::stalled(
                image_reason::INVALID_POLICY,
                m,
                DEPENDENCY_REQUEUE,
            ));
        }
        Err(Selection::NoTags) => {
            return Pass::Failed(Failure::retry(
                image_reason::DEPENDENCY_NOT_READY,
                format!(
                    "retrying in {} error: no tags in database",
                    ferroflux_api::duration::format_duration(DEPENDENCY_REQUEUE)
                ),
                DEPENDENCY_REQUEUE,
            ));
        }
        Err(Selection::Failed(m)) => {
            return Pass::Failed(Failure::retry(reason::FAILED, m, DEPENDENCY_REQUEUE));
        }
    };
    let mut latest_ref = ImageRef {
        name: repo.spec.image.clone(),
        tag: latest,
        digest: None,
    };
    let previous = obj.status.as_ref().and_then(|s| s.latest_ref.as_ref());
    let fetch = match reflection {
        ReflectionPolicy::Never => false,
        ReflectionPolicy::Always => true,
        ReflectionPolicy::IfNotPresent => match previous {
            Some(p)
                if p.name == latest_ref.name
                    && p.tag == latest_ref.tag
                    && p.digest.as_deref().is_some_and(|d| !d.is_empty()) =>
            {
                latest_ref.digest = p.digest.clone();
                false
            }
            _ => true,
        },
    };
    if fetch {
        match fetch_digest(client, &repo, &latest_ref.tag).await {
            Ok(d) => latest_ref.digest = Some(d),
            Err(m) => {
                return Pass::Failed(Failure::retry(
                    reason::FAILED,
                    format!("failed fetching digest of {latest_ref}: {m}"),
                    DEPENDENCY_REQUEUE,
                ));
            }
        }
    }
    Pass::Selected(latest_ref)
}

/// One reconcile of `ns/name`.
pub async fn reconcile(
    client: &kube::Client,
    settings: &Options,
    ns: &str,
    name: &str,
) -> Result<Reconciled, ReconcileError> {
    let api: Api<ImagePolicy> = Api::namespaced(client.clone(), ns);
    let Some(obj) =
        finalizer::begin(&api, name, |_| async { Ok::<(), ReconcileError>(()) }).await?
    else {
        return Ok(Reconciled::default());
    };
    let interval = (obj.reflection() == ReflectionPolicy::Always).then(|| {
        obj.spec
            .interval
            .as_deref()
            .and_then(|i| ferroflux_api::duration::parse_duration(i).ok())
            .filter(|d| !d.is_zero())
            .unwrap_or(DEFAULT_REFLECT_INTERVAL)
    });
    let now = Timestamp::now();
    let generation = obj.metadata.generation;
    let mut status = obj.status.clone().unwrap_or_default();
    let was_ready = conditions::is_true(obj.conditions(), conditions::READY);
    let outcome = pass(client, &settings.tags, &obj, ns).await;
    let mut conds = Conditions::of(&mut status.conditions, generation, now);
    let mut event = None;
    let requeue;
    match outcome {
        Pass::Selected(latest) => {
            let changed = status.latest_ref.as_ref() != Some(&latest);
            if changed {
                status.observed_previous_ref = status.latest_ref.take();
                status.latest_ref = Some(latest.clone());
            }
            let message = ready_message(&latest, status.observed_previous_ref.as_ref());
            conds
                .mark_true(conditions::READY, reason::SUCCEEDED, &message)
                .delete(conditions::STALLED)
                .delete(conditions::RECONCILING);
            if changed || !was_ready {
                event = Some(("Normal".into(), reason::SUCCEEDED.into(), message.clone()));
            }
            step::log_success(KIND, ns, name, &latest.to_string(), &message);
            requeue = interval;
        }
        Pass::Failed(f) => {
            f.mark(&mut conds);
            event = Some(("Warning".into(), f.reason.to_string(), f.message.clone()));
            step::log_failure(KIND, ns, name, &f);
            requeue = Some(f.requeue);
        }
    }
    status.observed_generation = generation;
    if let Some(r) = obj.annotations().get(RECONCILE_REQUESTED_AT) {
        status.last_handled_reconcile_at = Some(r.clone());
    }
    api.patch_status(
        name,
        &PatchParams::apply(FIELD_MANAGER),
        &Patch::Merge(&serde_json::json!({ "status": status })),
    )
    .await?;
    Ok(Reconciled {
        requeue_after: requeue,
        event,
    })
}

/// The generation and scan checksum last seen of each ImageRepository, so that only a change
/// of either reaches its policies (its other status writes do not).
#[derive(Default)]
struct RepositoryChanges(Mutex<BTreeMap<String, Seen>>);

/// A repository's generation and scan checksum.
type Seen = (Option<i64>, Option<String>);

impl RepositoryChanges {
    fn changed(&self, repo: &ImageRepository) -> bool {
        let key = format!(
            "{}/{}",
            repo.namespace().unwrap_or_default(),
            repo.name_any()
        );
        let seen = (
            repo.metadata.generation,
            repo.status
                .as_ref()
                .and_then(|s| s.last_scan_result.as_ref())
                .and_then(|r| r.revision.clone()),
        );
        let Ok(mut m) = self.0.lock() else {
            return true;
        };
        m.insert(key, seen.clone()) != Some(seen)
    }
}

/// The ImagePolicy controller: its cache and the future running [`reconcile`] for every
/// object on changes of its spec, `reconcile.fluxcd.io/requestedAt`, its `interval` (with
/// `digestReflectionPolicy: Always`) and new scans of its ImageRepository, until `shutdown`.
pub fn controller(
    client: kube::Client,
    settings: Options,
    concurrency: u16,
    metrics: Arc<Metrics>,
    shutdown: Pin<Box<dyn Future<Output = ()> + Send + Sync>>,
) -> (Store<ImagePolicy>, Pin<Box<dyn Future<Output = ()> + Send>>) {
    let run = sourceloop::reconcile_fn(client.clone(), settings, |c, s, ns, name| async move {
        reconcile(&c, &s, &ns, &name).await
    });
    let repos = client.clone();
    let watches = move |c: Controller<ImagePolicy>| {
        let policies = c.store();
        let changes = RepositoryChanges::default();
        c.watches(
            Api::<ImageRepository>::all(repos),
            watcher::Config::default(),
            move |repo| {
                if !changes.changed(&repo) {
                    return Vec::new();
                }
                let repo_ns = repo.namespace().unwrap_or_default();
                let repo_name = repo.name_any();
                policies
                    .state()
                    .iter()
                    .filter(|p| {
                        p.spec.image_repository_ref.name == repo_name
                            && p.repository_namespace().as_deref() == Some(repo_ns.as_str())
                    })
                    .map(|p| ObjectRef::from_obj(p.as_ref()))
                    .collect::<Vec<_>>()
            },
        )
    };
    sourceloop::controller_on_spec::<ImagePolicy>(
        client,
        "imagepolicy",
        run,
        concurrency,
        metrics,
        shutdown,
        watches,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn policy(yaml: &str) -> ImagePolicy {
        serde_saphyr::from_str(&format!(
            "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n  name: p\n  namespace: ns\nspec:\n  imageRepositoryRef:\n    name: podinfo\n{yaml}"
        ))
        .unwrap()
    }

    const PODINFO: &[&str] = &[
        "4.0.6", "5.0.0", "5.0.1", "5.0.2", "5.0.3", "6.0.0", "latest",
    ];

    /// flux's image test: `5.0.x` → 5.0.3; `>4.0.0` filtered by `5\.0\.0` → 5.0.0.
    #[test]
    fn flux_test_policies() {
        let p = policy("  policy:\n    semver:\n      range: 5.0.x\n");
        assert_eq!(select(&p, &tags(PODINFO)).unwrap(), "5.0.3");
        let p = policy(
            "  policy:\n    semver:\n      range: '>4.0.0'\n  filterTags:\n    pattern: '5\\.0\\.0'\n",
        );
        assert_eq!(select(&p, &tags(PODINFO)).unwrap(), "5.0.0");
    }

    #[test]
    fn alphabetical_numerical_and_extract() {
        let p = policy("  policy:\n    alphabetical:\n      order: asc\n");
        assert_eq!(select(&p, &tags(&["a", "c", "b"])).unwrap(), "c");
        let p = policy("  policy:\n    alphabetical:\n      order: desc\n");
        assert_eq!(select(&p, &tags(&["b", "a", "c"])).unwrap(), "a");
        let p = policy("  policy:\n    numerical:\n      order: asc\n");
        assert_eq!(select(&p, &tags(&["9", "10", "2"])).unwrap(), "10");
        let p = policy("  policy:\n    numerical:\n      order: desc\n");
        assert_eq!(select(&p, &tags(&["9", "10", "2"])).unwrap(), "2");
        let p = policy(
            "  policy:\n    numerical:\n      order: asc\n  filterTags:\n    pattern: '^main-[a-f0-9]+-(?P<ts>[0-9]+)'\n    extract: '$ts'\n",
        );
        assert_eq!(
            select(
                &p,
                &tags(&["main-abc1-100", "main-def2-99", "main-0aa-1000", "v1"])
            )
            .unwrap(),
            "main-0aa-1000"
        );
        let p = policy("  policy:\n    numerical: {}\n");
        assert_eq!(
            select(&p, &tags(&["1", "x"])).unwrap_err(),
            Selection::Failed("failed to parse invalid numeric value 'x'".into())
        );
    }

    #[test]
    fn bad_policies_get_fluxs_messages() {
        let p = policy("  policy:\n    semver:\n      range: 'not a range'\n");
        assert_eq!(
            select(&p, &tags(PODINFO)).unwrap_err(),
            Selection::Invalid("invalid policy: improper constraint: \"not a range\"".into())
        );
        let p = policy(
            "  policy:\n    semver:\n      range: 5.0.x\n  filterTags:\n    pattern: '5.0.(x'\n",
        );
        assert_eq!(
            select(&p, &tags(PODINFO)).unwrap_err(),
            Selection::Invalid(
                "invalid policy: failed to filter tags: invalid regular expression pattern '5.0.(x': error parsing regexp: missing closing ): `5.0.(x`".into()
            )
        );
        let p = policy("  policy:\n    semver:\n      range: 7.x\n");
        assert_eq!(
            select(&p, &tags(PODINFO)).unwrap_err(),
            Selection::Failed("unable to determine latest version from provided list".into())
        );
        let p = policy("  policy:\n    semver:\n      range: 5.x\n");
        assert_eq!(select(&p, &[]).unwrap_err(), Selection::NoTags);
        let p = policy("  policy: {}\n");
        assert_eq!(
            select(&p, &tags(PODINFO)).unwrap_err(),
            Selection::Invalid("invalid policy: given ImagePolicyChoice object is invalid".into())
        );
    }

    #[test]
    fn ready_message_as_flux_writes_it() {
        let latest = ImageRef {
            name: "ghcr.io/stefanprodan/podinfo".into(),
            tag: "5.0.3".into(),
            digest: Some("sha256:8704".into()),
        };
        assert_eq!(
            ready_message(&latest, None),
            "Latest image tag for ghcr.io/stefanprodan/podinfo resolved to 5.0.3 with digest sha256:8704"
        );
        let prev = ImageRef {
            name: latest.name.clone(),
            tag: "5.0.2".into(),
            digest: None,
        };
        assert_eq!(
            ready_message(&latest, Some(&prev)),
            "Latest image tag for ghcr.io/stefanprodan/podinfo resolved to 5.0.3 with digest sha256:8704 (previously ghcr.io/stefanprodan/podinfo:5.0.2)"
        );
    }
}
