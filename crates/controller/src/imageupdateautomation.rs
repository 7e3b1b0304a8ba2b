//! The `ImageUpdateAutomation` reconciler, as image-automation-controller's: the ready
//! ImagePolicies of the namespace (narrowed by `policySelector`) are applied to the YAML files
//! below `spec.update.path` of the GitRepository's checkout (`spec.git.checkout.ref`, else the
//! GitRepository's ref) through their `$imagepolicy` markers (crates/imageupdate); when a file
//! changes, a commit by `spec.git.commit.author` with the rendered `messageTemplate`, signed
//! with `signingKey` when one is given, is pushed to `spec.git.push.branch` (the checkout branch
//! when unset; forced when it is another branch, Flux's default `GitForcePushBranch`) and to
//! `spec.git.push.refspec`, with `push.options`.
//!
//! Status as Flux writes it: `lastAutomationRunTime`, `lastPushCommit`, `lastPushTime`,
//! `observedPolicies`, `observedSourceRevision`, Ready "repository up-to-date". A pass with
//! nothing new (the same policies, the remote still at the revision last seen) fetches
//! nothing. Bad input gets Flux's reasons and messages: a source that is not a GitRepository or
//! no `spec.git` (InvalidSourceConfiguration, Stalled), a policy selector that does not parse
//! (InvalidPolicySelector, Stalled), an update strategy other than `Setters`
//! (InvalidUpdateStrategy, Stalled), a template using a removed field (RemovedTemplateField,
//! Stalled), a missing GitRepository or signing key (SourceManagerFailed), a checkout or a push
//! that fails (GitOperationFailed): nothing is pushed in any of these.
//!
//! ImagePolicy changes (a new `latestRef`) and GitRepository changes wake the automations that
//! use them.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use crate::finalizer;
use crate::gitrepository::Reconciled;
use crate::metrics::Metrics;
use crate::sourceloop;
use crate::step::{self, Failure};
use ferroflux_api::conditions::{self, Conditions, reason};
use ferroflux_api::image::{ImageRef, ImageUpdateAutomationStatus};
use ferroflux_api::{FluxObject, GitRepository, ImagePolicy, ImageUpdateAutomation};
use ferroflux_source::{Credentials, FetchOptions, GitRef, GitSource, RefUpdate, Signature};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, ListParams};
use kube::runtime::controller::Controller;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;

const FIELD_MANAGER: &str = "image-automation-controller";
const KIND: &str = "ImageUpdateAutomation";
/// Flux's Ready message after a successful pass.
pub const READY_MESSAGE: &str = "repository up-to-date";
/// How soon a failed pass is tried again at the latest.
const RETRY: Duration = Duration::from_secs(30);

/// Flux's condition reasons of this kind.
pub mod automation_reason {
    /// `sourceRef` is not a GitRepository, or `spec.git` is missing.
    pub const INVALID_SOURCE_CONFIGURATION: &str = "InvalidSourceConfiguration";
    /// `policySelector` does not parse.
    pub const INVALID_POLICY_SELECTOR: &str = "InvalidPolicySelector";
    /// `update.strategy` is not `Setters`.
    pub const INVALID_UPDATE_STRATEGY: &str = "InvalidUpdateStrategy";
    /// The message template uses a field Flux removed.
    pub const REMOVED_TEMPLATE_FIELD: &str = "RemovedTemplateField";
    /// The GitRepository, its credentials, the push branch or the signing key.
    pub const SOURCE_MANAGER_FAILED: &str = "SourceManagerFailed";
    /// A checkout, commit or push.
    pub const GIT_OPERATION_FAILED: &str = "GitOperationFailed";
    /// The policies could not be applied to the files.
    pub const UPDATE_FAILED: &str = "UpdateFailed";
}
use automation_reason as ar;

/// Settings that are not in `spec`.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--allow-file-urls` (tests and local fleets).
    pub allow_file_urls: bool,
}

/// A failure of the API server (the pass is retried by the loop).
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// The Kubernetes API.
    #[error("kubernetes API: {0}")]
    Kube(#[from] kube::Error),
}

