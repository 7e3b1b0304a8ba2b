//! `ferroflux diff kustomization NAME --path DIR`: builds DIR as `build kustomization` does,
//! server-side dry-runs every object against the cluster and prints what would change, in
//! flux's words: `► Kind/ns/name created|drifted|deleted|skipped`, drifted objects followed by
//! a dyff-style report of the fields that differ. With `--recursive`, each Flux Kustomization
//! of the build that the cluster already has is built and diffed in turn, its report after a
//! `📁 Kustomization/ns/name changed` line. Secret values never appear: they read `***`,
//! or `*** (before)` / `*** (after)` where they differ, as Flux's sanitizer writes them.
//!
//! Exit code: 0 when nothing would change, 1 when something would, 2 on error.

use crate::cluster::{Cluster, KubeArgs, humantime};
use crate::cmd::build::{
    LocalArgs, Lookup, MASK, build_local, build_nested, decode_base64, mask_sops,
};
use crate::exit;
use crate::nested::{self, LocalSources, Recursion};
use crate::output::progress;
use anyhow::anyhow;
use clap::{Args, Subcommand};
use ferroflux_api::Kustomization;
use ferroflux_apply::applier::{Applier, ApplyOptions, DryRun};
use ferroflux_apply::changeset::Action;
use ferroflux_apply::dyff;
use ferroflux_apply::ignore::IgnoreRules;
use ferroflux_apply::inventory::{inventory_of, stale_entries};
use ferroflux_controller::kustomization::reconciler::FIELD_MANAGER;
use serde_json::Value;
use std::fmt::Write as _;
use std::future::Future;
use std::pin::Pin;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct DiffArgs {
    #[command(subcommand)]
    what: DiffWhat,
    #[command(flatten)]
    kube: KubeArgs,
}

#[derive(Subcommand, Debug)]
enum DiffWhat {
    /// Show what applying a local directory for a Kustomization would change.
    #[command(visible_alias = "ks")]
    Kustomization(DiffKsArgs),
    /// Show what releasing a local chart for a HelmRelease would change (beyond flux).
    #[command(visible_alias = "hr")]
    Helmrelease(super::helmrelease_local::LocalChartArgs),
    /// Compare an OCI artifact's content with a local directory.
    Artifact(super::artifact::DiffArtifactArgs),
}

#[derive(Args, Debug)]
struct DiffKsArgs {
    #[command(flatten)]
    local: LocalArgs,
    /// Diff against a new Kustomization when the cluster has none of this name (needs
    /// --kustomization-file).
    #[arg(long)]
    ignore_not_found: bool,
    /// Show a progress bar. Accepted for flux's command lines: ferroflux's diff shows none,
    /// whichever the value.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    progress_bar: Option<bool>,
}

/// What a diff found: the report and whether anything would change.
pub struct DiffReport {
    pub output: String,
    pub changed: bool,
}

/// A diff's report with the per-object failures gathered beside it.
type DiffOutcome = anyhow::Result<(DiffReport, Vec<String>)>;

/// Runs the diff; flux's exit codes: 0 unchanged, 1 changed, 2 error.
pub async fn run(args: DiffArgs) -> anyhow::Result<ExitCode> {
    if let DiffWhat::Artifact(a) = args.what {
        return match super::artifact::diff(a).await {
            Ok(code) => Ok(code),
            Err(e) => {
                crate::output::progress::failure(format_args!("{e:#}"));
                Ok(ExitCode::from(crate::exit::DIFF_ERROR))
            }
        };
    }
    let timeout = args.kube.timeout;
    let work: Pin<Box<dyn Future<Output = DiffOutcome>>> = match &args.what {
        DiffWhat::Kustomization(ks_args) => Box::pin(diff(ks_args, &args.kube)),
        DiffWhat::Helmrelease(hr) => Box::pin(super::helmrelease_local::diff(hr, &args.kube)),
        DiffWhat::Artifact(_) => unreachable!("handled above"),
    };
    // Ctrl-C drops the diff, and with it the private copy holding decrypted files.
    let outcome = tokio::select! {
        done = tokio::time::timeout(timeout, work) => {
            done.map_err(|_| anyhow!("diff timed out after {}", humantime(timeout)))
                .and_then(|r| r)
        }
        _ = tokio::signal::ctrl_c() => Err(anyhow!("diff cancelled")),
    };
    let code = match outcome {
        Ok((report, errors)) => {
            print!("{}", report.output);
            if !errors.is_empty() {
                for e in errors {
                    progress::failure(e);
                }
                exit::DIFF_ERROR
            } else if report.changed {
                progress::failure(
                    "identified at least one change, exiting with non-zero exit code",
                );
                exit::DIFF_CHANGES
            } else {
                return Ok(ExitCode::SUCCESS);
            }
        }
        Err(e) => {
            progress::failure(format_args!("{e:#}"));
            exit::DIFF_ERROR
        }
    };
    Ok(ExitCode::from(code))
}

