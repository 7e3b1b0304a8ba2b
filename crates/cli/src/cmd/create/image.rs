//! `ferroflux create image repository|policy|update NAME [...]`: the image automation objects
//! (ImageRepository, ImagePolicy, ImageUpdateAutomation of `image.toolkit.fluxcd.io/v1`) as
//! `flux create image ...` writes them, with flux's flags and messages. `--export` prints them.
//! Otherwise each is created (or its labels and spec replaced) when the cluster serves its CRD;
//! an ImageRepository or ImagePolicy is then waited on until ferroflux's image reflector reports
//! it ready, as flux waits, and an ImageUpdateAutomation until ferroflux's image automation
//! reports it ready.
//! The kinds are found by discovery, so that a cluster installed before ferroflux shipped their
//! CRDs gets a clear error; `delete image` shares [`image_resource`].

use super::secret::parse_labels;
use crate::cluster::{Cluster, KubeArgs};
use crate::fluxobj::{self, FluxObject};
use crate::output::document::{document, sorted};
use crate::output::progress;
use anyhow::{anyhow, bail};
use clap::{Args, Subcommand};
use ferroflux_api::duration::format_duration;
use ferroflux_api::{ImagePolicy, ImageRepository};
use kube::api::ApiResource;
use kube::core::GroupVersionKind;
use serde_json::{Map, Value, json};
use std::process::ExitCode;
use std::time::Duration;

/// The API group and version of the image automation kinds.
pub(crate) const GROUP: &str = "image.toolkit.fluxcd.io";
pub(crate) const VERSION: &str = "v1";

/// `create image`'s kinds.
#[derive(Subcommand, Debug)]
pub enum ImageTarget {
    /// Create or update an ImageRepository object.
    Repository(RepositoryArgs),
    /// Create or update an ImagePolicy object.
    Policy(PolicyArgs),
    /// Create or update an ImageUpdateAutomation object.
    Update(UpdateArgs),
}

/// What every `create` command shares in flux: `--export`, `--label`.
#[derive(Args, Debug)]
pub struct Common {
    /// The object's name.
    name: String,
    /// Print the object as YAML instead of applying it.
    #[arg(long)]
    export: bool,
    /// Labels of the object, as key=value (repeatable, or comma-separated).
    #[arg(long = "label", value_delimiter = ',')]
    labels: Vec<String>,
}

/// `create image repository`'s flags (flux's names).
#[derive(Args, Debug)]
pub struct RepositoryArgs {
    #[command(flatten)]
    common: Common,
    /// The image repository to scan; e.g., library/alpine.
    #[arg(long)]
    image: Option<String>,
    /// The name of a docker-registry secret to use for credentials.
    #[arg(long)]
    secret_ref: Option<String>,
    /// The name of a secret to use for TLS certificates.
    #[arg(long = "cert-ref")]
    cert_secret_ref: Option<String>,
    /// A timeout for scanning; this defaults to the interval if not set.
    #[arg(long, value_parser = crate::flags::duration)]
    scan_timeout: Option<Duration>,
    /// How often the repository is scanned.
    #[arg(long, default_value = "1m", value_parser = crate::flags::duration)]
    interval: Duration,
}

/// `create image policy`'s flags (flux's names).
#[derive(Args, Debug)]
pub struct PolicyArgs {
    #[command(flatten)]
    common: Common,
    /// The name of an image repository object.
    #[arg(long)]
    image_ref: Option<String>,
    /// A semver range to apply to tags; e.g., '1.x'.
    #[arg(long = "select-semver")]
    semver: Option<String>,
    /// Alphabetical sorting to select the image: "asc" selects the last, "desc" the first.
    #[arg(long = "select-alpha")]
    alpha: Option<String>,
    /// Numeric sorting to select the image: "asc" selects the last, "desc" the first.
    #[arg(long = "select-numeric")]
    numeric: Option<String>,
    /// Regular expression pattern used to filter the image tags.
    #[arg(long)]
    filter_regex: Option<String>,
    /// Replacement pattern (using capture groups from --filter-regex) to use for sorting.
    #[arg(long)]
    filter_extract: Option<String>,
    /// The digest reflection policy: Never, IfNotPresent or Always.
    #[arg(long)]
    reflect_digest: Option<String>,
    /// How often new digests are checked, with the 'Always' digest reflection policy.
    #[arg(long, value_parser = crate::flags::duration)]
    interval: Option<Duration>,
}