/// `policySelector` as a label selector string, or Flux's kind of message why it is not one.
pub fn selector_string(selector: &LabelSelector) -> Result<String, String> {
    let mut parts = Vec::new();
    for (k, v) in selector.match_labels.iter().flatten() {
        parts.push(format!("{k}={v}"));
    }
    for e in selector.match_expressions.iter().flatten() {
        let values = e.values.clone().unwrap_or_default();
        let part = match e.operator.as_str() {
            "In" | "NotIn" => {
                if values.is_empty() {
                    return Err(
                        "for 'in', 'notin' operators, values set can't be empty".to_string()
                    );
                }
                let op = if e.operator == "In" { "in" } else { "notin" };
                format!("{} {op} ({})", e.key, values.join(","))
            }
            "Exists" | "DoesNotExist" => {
                if !values.is_empty() {
                    return Err(
                        "values set must be empty for exists and does not exist".to_string()
                    );
                }
                if e.operator == "Exists" {
                    e.key.clone()
                } else {
                    format!("!{}", e.key)
                }
            }
            other => return Err(format!("{other:?} is not a valid label selector operator")),
        };
        parts.push(part);
    }
    let text = parts.join(",");
    ferroflux_schema::labels::LabelSelector::parse(&text)?;
    Ok(text)
}

/// Where the automation commits and pushes, from the checkout ref and `spec.git.push`
/// (Flux's `configurePush`): the push branch, and whether it is another branch than the one
/// checked out (then it is created from the checkout, or overwritten).
pub fn push_branch(
    checkout: &GitRef,
    push: Option<&ferroflux_api::image::PushSpec>,
) -> Result<(String, bool), String> {
    let checkout_branch = checkout.branch.as_deref().filter(|b| !b.is_empty());
    if let Some(branch) = push
        .and_then(|p| p.branch.as_deref())
        .filter(|b| !b.is_empty())
    {
        let switch = branch != checkout_branch.unwrap_or(ferroflux_source::DEFAULT_BRANCH);
        return Ok((branch.to_string(), switch));
    }
    match checkout_branch {
        Some(b) => Ok((b.to_string(), false)),
        None => Err("push spec not provided, and cannot be inferred from .spec.git.checkout.ref or GitRepository .spec.ref".into()),
    }
}

/// The ref `refspec` (`[+]SRC:DST`) updates with the automation's commit. SRC must name the
/// branch the commit is made on (`main` or `refs/heads/main`): that is the only local ref.
pub fn refspec_update(refspec: &str, branch: &str) -> Result<RefUpdate, String> {
    let (force, spec) = match refspec.strip_prefix('+') {
        Some(rest) => (true, rest),
        None => (false, refspec),
    };
    let (src, dst) = spec
        .split_once(':')
        .ok_or_else(|| format!("invalid refspec '{refspec}': no destination"))?;
    let full = |r: &str| {
        if r.starts_with("refs/") {
            r.to_string()
        } else {
            format!("refs/heads/{r}")
        }
    };
    if full(src) != full(branch) {
        return Err(format!(
            "refspec '{refspec}': the source must be the branch the automation commits on ('{branch}')"
        ));
    }
    if dst.is_empty() {
        return Err(format!("invalid refspec '{refspec}': no destination"));
    }
    Ok(RefUpdate {
        name: full(dst),
        force,
    })
}

/// `revision` as Flux's `git.Commit.String()` prints a commit on `branch`.
fn branch_revision(branch: &str, commit: &str) -> String {
    format!("{branch}@sha1:{commit}")
}

/// The checkout ref: `spec.git.checkout.ref`, else the GitRepository's.
fn checkout_ref(obj: &ImageUpdateAutomation, repo: &GitRepository) -> GitRef {
    if let Some(c) = obj.spec.git.as_ref().and_then(|g| g.checkout.as_ref()) {
        let r = &c.r#ref;
        return GitRef {
            branch: r.branch.clone(),
            tag: r.tag.clone(),
            semver: r.semver.clone(),
            name: r.name.clone(),
            commit: r.commit.clone(),
        };
    }
    let r = repo.spec.r#ref.clone().unwrap_or_default();
    GitRef {
        branch: r.branch,
        tag: r.tag,
        semver: r.semver,
        name: r.name,
        commit: r.commit,
    }
}