/// Builds and dry-runs; per-object failures are gathered (the rest is still diffed) and
/// returned beside the report.
async fn diff(
    args: &DiffKsArgs,
    kube_args: &KubeArgs,
) -> anyhow::Result<(DiffReport, Vec<String>)> {
    let local = &args.local;
    let sources = LocalSources::parse(&local.local_sources)?;
    let client = Cluster::connect(kube_args).await?.client;
    let lookup = if args.ignore_not_found {
        Lookup::MayBeNew
    } else {
        Lookup::InCluster
    };
    let (ks, mut objects, dir) = build_local(local, kube_args, Some(&client), lookup).await?;
    mask_sops(&mut objects);
    let applier = Applier::new(client.clone(), FIELD_MANAGER);
    let mut recursion = local
        .recursive
        .then(|| Recursion::new(sources, Some(&client), &ks, &dir));
    let mut errors = Vec::new();
    let diff = Diff {
        applier: &applier,
        client: &client,
        local,
    };
    let report = diff
        .objects(&ks, &objects, recursion.as_mut(), &mut errors)
        .await;
    Ok((report, errors))
}

/// What every level of a (recursive) diff shares.
struct Diff<'a> {
    applier: &'a Applier,
    client: &'a kube::Client,
    local: &'a LocalArgs,
}

impl<'a> Diff<'a> {
    /// The report for `objects` built for `ks`. With `recursion`, each Flux Kustomization the
    /// cluster already has (a new one brings only new objects) is built and diffed in turn,
    /// its report following a `📁 Kustomization/ns/name changed` line when it changes anything.
    fn objects<'r>(
        &'r self,
        ks: &'r Kustomization,
        objects: &'r [Value],
        mut recursion: Option<&'r mut Recursion<'a>>,
        errors: &'r mut Vec<String>,
    ) -> Pin<Box<dyn Future<Output = DiffReport> + 'r>> {
        Box::pin(async move {
            let errors_before = errors.len();
            let options = ApplyOptions {
                force: ks.spec.force.unwrap_or(false),
                ..ApplyOptions::default()
            };
            let mut output = String::new();
            let mut changed = false;
            // The controller's spec.ignore rules, selected the same way (ferroflux_apply::ignore).
            let ignore = match IgnoreRules::compile(ks.spec.ignore.as_deref().unwrap_or_default()) {
                Ok(rules) => rules,
                Err(e) => {
                    errors.push(format!("invalid spec.ignore: {e}"));
                    IgnoreRules::default()
                }
            };
            for obj in objects {
                let outcome = match self.applier.dry_run(obj, &options).await {
                    Ok(o) => o,
                    Err(e) => {
                        errors.push(e.to_string());
                        continue;
                    }
                };
                let created = outcome.action == Action::Created;
                changed |= describe_with(outcome, obj, &ignore, &mut output);
                let Some(recursion) = recursion.as_deref_mut() else {
                    continue;
                };
                // A new Kustomization brings only new objects: nothing more to say about it.
                if created || !nested::is_kustomization(obj) {
                    continue;
                }
                let sub = self.nested(obj, ks, recursion, errors).await;
                output.push_str(&sub.output);
                changed |= sub.changed;
            }
            if ks.spec.prune && errors.len() == errors_before {
                match stale(ks, objects) {
                    Ok(stale) => {
                        for id in stale {
                            let _ = writeln!(output, "► {id} deleted");
                            changed = true;
                        }
                    }
                    Err(e) => errors.push(e.to_string()),
                }
            }
            DiffReport { output, changed }
        })
    }

    /// The report of `obj`, a Flux Kustomization of `ks` the cluster already has, built and
    /// diffed in turn: a `📁 Kustomization/ns/name changed` line and its report when it changes
    /// anything, a warning line when it applies to a remote cluster; failures go to `errors`.
    async fn nested(
        &self,
        obj: &Value,
        ks: &Kustomization,
        recursion: &mut Recursion<'a>,
        errors: &mut Vec<String>,
    ) -> DiffReport {
        let mut report = DiffReport {
            output: String::new(),
            changed: false,
        };
        if let Some(name) = recursion.remote(obj, ks) {
            report.output = format!("⚠️ {name} skipped: diff not supported for remote clusters\n");
            return report;
        }
        let nested = match recursion.nested(obj, ks).await {
            Ok(Some(n)) => n,
            Ok(None) => return report,
            Err(e) => {
                errors.push(format!("{e:#}"));
                return report;
            }
        };
        let built = match build_nested(&nested, self.local, Some(self.client)).await {
            Ok(mut b) => {
                mask_sops(&mut b);
                b
            }
            Err(e) => {
                errors.push(format!("{e:#}"));
                return report;
            }
        };
        recursion.enter(&nested);
        let sub = self
            .objects(&nested.ks, &built, Some(&mut *recursion), errors)
            .await;
        recursion.leave();
        if sub.changed {
            report.output = format!("📁 {} changed\n{}", nested::display(&nested.ks), sub.output);
            report.changed = true;
        }
        report
    }
}