/// `create image update`'s flags (flux's names).
#[derive(Args, Debug)]
pub struct UpdateArgs {
    #[command(flatten)]
    common: Common,
    /// The name of a GitRepository resource with details of the upstream Git repository.
    #[arg(long)]
    git_repo_ref: Option<String>,
    /// The namespace of the GitRepository, by default the ImageUpdateAutomation's.
    #[arg(long)]
    git_repo_namespace: Option<String>,
    /// Path to the directory containing the manifests to be updated, by default the root.
    #[arg(long)]
    git_repo_path: Option<String>,
    /// The branch to checkout.
    #[arg(long)]
    checkout_branch: Option<String>,
    /// The branch to push commits to, by default the checkout branch.
    #[arg(long)]
    push_branch: Option<String>,
    /// A template for commit messages.
    #[arg(long)]
    commit_template: Option<String>,
    /// The name to use for commit author.
    #[arg(long)]
    author_name: Option<String>,
    /// The email to use for commit author.
    #[arg(long)]
    author_email: Option<String>,
    /// Name of the Secret holding the signing key (spec.git.commit.signingKey).
    #[arg(long)]
    signing_key_secret: Option<String>,
    /// Signing-key format: gpg or ssh (gpg when --signing-key-secret is set).
    #[arg(long)]
    signing_key_type: Option<String>,
    /// How often the automation runs.
    #[arg(long, default_value = "1m", value_parser = crate::flags::duration)]
    interval: Duration,
}

fn given(v: &Option<String>) -> Option<&str> {
    v.as_deref().filter(|s| !s.is_empty())
}

fn object(
    kind: &str,
    ns: &str,
    common: &Common,
    spec: Map<String, Value>,
) -> anyhow::Result<Value> {
    let mut metadata = Map::new();
    metadata.insert("name".into(), json!(common.name));
    metadata.insert("namespace".into(), json!(ns));
    let labels = parse_labels(&common.labels)?;
    if !labels.is_empty() {
        metadata.insert("labels".into(), Value::Object(labels));
    }
    Ok(sorted(json!({
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "kind": kind,
        "metadata": metadata,
        "spec": spec,
    })))
}

/// The characters go-containerregistry allows in a repository path.
const REPOSITORY_CHARS: &str = "abcdefghijklmnopqrstuvwxyz0123456789_-./";

/// go-containerregistry's `name.NewRepository` check of `--image` (in its default, non-strict
/// mode): the registry is the first path element when it looks like a host (has a `.` or a
/// `:`, or is `localhost`), and the rest may hold only lowercase letters, digits and `_-./`.
fn check_image(image: &str) -> anyhow::Result<()> {
    let repo = match image.split_once('/') {
        Some((host, rest)) if host.contains(['.', ':']) || host == "localhost" => rest,
        _ => image,
    };
    if repo.is_empty() {
        bail!("unable to parse image value: a repository name must be specified");
    }
    if repo.chars().any(|c| !REPOSITORY_CHARS.contains(c)) {
        bail!(
            "unable to parse image value: repository can only contain the characters `{REPOSITORY_CHARS}`: {repo}"
        );
    }
    Ok(())
}

fn repository(ns: &str, a: &RepositoryArgs) -> anyhow::Result<Value> {
    let image =
        given(&a.image).ok_or_else(|| anyhow!("an image repository (--image) is required"))?;
    check_image(image)?;
    let mut spec = Map::new();
    spec.insert("image".into(), json!(image));
    spec.insert("interval".into(), json!(format_duration(a.interval)));
    if let Some(t) = a.scan_timeout.filter(|t| !t.is_zero()) {
        spec.insert("timeout".into(), json!(format_duration(t)));
    }
    if let Some(s) = given(&a.secret_ref) {
        spec.insert("secretRef".into(), json!({"name": s}));
    }
    if let Some(s) = given(&a.cert_secret_ref) {
        spec.insert("certSecretRef".into(), json!({"name": s}));
    }
    object("ImageRepository", ns, &a.common, spec)
}