/// The commit signer of `signingKey` (Flux's `resolveSigner`): `git.asc` and `passphrase` for
/// OpenPGP, `identity` and `password` for SSH.
async fn signer(
    client: &kube::Client,
    ns: &str,
    obj: &ImageUpdateAutomation,
) -> Result<Option<ferroflux_gitsign::Signer>, String> {
    let Some(key) = obj
        .spec
        .git
        .as_ref()
        .and_then(|g| g.commit.signing_key.as_ref())
    else {
        return Ok(None);
    };
    let name = &key.secret_ref.name;
    let data = sourceloop::secret_data(client, ns, name)
        .await
        .map_err(|e| format!("could not find signing key secret '{ns}/{name}': {e}"))?;
    let text = |k: &str| {
        data.get(k)
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .unwrap_or_default()
    };
    match key.r#type.as_deref().unwrap_or("gpg") {
        "ssh" => {
            let identity = data.get("identity").ok_or_else(|| {
                format!("signing key secret '{ns}/{name}' does not contain a 'identity' key")
            })?;
            ferroflux_gitsign::SshSigner::from_openssh(identity, text("password").as_bytes())
                .map(|s| Some(ferroflux_gitsign::Signer::Ssh(s)))
                .map_err(|e| format!("failed to read signing key from secret '{ns}/{name}': {e}"))
        }
        "gpg" => {
            let ring = data.get("git.asc").ok_or_else(|| {
                format!("signing key secret '{ns}/{name}' does not contain a 'git.asc' key")
            })?;
            ferroflux_gitsign::pgp::load_signer(ring, &text("passphrase"), "")
                .map(|s| Some(ferroflux_gitsign::Signer::Pgp(s)))
                .map_err(|e| format!("failed to read signing key from secret '{ns}/{name}': {e}"))
        }
        other => Err(format!("unsupported signing key type '{other}'")),
    }
}

/// The ready policies of `ns` that `selector` picks, by name.
async fn policies(
    client: &kube::Client,
    ns: &str,
    selector: &str,
) -> Result<Vec<ImagePolicy>, kube::Error> {
    let api: Api<ImagePolicy> = Api::namespaced(client.clone(), ns);
    let mut list = api
        .list(&ListParams::default().labels(selector))
        .await?
        .items;
    list.retain(|p| {
        p.status
            .as_ref()
            .and_then(|s| s.latest_ref.as_ref())
            .is_some()
    });
    list.sort_by_key(|p| p.name_any());
    Ok(list)
}

/// What a pass did that went well.
enum Done {
    /// Nothing to commit.
    UpToDate { revision: String },
    /// A commit was pushed.
    Pushed {
        commit: String,
        revision: String,
        summary: String,
    },
}

/// The failure of a pass.
fn fail(reason: &'static str, message: impl Into<String>, interval: Duration) -> Failure {
    Failure::retry(reason, message, interval.min(RETRY))
}

fn stall(reason: &'static str, message: impl Into<String>, interval: Duration) -> Failure {
    Failure::stalled(reason, message, interval)
}

/// Everything the blocking part of a pass needs.
struct Work {
    source: GitSource,
    update_path: String,
    policies: Vec<ferroflux_imageupdate::setters::ImagePolicy>,
    branch: String,
    updates: Vec<RefUpdate>,
    /// `push.refspec` as written, for the event (its destination is among `updates`).
    refspec: Option<String>,
    options: Vec<String>,
    author: Signature,
    message: MessageInput,
    signer: Option<ferroflux_gitsign::Signer>,
    /// The revision seen last, when nothing else changed since: an unchanged remote is left
    /// alone without a fetch.
    skip_if_at: Option<String>,
}

struct MessageInput {
    template: Option<String>,
    values: BTreeMap<String, String>,
    namespace: String,
    name: String,
}