/// Writes flux's line for one dry-run outcome (`► Kind/ns/name created|drifted|skipped`, a
/// drifted object's differences after it, Secret values masked) and says whether the object
/// would change.
pub(crate) fn describe(outcome: DryRun, output: &mut String) -> bool {
    describe_with(outcome, &Value::Null, &IgnoreRules::default(), output)
}

/// [`describe`] for an object `obj` of a Kustomization build, as flux's diff compares one: the
/// fields its `ignore` rules name (selected on the dry-run's object, as the controller does)
/// are left out on both sides (an object whose only differences are ignored is unchanged), and
/// a Secret whose values are sops-masked is compared by its keys alone, its values shown as
/// `*****`.
pub(crate) fn describe_with(
    outcome: DryRun,
    obj: &Value,
    ignore: &IgnoreRules,
    output: &mut String,
) -> bool {
    let subject = outcome.id.display_name();
    match outcome.action {
        Action::Skipped => {
            let _ = writeln!(output, "► {subject} skipped");
            false
        }
        Action::Created => {
            let _ = writeln!(output, "► {subject} created");
            true
        }
        Action::Configured => {
            let (live, merged) = (
                outcome.live.unwrap_or(Value::Null),
                outcome.merged.unwrap_or(Value::Null),
            );
            let paths = ignore.paths_for(&merged);
            let (mut live, mut merged) = (
                ferroflux_apply::ignore::without(&live, &paths),
                ferroflux_apply::ignore::without(&merged, &paths),
            );
            let secret = outcome.id.kind == "Secret" && outcome.id.group.is_empty();
            if secret && sops_masked(obj) {
                if data_keys(&live) == data_keys(&merged) {
                    return false;
                }
                for side in [&mut live, &mut merged] {
                    if let Some(data) = side.get_mut("data").and_then(Value::as_object_mut) {
                        for v in data.values_mut() {
                            *v = Value::String("*****".into());
                        }
                    }
                }
            } else if secret {
                dyff::sanitize_secret(&mut live, &mut merged);
            }
            let report = dyff::report(&live, &merged);
            if report == "\n" {
                // Only ignored fields differ.
                return false;
            }
            let _ = writeln!(output, "► {subject} drifted");
            output.push_str(&report);
            true
        }
        _ => false,
    }
}

/// Whether `obj` is a Secret whose values [`mask_sops`] replaced.
fn sops_masked(obj: &Value) -> bool {
    let masked = |field: &str, decode: bool| {
        obj.get(field).and_then(Value::as_object).is_some_and(|m| {
            m.values().filter_map(Value::as_str).any(|v| {
                let text = if decode {
                    decode_base64(v).unwrap_or_default()
                } else {
                    v.as_bytes().to_vec()
                };
                String::from_utf8_lossy(&text).contains(MASK)
            })
        })
    };
    masked("data", true) || masked("stringData", false)
}

/// The keys of a Secret's `data`, sorted.
fn data_keys(obj: &Value) -> Vec<String> {
    let mut keys: Vec<String> = obj
        .get("data")
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    keys.sort();
    keys
}

/// What the Kustomization's inventory holds that the build no longer does, in flux's object
/// sort order (not the reverse it deletes in).
fn stale(ks: &Kustomization, objects: &[Value]) -> anyhow::Result<Vec<String>> {
    let old = ks
        .status
        .as_ref()
        .and_then(|s| s.inventory.clone())
        .unwrap_or_default();
    let new = inventory_of(objects).map_err(|e| anyhow!("{e}"))?;
    let mut stale = stale_entries(&old, &new).map_err(|e| anyhow!("{e}"))?;
    stale.reverse();
    Ok(stale.into_iter().map(|e| e.id.display_name()).collect())
}