/// flux's check of `--filter-extract`: every `$name` or `${name}` must be a number or a named
/// group of `--filter-regex`; `$$` is a literal dollar.
fn check_extract(template: &str, names: &[&str]) -> anyhow::Result<()> {
    let mut rest = template;
    while let Some(i) = rest.find('$') {
        rest = &rest[i..];
        if rest[1..].starts_with('$') {
            rest = &rest[2..];
            continue;
        }
        let braced = rest[1..].starts_with('{');
        let body = if braced { &rest[2..] } else { &rest[1..] };
        let len = body
            .char_indices()
            .find(|(_, c)| !(c.is_alphanumeric() || *c == '_'))
            .map_or(body.len(), |(i, _)| i);
        if len == 0 || (braced && !body[len..].starts_with('}')) {
            bail!("--filter-extract is malformed");
        }
        let name = &body[..len];
        rest = &body[len + usize::from(braced)..];
        let numeric = name.bytes().all(|b| b.is_ascii_digit())
            && !(name.starts_with('0') && name.len() > 1)
            && name.len() <= 9;
        if !numeric && !names.contains(&name) {
            bail!("capture group ${name} used in --filter-extract not found in --filter-regex");
        }
    }
    Ok(())
}

fn policy(ns: &str, a: &PolicyArgs) -> anyhow::Result<Value> {
    let image_ref = given(&a.image_ref).ok_or_else(|| {
        anyhow!("the name of an ImageRepository in the namespace is required (--image-ref)")
    })?;
    let mut spec = Map::new();
    spec.insert("imageRepositoryRef".into(), json!({"name": image_ref}));
    let order = |flag: &str, v: &str| {
        if v == "asc" || v == "desc" {
            Ok(json!({"order": v}))
        } else {
            Err(anyhow!("--{flag} must be one of [\"asc\", \"desc\"]"))
        }
    };
    let choice = match (given(&a.semver), given(&a.alpha), given(&a.numeric)) {
        (Some(range), None, None) => json!({"semver": {"range": range}}),
        (None, Some(alpha), None) => json!({"alphabetical": order("select-alpha", alpha)?}),
        (None, None, Some(numeric)) => json!({"numerical": order("select-numeric", numeric)?}),
        (None, None, None) => {
            bail!("a policy must be provided with either --select-semver or --select-alpha")
        }
        _ => bail!(
            "only one of --select-semver, --select-alpha or --select-numeric can be specified"
        ),
    };
    spec.insert("policy".into(), choice);
    match (given(&a.filter_regex), given(&a.filter_extract)) {
        (Some(pattern), extract) => {
            let regex = regex::Regex::new(pattern)
                .map_err(|_| anyhow!("--filter-regex is an invalid regex pattern"))?;
            let mut filter = Map::new();
            filter.insert("pattern".into(), json!(pattern));
            if let Some(extract) = extract {
                let names: Vec<&str> = regex.capture_names().flatten().collect();
                check_extract(extract, &names)?;
                filter.insert("extract".into(), json!(extract));
            }
            spec.insert("filterTags".into(), Value::Object(filter));
        }
        (None, Some(_)) => {
            bail!("cannot specify --filter-extract without specifying --filter-regex")
        }
        (None, None) => {}
    }
    let reflect = given(&a.reflect_digest);
    if let Some(p) = reflect {
        if !["Never", "IfNotPresent", "Always"].contains(&p) {
            bail!(
                "invalid value for --reflect-digest, must be one of 'Never', 'IfNotPresent', 'Always'"
            );
        }
        spec.insert("digestReflectionPolicy".into(), json!(p));
    }
    if let Some(interval) = a.interval.filter(|i| !i.is_zero()) {
        if reflect != Some("Always") {
            bail!(
                "the --interval flag can only be used with the 'Always' digest reflection policy, use --reflect-digest=Always"
            );
        }
        spec.insert("interval".into(), json!(format_duration(interval)));
    }
    object("ImagePolicy", ns, &a.common, spec)
}