/// The blocking part of a pass: check out, rewrite, commit, push.
fn run(work: Work, interval: Duration) -> Result<Done, Failure> {
    let git = |prefix: &str, e: ferroflux_source::Error| {
        fail(ar::GIT_OPERATION_FAILED, format!("{prefix}: {e}"), interval)
    };
    let resolved = work
        .source
        .resolve()
        .map_err(|e| git("failed to checkout source", e))?;
    if work.skip_if_at.as_deref() == Some(resolved.revision.as_str()) {
        return Ok(Done::UpToDate {
            revision: resolved.revision,
        });
    }
    let fetched = work
        .source
        .fetch(&resolved)
        .map_err(|e| git("failed to checkout source", e))?;
    let root = ferroflux_source::clean_path(&work.update_path).join("/");
    let files = fetched
        .files_under(&root, ferroflux_imageupdate::setters::is_candidate_path)
        .map_err(|e| git("failed to checkout source", e))?;
    let update = ferroflux_imageupdate::setters::update_with_setters(files, &work.policies)
        .map_err(|e| {
            fail(
                ar::UPDATE_FAILED,
                format!("failed to apply policies: {e}"),
                interval,
            )
        })?;
    let revision = fetched.resolved.revision.clone();
    if update.files.is_empty() {
        return Ok(Done::UpToDate { revision });
    }
    let m = &work.message;
    let message = ferroflux_imageupdate::message::render_message(
        m.template.as_deref(),
        &m.namespace,
        &m.name,
        &update.changes,
        &m.values,
    )
    .map_err(|e| match e {
        ferroflux_imageupdate::message::MessageError::RemovedField { .. } => {
            stall(ar::REMOVED_TEMPLATE_FIELD, e.to_string(), interval)
        }
        other => fail(
            ar::GIT_OPERATION_FAILED,
            format!("failed to update source: {other}"),
            interval,
        ),
    })?;
    let files: Vec<(String, Vec<u8>)> = update
        .files
        .into_iter()
        .map(|(path, bytes)| {
            let full = if root.is_empty() {
                path
            } else {
                format!("{root}/{path}")
            };
            (full, bytes)
        })
        .collect();
    let now = u32::try_from(work.author.time).unwrap_or_default();
    let sign_with = work
        .signer
        .as_ref()
        .map(|s| move |commit: &[u8]| s.sign_commit(commit, now).map_err(|e| e.to_string()));
    let sign: Option<ferroflux_source::CommitSigner<'_>> = sign_with
        .as_ref()
        .map(|f| f as ferroflux_source::CommitSigner<'_>);
    let update_failed = |e: ferroflux_source::Error| git("failed to update source", e);
    let Some(commit) = fetched
        .commit_files(&files, &work.author, &message, sign)
        .map_err(update_failed)?
    else {
        return Ok(Done::UpToDate { revision });
    };
    work.source
        .push(&fetched, &commit, &work.updates, &work.options)
        .map_err(update_failed)?;
    let id = commit.id.to_string();
    let mut summary = format!("pushed commit '{}' to branch '{}'", &id[..7], work.branch);
    if let Some(refspec) = &work.refspec {
        summary.push_str(&format!(" and refspecs '{refspec}'"));
    }
    if !message.is_empty() {
        summary.push('\n');
        summary.push_str(&message);
    }
    let switched = work.updates.first().is_some_and(|u| u.force);
    Ok(Done::Pushed {
        revision: if switched {
            revision
        } else {
            branch_revision(&work.branch, &id)
        },
        commit: id,
        summary,
    })
}

/// Prepares a pass: the policies, the GitRepository and its credentials, the push plan.
async fn prepare(
    client: &kube::Client,
    settings: &Options,
    obj: &ImageUpdateAutomation,
    ns: &str,
    observed: &BTreeMap<String, ImageRef>,
    interval: Duration,
) -> Result<(Work, BTreeMap<String, ImageRef>), Failure> {
    let selector = match &obj.spec.policy_selector {
        Some(s) => selector_string(s).map_err(|e| {
            stall(
                ar::INVALID_POLICY_SELECTOR,
                format!("failed to parse policy selector: {e}"),
                interval,
            )
        })?,
        None => String::new(),
    };
    let ready = policies(client, ns, &selector).await.map_err(|e| {
        fail(
            reason::FAILED,
            format!("failed to list policies: {e}"),
            interval,
        )
    })?;
    let now_policies: BTreeMap<String, ImageRef> = ready
        .iter()
        .filter_map(|p| Some((p.name_any(), p.status.as_ref()?.latest_ref.clone()?)))
        .collect();
    let source_ref = &obj.spec.source_ref;
    if !source_ref.kind.is_empty() && source_ref.kind != "GitRepository" {
        return Err(stall(
            ar::INVALID_SOURCE_CONFIGURATION,
            format!(
                "source kind '{}' not supported: invalid source configuration",
                source_ref.kind
            ),
            interval,
        ));
    }
    let Some(git) = obj.spec.git.as_ref() else {
        return Err(stall(
            ar::INVALID_SOURCE_CONFIGURATION,
            "source kind 'GitRepository' necessitates field .spec.git: invalid source configuration",
            interval,
        ));
    };
    let strategy = obj
        .spec
        .update
        .as_ref()
        .and_then(|u| u.strategy.as_deref())
        .unwrap_or("Setters");
    if strategy != "Setters" {
        return Err(stall(
            ar::INVALID_UPDATE_STRATEGY,
            format!("unsupported update strategy: {strategy}"),
            interval,
        ));
    }
    let manager = |m: String| {
        fail(
            ar::SOURCE_MANAGER_FAILED,
            format!("failed configuring source manager: {m}"),
            interval,
        )
    };
    let repo_ns = source_ref
        .namespace
        .clone()
        .unwrap_or_else(|| ns.to_string());
    let repos: Api<GitRepository> = Api::namespaced(client.clone(), &repo_ns);
    let repo = match repos.get_opt(&source_ref.name).await {
        Ok(Some(r)) => r,
        Ok(None) => {
            return Err(manager(format!(
                "referenced git repository does not exist: gitrepositories.source.toolkit.fluxcd.io \"{}\" not found",
                source_ref.name
            )));
        }
        Err(e) => {
            return Err(manager(format!(
                "failed to get referenced git repository: {e}"
            )));
        }
    };
    if let Some(refusal) = crate::gitrepository::refusal(&repo.spec) {
        return Err(manager(format!(
            "GitRepository '{repo_ns}/{}': {}",
            source_ref.name, refusal.message
        )));
    }
    let checkout = checkout_ref(obj, &repo);
    let (branch, switch) = push_branch(&checkout, git.push.as_ref()).map_err(manager)?;
    let mut updates = vec![RefUpdate {
        name: format!("refs/heads/{branch}"),
        force: switch,
    }];
    if let Some(refspec) = git.push.as_ref().and_then(|p| p.refspec.as_deref()) {
        updates.push(refspec_update(refspec, &branch).map_err(manager)?);
    }
    let options = git
        .push
        .as_ref()
        .and_then(|p| p.options.as_ref())
        .map(|o| {
            o.iter()
                .map(|(k, v)| {
                    if v.is_empty() {
                        k.clone()
                    } else {
                        format!("{k}={v}")
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    let creds = match &repo.spec.secret_ref {
        Some(r) => {
            let data = sourceloop::secret_data(client, &repo_ns, &r.name)
                .await
                .map_err(|e| {
                    manager(format!(
                        "failed to get auth secret '{repo_ns}/{}': {e}",
                        r.name
                    ))
                })?;
            Credentials::from_secret_data(&data).map_err(|e| manager(e.to_string()))?
        }
        None => Credentials::default(),
    };
    let creds = match &repo.spec.proxy_secret_ref {
        Some(r) => creds.with_proxy(
            sourceloop::proxy(client, &repo_ns, &r.name)
                .await
                .map_err(|m| manager(ferroflux_source::Error::InvalidSecret(m).to_string()))?,
        ),
        None => creds,
    };
    let (_, timeout) =
        sourceloop::interval_and_timeout(&repo.spec.interval, repo.spec.timeout.as_deref());
    let source = GitSource::new(
        &repo.spec.url,
        &checkout,
        creds,
        FetchOptions {
            allow_file_urls: settings.allow_file_urls,
            timeout,
        },
    )
    .map_err(|e| manager(e.to_string()))?;
    let signer = signer(client, ns, obj).await.map_err(manager)?;
    let sync_needed = *observed != now_policies || switch || updates.len() > 1;
    let skip_if_at = obj
        .status
        .as_ref()
        .and_then(|s| s.observed_source_revision.clone())
        .filter(|_| !sync_needed);
    let policies = ready
        .iter()
        .filter_map(|p| {
            let latest = p.status.as_ref()?.latest_ref.clone()?;
            Some(ferroflux_imageupdate::setters::ImagePolicy {
                namespace: ns.to_string(),
                name: p.name_any(),
                latest: ferroflux_imageupdate::setters::ImageRef {
                    name: latest.name,
                    tag: latest.tag,
                    digest: latest.digest,
                },
            })
        })
        .collect();
    let work = Work {
        source,
        update_path: obj
            .spec
            .update
            .as_ref()
            .and_then(|u| u.path.clone())
            .unwrap_or_default(),
        policies,
        branch,
        updates,
        refspec: git.push.as_ref().and_then(|p| p.refspec.clone()),
        options,
        author: Signature {
            name: git.commit.author.name.clone().unwrap_or_default(),
            email: git.commit.author.email.clone(),
            time: Timestamp::now().as_second(),
        },
        message: MessageInput {
            template: git.commit.message_template.clone(),
            values: git
                .commit
                .message_template_values
                .clone()
                .unwrap_or_default(),
            namespace: ns.to_string(),
            name: obj.name_any(),
        },
        signer,
        skip_if_at,
    };
    Ok((work, now_policies))
}

/// One reconcile of `ns/name`.
pub async fn reconcile(
    client: &kube::Client,
    settings: &Options,
    ns: &str,
    name: &str,
) -> Result<Reconciled, ReconcileError> {
    let api: Api<ImageUpdateAutomation> = Api::namespaced(client.clone(), ns);
    let Some(obj) =
        finalizer::begin(&api, name, |_| async { Ok::<(), ReconcileError>(()) }).await?
    else {
        return Ok(Reconciled::default());
    };
    let (interval, _) = sourceloop::interval_and_timeout(&obj.spec.interval, None);
    let now = Timestamp::now();
    let generation = obj.metadata.generation;
    let mut status: ImageUpdateAutomationStatus = obj.status.clone().unwrap_or_default();
    let was_ready = conditions::is_true(obj.conditions(), conditions::READY);
    status.last_automation_run_time = Some(now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string());
    let observed = status.observed_policies.clone().unwrap_or_default();
    let outcome = match prepare(client, settings, &obj, ns, &observed, interval).await {
        Ok((work, now_policies)) => {
            match step::blocking("the image update", move || run(work, interval)).await {
                Ok(r) => r.map(|done| (done, now_policies)),
                Err(m) => Err(fail(ar::GIT_OPERATION_FAILED, m, interval)),
            }
        }
        Err(f) => Err(f),
    };
    let mut conds = Conditions::of(&mut status.conditions, generation, now);
    let event;
    let requeue;
    match outcome {
        Ok((done, now_policies)) => {
            conds
                .mark_true(conditions::READY, reason::SUCCEEDED, READY_MESSAGE)
                .delete(conditions::STALLED)
                .delete(conditions::RECONCILING);
            status.observed_policies = Some(now_policies);
            match done {
                Done::UpToDate { revision } => {
                    status.observed_source_revision = Some(revision.clone());
                    event = (!was_ready).then(|| {
                        (
                            "Normal".into(),
                            reason::SUCCEEDED.into(),
                            READY_MESSAGE.into(),
                        )
                    });
                    step::log_success(KIND, ns, name, &revision, READY_MESSAGE);
                }
                Done::Pushed {
                    commit,
                    revision,
                    summary,
                } => {
                    status.observed_source_revision = Some(revision.clone());
                    status.last_push_commit = Some(commit);
                    status.last_push_time =
                        Some(Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string());
                    step::log_success(KIND, ns, name, &revision, &summary);
                    event = Some(("Normal".into(), reason::SUCCEEDED.into(), summary));
                }
            }
            requeue = interval;
        }
        Err(f) => {
            f.mark(&mut conds);
            event = Some(("Warning".into(), f.reason.to_string(), f.message.clone()));
            step::log_failure(KIND, ns, name, &f);
            requeue = f.requeue;
        }
    }
    status.observed_generation = generation;
    sourceloop::write_status(&api, &obj, &status, &[], FIELD_MANAGER).await?;
    Ok(Reconciled {
        requeue_after: Some(requeue),
        event,
    })
}

/// The ImageUpdateAutomation controller: its cache and the future running [`reconcile`] for
/// every object on changes of its spec, `reconcile.fluxcd.io/requestedAt`, its `interval`, a
/// new `latestRef` of an ImagePolicy of its namespace and a change of its GitRepository.
pub fn controller(
    client: kube::Client,
    settings: Options,
    concurrency: u16,
    metrics: Arc<Metrics>,
    shutdown: Pin<Box<dyn Future<Output = ()> + Send + Sync>>,
) -> (
    Store<ImageUpdateAutomation>,
    Pin<Box<dyn Future<Output = ()> + Send>>,
) {
    let run = sourceloop::reconcile_fn(client.clone(), settings, |c, s, ns, name| async move {
        reconcile(&c, &s, &ns, &name).await
    });
    let watch_client = client.clone();
    let watches = move |c: Controller<ImageUpdateAutomation>| {
        let for_policies = c.store();
        let for_repos = c.store();
        let latest = std::sync::Mutex::new(BTreeMap::<String, Option<ImageRef>>::new());
        c.watches(
            Api::<ImagePolicy>::all(watch_client.clone()),
            watcher::Config::default(),
            move |policy| {
                let ns = policy.namespace().unwrap_or_default();
                let key = format!("{ns}/{}", policy.name_any());
                let now = policy.status.as_ref().and_then(|s| s.latest_ref.clone());
                let changed = latest
                    .lock()
                    .map(|mut m| m.insert(key, now.clone()) != Some(now))
                    .unwrap_or(true);
                if !changed {
                    return Vec::new();
                }
                for_policies
                    .state()
                    .iter()
                    .filter(|a| a.namespace().as_deref() == Some(ns.as_str()))
                    .map(|a| ObjectRef::from_obj(a.as_ref()))
                    .collect::<Vec<_>>()
            },
        )
        .watches(
            Api::<GitRepository>::all(watch_client),
            watcher::Config::default(),
            move |repo| {
                let ns = repo.namespace().unwrap_or_default();
                let name = repo.name_any();
                for_repos
                    .state()
                    .iter()
                    .filter(|a| {
                        let src = &a.spec.source_ref;
                        src.name == name
                            && src.namespace.clone().or_else(|| a.namespace()).as_deref()
                                == Some(ns.as_str())
                    })
                    .map(|a| ObjectRef::from_obj(a.as_ref()))
                    .collect::<Vec<_>>()
            },
        )
    };
    sourceloop::controller_on_spec::<ImageUpdateAutomation>(
        client,
        "imageupdateautomation",
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
    use ferroflux_api::image::PushSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    fn branch(b: &str) -> GitRef {
        GitRef {
            branch: Some(b.into()),
            ..Default::default()
        }
    }

    #[test]
    fn the_push_branch_follows_fluxs_configure_push() {
        assert_eq!(
            push_branch(&branch("main"), None).unwrap(),
            ("main".into(), false)
        );
        let auto = PushSpec {
            branch: Some("auto".into()),
            ..Default::default()
        };
        assert_eq!(
            push_branch(&branch("main"), Some(&auto)).unwrap(),
            ("auto".into(), true)
        );
        // No checkout branch: the default one is compared with.
        let master = PushSpec {
            branch: Some("master".into()),
            ..Default::default()
        };
        assert_eq!(
            push_branch(&GitRef::default(), Some(&master)).unwrap(),
            ("master".into(), false)
        );
        let tag = GitRef {
            tag: Some("v1".into()),
            ..Default::default()
        };
        assert_eq!(
            push_branch(&tag, None).unwrap_err(),
            "push spec not provided, and cannot be inferred from .spec.git.checkout.ref or GitRepository .spec.ref"
        );
    }

    #[test]
    fn refspecs_push_the_commit_branch_elsewhere() {
        assert_eq!(
            refspec_update("refs/heads/main:refs/heads/auto", "main").unwrap(),
            RefUpdate {
                name: "refs/heads/auto".into(),
                force: false
            }
        );
        assert_eq!(
            refspec_update("+main:refs/for/main", "main").unwrap(),
            RefUpdate {
                name: "refs/for/main".into(),
                force: true
            }
        );
        assert!(refspec_update("refs/heads/other:refs/heads/x", "main").is_err());
        assert!(refspec_update("main", "main").is_err());
    }

    #[test]
    fn policy_selectors_become_label_selector_strings() {
        let sel = LabelSelector {
            match_labels: Some([("app".to_string(), "web".to_string())].into()),
            match_expressions: Some(vec![
                LabelSelectorRequirement {
                    key: "tier".into(),
                    operator: "In".into(),
                    values: Some(vec!["a".into(), "b".into()]),
                },
                LabelSelectorRequirement {
                    key: "legacy".into(),
                    operator: "DoesNotExist".into(),
                    values: None,
                },
            ]),
        };
        assert_eq!(
            selector_string(&sel).unwrap(),
            "app=web,tier in (a,b),!legacy"
        );
        let bad = LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "tier".into(),
                operator: "Near".into(),
                values: None,
            }]),
            ..Default::default()
        };
        assert_eq!(
            selector_string(&bad).unwrap_err(),
            "\"Near\" is not a valid label selector operator"
        );
        let empty_in = LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "tier".into(),
                operator: "In".into(),
                values: Some(vec![]),
            }]),
            ..Default::default()
        };
        assert!(selector_string(&empty_in).is_err());
        assert_eq!(selector_string(&LabelSelector::default()).unwrap(), "");
    }
}