fn update(ns: &str, a: &UpdateArgs) -> anyhow::Result<Value> {
    let repo = given(&a.git_repo_ref)
        .ok_or_else(|| anyhow!("a reference to a GitRepository is required (--git-repo-ref)"))?;
    let branch = given(&a.checkout_branch)
        .ok_or_else(|| anyhow!("the Git repository branch is required (--checkout-branch)"))?;
    let author_name = given(&a.author_name)
        .ok_or_else(|| anyhow!("the author name is required (--author-name)"))?;
    let author_email = given(&a.author_email)
        .ok_or_else(|| anyhow!("the author email is required (--author-email)"))?;
    let key_type = given(&a.signing_key_type);
    let key_secret = given(&a.signing_key_secret);
    if key_type.is_some() && key_secret.is_none() {
        bail!("--signing-key-type requires --signing-key-secret");
    }
    if key_type.is_some_and(|t| t != "gpg" && t != "ssh") {
        bail!("--signing-key-type must be one of: gpg, ssh");
    }
    let mut source = Map::new();
    source.insert("kind".into(), json!("GitRepository"));
    source.insert("name".into(), json!(repo));
    if let Some(ns) = given(&a.git_repo_namespace) {
        source.insert("namespace".into(), json!(ns));
    }
    let mut commit = Map::new();
    commit.insert(
        "author".into(),
        json!({"name": author_name, "email": author_email}),
    );
    if let Some(t) = given(&a.commit_template) {
        commit.insert("messageTemplate".into(), json!(t));
    }
    if let Some(secret) = key_secret {
        let mut key = Map::new();
        key.insert("secretRef".into(), json!({"name": secret}));
        // flux leaves the type out unless given: the controller reads none as gpg.
        if let Some(t) = key_type {
            key.insert("type".into(), json!(t));
        }
        commit.insert("signingKey".into(), Value::Object(key));
    }
    let mut git = Map::new();
    git.insert("checkout".into(), json!({"ref": {"branch": branch}}));
    git.insert("commit".into(), Value::Object(commit));
    if let Some(push) = given(&a.push_branch) {
        git.insert("push".into(), json!({"branch": push}));
    }
    let mut spec = Map::new();
    spec.insert("sourceRef".into(), Value::Object(source));
    spec.insert("git".into(), Value::Object(git));
    spec.insert("interval".into(), json!(format_duration(a.interval)));
    if let Some(path) = given(&a.git_repo_path) {
        spec.insert(
            "update".into(),
            json!({"path": path, "strategy": "Setters"}),
        );
    }
    object("ImageUpdateAutomation", ns, &a.common, spec)
}

/// The API resource of an image automation kind, as the cluster serves it; a clear error when
/// its CRD is not installed.
pub(crate) async fn image_resource(cluster: &Cluster, kind: &str) -> anyhow::Result<ApiResource> {
    let gvk = GroupVersionKind::gvk(GROUP, VERSION, kind);
    match kube::discovery::pinned_kind(&cluster.client, &gvk).await {
        Ok((resource, _)) => Ok(resource),
        Err(kube::Error::Api(status)) if status.code == 404 => bail!(
            "the cluster does not serve {kind} ({GROUP}/{VERSION}): the image CRDs are not installed (`ferroflux install` installs them)"
        ),
        Err(e) => Err(anyhow!("discovering {kind} ({GROUP}/{VERSION}): {e}")),
    }
}

/// Runs `create image ...`.
pub async fn run(kube: &KubeArgs, what: &ImageTarget) -> anyhow::Result<ExitCode> {
    let ns = kube.namespace.as_str();
    let (kind, object, export) = match what {
        ImageTarget::Repository(a) => ("ImageRepository", repository(ns, a)?, a.common.export),
        ImageTarget::Policy(a) => ("ImagePolicy", policy(ns, a)?, a.common.export),
        ImageTarget::Update(a) => ("ImageUpdateAutomation", update(ns, a)?, a.common.export),
    };
    if export {
        print!("{}", document(&object));
        return Ok(ExitCode::SUCCESS);
    }
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let cluster = Cluster::connect(kube).await?;
    let deadline = tokio::time::Instant::now() + cluster.timeout;
    let resource = image_resource(&cluster, kind).await?;
    progress::generate(format!("generating {kind}"));
    super::apply_saying_at(&cluster, ns, &resource, &object, kind, kind).await?;
    match what {
        ImageTarget::Repository(_) => wait::<ImageRepository>(&cluster, ns, name, deadline).await?,
        ImageTarget::Policy(_) => wait::<ImagePolicy>(&cluster, ns, name, deadline).await?,
        ImageTarget::Update(_) => {
            wait::<ferroflux_api::ImageUpdateAutomation>(&cluster, ns, name, deadline).await?
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// flux's tail of `create image ...`: wait for the image controllers' Ready.
async fn wait<K: FluxObject>(
    cluster: &Cluster,
    ns: &str,
    name: &str,
    deadline: tokio::time::Instant,
) -> anyhow::Result<()> {
    progress::waiting(format!("waiting for {} reconciliation", K::KIND));
    fluxobj::wait_ready::<K>(cluster, ns, name, deadline)
        .await
        .map_err(|e| anyhow!("{e}"))?;
    progress::success(format!("{} reconciliation completed", K::KIND));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(subcommand)]
        what: ImageTarget,
    }

    fn built(args: &str) -> anyhow::Result<String> {
        let cli = Cli::try_parse_from(std::iter::once("image").chain(args.split_whitespace()))?;
        let object = match &cli.what {
            ImageTarget::Repository(a) => repository("flux-system", a)?,
            ImageTarget::Policy(a) => policy("flux-system", a)?,
            ImageTarget::Update(a) => update("flux-system", a)?,
        };
        Ok(document(&object))
    }

    fn golden(file: &str) -> String {
        std::fs::read_to_string(format!(
            "{}/tests/fixtures/goldens/create_image_update/{file}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
    }

    const UPDATE: &str = "update flux-system --git-repo-ref=flux-system --checkout-branch=main \
         --author-name=flux --author-email=flux@example.com";

    /// flux's goldens and messages (cmd/flux/create_image_update_test.go), same arguments.
    #[test]
    fn update_matches_flux() {
        let cases = [
            ("--interval=1m0s --export", "no-signing.yaml"),
            (
                "--signing-key-secret=my-key --interval=1m0s --export",
                "signing-default-gpg.yaml",
            ),
            (
                "--signing-key-secret=my-deploy-key --signing-key-type=ssh --interval=1m0s --export",
                "signing-ssh.yaml",
            ),
        ];
        for (args, file) in cases {
            assert_eq!(
                built(&format!("{UPDATE} {args}")).unwrap(),
                golden(file),
                "{file}"
            );
        }
        let err = built(&format!("{UPDATE} --signing-key-type=ssh --export")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--signing-key-type requires --signing-key-secret"
        );
        let err = built(&format!(
            "{UPDATE} --signing-key-secret=k --signing-key-type=pgp --export"
        ))
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "--signing-key-type must be one of: gpg, ssh"
        );
    }

    #[test]
    fn update_requires_flux_flags() {
        let cases = [
            (
                "update a --export",
                "a reference to a GitRepository is required (--git-repo-ref)",
            ),
            (
                "update a --git-repo-ref=r --export",
                "the Git repository branch is required (--checkout-branch)",
            ),
            (
                "update a --git-repo-ref=r --checkout-branch=main --export",
                "the author name is required (--author-name)",
            ),
            (
                "update a --git-repo-ref=r --checkout-branch=main --author-name=n --export",
                "the author email is required (--author-email)",
            ),
        ];
        for (args, message) in cases {
            assert_eq!(built(args).unwrap_err().to_string(), message, "{args}");
        }
    }

    #[test]
    fn update_with_every_flag() {
        let out = built(&format!(
            "{UPDATE} --git-repo-namespace=infra --git-repo-path=./clusters/dev \
             --push-branch=image-updates --commit-template=bump --label=team=a --export"
        ))
        .unwrap();
        assert_eq!(
            out,
            "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\n\
             metadata:\n  labels:\n    team: a\n  name: flux-system\n  namespace: flux-system\n\
             spec:\n  git:\n    checkout:\n      ref:\n        branch: main\n    commit:\n\
             \x20     author:\n        email: flux@example.com\n        name: flux\n\
             \x20     messageTemplate: bump\n    push:\n      branch: image-updates\n\
             \x20 interval: 1m0s\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n\
             \x20   namespace: infra\n  update:\n    path: ./clusters/dev\n    strategy: Setters\n"
        );
    }

    #[test]
    fn repository_as_flux_writes_it() {
        let out = built(
            "repository podinfo --image=ghcr.io/stefanprodan/podinfo --interval=10m \
             --secret-ref=pull --cert-ref=tls --scan-timeout=30s --export",
        )
        .unwrap();
        assert_eq!(
            out,
            "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageRepository\nmetadata:\n\
             \x20 name: podinfo\n  namespace: flux-system\nspec:\n  certSecretRef:\n    name: tls\n\
             \x20 image: ghcr.io/stefanprodan/podinfo\n  interval: 10m0s\n  secretRef:\n\
             \x20   name: pull\n  timeout: 30s\n"
        );
        assert_eq!(
            built("repository p --export").unwrap_err().to_string(),
            "an image repository (--image) is required"
        );
        assert_eq!(
            built("repository p --image=ghcr.io/Stefan/podinfo --export")
                .unwrap_err()
                .to_string(),
            "unable to parse image value: repository can only contain the characters \
             `abcdefghijklmnopqrstuvwxyz0123456789_-./`: Stefan/podinfo"
        );
        assert!(built("repository p --image=localhost:5000/app --export").is_ok());
    }

    #[test]
    fn policy_as_flux_writes_it() {
        let out = built(
            "policy podinfo-semver --image-ref=podinfo --interval=10m --reflect-digest=Always \
             --select-semver=5.0.x --export",
        )
        .unwrap();
        assert_eq!(
            out,
            "---\napiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata:\n\
             \x20 name: podinfo-semver\n  namespace: flux-system\nspec:\n\
             \x20 digestReflectionPolicy: Always\n  imageRepositoryRef:\n    name: podinfo\n\
             \x20 interval: 10m0s\n  policy:\n    semver:\n      range: 5.0.x\n"
        );
        let out = built(
            "policy main --image-ref=app --select-numeric=asc \
             --filter-regex=^main-[a-f0-9]+-(?P<ts>[0-9]+) --filter-extract=$ts --export",
        )
        .unwrap();
        assert!(
            out.contains(
                "  filterTags:\n    extract: $ts\n    pattern: ^main-[a-f0-9]+-(?P<ts>[0-9]+)\n"
            ),
            "{out}"
        );
        assert!(
            out.contains("  policy:\n    numerical:\n      order: asc\n"),
            "{out}"
        );
        let cases = [
            (
                "policy p --select-semver=1.x --export",
                "the name of an ImageRepository in the namespace is required (--image-ref)",
            ),
            (
                "policy p --image-ref=r --export",
                "a policy must be provided with either --select-semver or --select-alpha",
            ),
            (
                "policy p --image-ref=r --select-semver=1.x --select-alpha=asc --export",
                "only one of --select-semver, --select-alpha or --select-numeric can be specified",
            ),
            (
                "policy p --image-ref=r --select-alpha=up --export",
                "--select-alpha must be one of [\"asc\", \"desc\"]",
            ),
            (
                "policy p --image-ref=r --select-numeric=up --export",
                "--select-numeric must be one of [\"asc\", \"desc\"]",
            ),
            (
                "policy p --image-ref=r --select-alpha=asc --filter-regex=( --export",
                "--filter-regex is an invalid regex pattern",
            ),
            (
                "policy p --image-ref=r --select-alpha=asc --filter-extract=$1 --export",
                "cannot specify --filter-extract without specifying --filter-regex",
            ),
            (
                "policy p --image-ref=r --select-alpha=asc --filter-regex=(?P<a>x) --filter-extract=$b --export",
                "capture group $b used in --filter-extract not found in --filter-regex",
            ),
            (
                "policy p --image-ref=r --select-alpha=asc --filter-regex=(x) --filter-extract=${1 --export",
                "--filter-extract is malformed",
            ),
            (
                "policy p --image-ref=r --select-alpha=asc --reflect-digest=Sometimes --export",
                "invalid value for --reflect-digest, must be one of 'Never', 'IfNotPresent', 'Always'",
            ),
            (
                "policy p --image-ref=r --select-alpha=asc --interval=5m --export",
                "the --interval flag can only be used with the 'Always' digest reflection policy, use --reflect-digest=Always",
            ),
        ];
        for (args, message) in cases {
            assert_eq!(built(args).unwrap_err().to_string(), message, "{args}");
        }
        // `$1` and `$$` need no named group.
        assert!(
            built("policy p --image-ref=r --select-alpha=asc --filter-regex=(x) --filter-extract=$1$$ --export")
                .is_ok()
        );
    }
}
