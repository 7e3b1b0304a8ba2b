//! The OCI artifact commands, as flux's: `push artifact`, `pull artifact`, `tag artifact`,
//! `list artifacts`, and the `artifact` forms of `build` and `diff` (their flags live here; the
//! `build`/`diff` commands dispatch to [`build`] and [`diff`]). The registry work is
//! `ferroflux-oci`'s, run off the executor; credentials come from `--creds` or Docker's config
//! file and are never printed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, anyhow, bail};
use clap::{Args, Subcommand};
use ferroflux_oci::artifact::{self, DEFAULT_MAX_LAYER_SIZE, Metadata};
use ferroflux_oci::extract::DEFAULT_MAX_EXTRACT_SIZE;
use ferroflux_oci::{Auth, Client, ClientOptions, DockerConfig, Reference};
use ferroflux_source::sourceignore::{Rules, VCS_EXCLUDES};

use crate::exit;
use crate::output::progress;
use crate::output::table::flux_table;

/// How to reach the registry (shared by every artifact command).
#[derive(Args, Debug, Clone)]
pub struct RegistryArgs {
    /// Credentials for the registry, `user:password` (or a token alone); without it, Docker's
    /// config file ($DOCKER_CONFIG/config.json or ~/.docker/config.json) is read.
    #[arg(long)]
    creds: Option<String>,
    /// Allow plain HTTP to this registry (localhost and 127.0.0.1 always allow it).
    #[arg(long)]
    insecure_registry: bool,
    /// The OCI provider name: only `generic` is supported yet.
    #[arg(long, default_value = "generic")]
    provider: String,
    /// A PEM CA bundle to trust for the registry's certificate.
    #[arg(long)]
    ca_file: Option<PathBuf>,
}

impl RegistryArgs {
    fn client(&self, r: &Reference) -> anyhow::Result<Client> {
        if self.provider != "generic" {
            bail!(
                "not supported yet: --provider {} (only generic)",
                self.provider
            );
        }
        let auth = match &self.creds {
            Some(c) => Auth::from_creds(c),
            None => DockerConfig::load_default()?.for_registry(&r.registry),
        };
        let ca_pem = match &self.ca_file {
            Some(p) => Some(std::fs::read(p).with_context(|| format!("reading {}", p.display()))?),
            None => None,
        };
        Ok(Client::for_reference(
            r,
            ClientOptions {
                auth,
                insecure: self.insecure_registry,
                ca_pem,
                ..Default::default()
            },
        )?)
    }
}

/// `push artifact`.
#[derive(Args, Debug)]
pub struct PushArgs {
    #[command(subcommand)]
    what: PushWhat,
}

#[derive(Subcommand, Debug)]
enum PushWhat {
    /// Push a directory or file as a Flux OCI artifact.
    Artifact(PushArtifactArgs),
}

#[derive(Args, Debug)]
struct PushArtifactArgs {
    /// oci://HOST/REPO:TAG
    url: String,
    /// The directory or file to push.
    #[arg(long)]
    path: PathBuf,
    /// Where the content comes from (org.opencontainers.image.source), e.g. a Git URL.
    #[arg(long)]
    source: String,
    /// The source revision (org.opencontainers.image.revision), e.g. main@sha1:<commit>.
    #[arg(long)]
    revision: String,
    /// Further annotations, key=value (repeatable or comma separated).
    #[arg(short = 'a', long, value_delimiter = ',')]
    annotations: Vec<String>,
    /// Paths to leave out, in .gitignore format (comma separated).
    #[arg(long, value_delimiter = ',')]
    ignore_paths: Vec<String>,
    /// Set the creation time to 1970-01-01T00:00:00Z so the same content gives the same digest.
    #[arg(long)]
    reproducible: bool,
    /// Print the result as JSON (`{"repository","tag","digest","url"}`).
    #[arg(short = 'o', long)]
    output: Option<String>,
    #[command(flatten)]
    registry: RegistryArgs,
}

/// `pull artifact`.
#[derive(Args, Debug)]
pub struct PullArgs {
    #[command(subcommand)]
    what: PullWhat,
}

#[derive(Subcommand, Debug)]
enum PullWhat {
    /// Pull a Flux OCI artifact and extract its content.
    Artifact(PullArtifactArgs),
}

#[derive(Args, Debug)]
struct PullArtifactArgs {
    /// oci://HOST/REPO:TAG or oci://HOST/REPO@sha256:DIGEST
    url: String,
    /// The directory to extract into (created when missing).
    #[arg(short = 'o', long)]
    output: PathBuf,
    #[command(flatten)]
    registry: RegistryArgs,
}

/// `tag artifact`.
#[derive(Args, Debug)]
pub struct TagArgs {
    #[command(subcommand)]
    what: TagWhat,
}

#[derive(Subcommand, Debug)]
enum TagWhat {
    /// Tag an artifact (the new tags name the same manifest).
    Artifact(TagArtifactArgs),
}

#[derive(Args, Debug)]
struct TagArtifactArgs {
    /// oci://HOST/REPO:TAG (or @sha256:DIGEST) of the artifact to tag.
    url: String,
    /// The new tag (repeatable).
    #[arg(long = "tag", required = true)]
    tags: Vec<String>,
    #[command(flatten)]
    registry: RegistryArgs,
}

/// `list artifacts`.
#[derive(Args, Debug)]
pub struct ListArgs {
    #[command(subcommand)]
    what: ListWhat,
}

#[derive(Subcommand, Debug)]
enum ListWhat {
    /// List the tags of a repository with their digest, source and revision.
    #[command(alias = "artifact")]
    Artifacts(ListArtifactsArgs),
}

#[derive(Args, Debug)]
struct ListArtifactsArgs {
    /// oci://HOST/REPO
    url: String,
    /// Only the tags within this semver range, highest first.
    #[arg(long)]
    filter_semver: Option<String>,
    /// Only the tags matching this regular expression.
    #[arg(long)]
    filter_regex: Option<String>,
    #[command(flatten)]
    registry: RegistryArgs,
}

/// `build artifact`'s flags.
#[derive(Args, Debug)]
pub struct BuildArtifactArgs {
    /// The directory or file to pack.
    #[arg(long)]
    path: PathBuf,
    /// The tar.gz file to write.
    #[arg(short = 'o', long, default_value = "artifact.tgz")]
    output: PathBuf,
    /// Paths to leave out, in .gitignore format (comma separated).
    #[arg(long, value_delimiter = ',')]
    ignore_paths: Vec<String>,
}

/// `diff artifact`'s flags.
#[derive(Args, Debug)]
pub struct DiffArtifactArgs {
    /// oci://HOST/REPO:TAG
    url: String,
    /// The local directory to compare with the artifact's content.
    #[arg(long)]
    path: PathBuf,
    /// Paths to leave out, in .gitignore format (comma separated).
    #[arg(long, value_delimiter = ',')]
    ignore_paths: Vec<String>,
    #[command(flatten)]
    registry: RegistryArgs,
}

fn parse_url(url: &str) -> anyhow::Result<Reference> {
    if !url.starts_with("oci://") {
        bail!("invalid URL {url:?}: it must start with oci://");
    }
    Ok(Reference::parse(url)?)
}

/// The exclusion rules of a local tree: `.git` always, `.sourceignore` files, `--ignore-paths`.
fn local_rules(path: &Path, ignore_paths: &[String]) -> anyhow::Result<Rules> {
    let mut extra: Vec<String> = VCS_EXCLUDES.iter().map(|s| s.to_string()).collect();
    extra.extend(ignore_paths.iter().cloned());
    let root = if path.is_dir() {
        path
    } else {
        path.parent().unwrap_or(Path::new("."))
    };
    Ok(Rules::load_dir(root, &extra)?)
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> anyhow::Result<T> + Send + 'static,
) -> anyhow::Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| anyhow!("the registry task failed: {e}"))?
}

/// `push artifact`.
pub async fn push(args: PushArgs) -> anyhow::Result<ExitCode> {
    let PushWhat::Artifact(a) = args.what;
    let r = parse_url(&a.url)?;
    if r.tag.is_none() || r.digest.is_some() {
        bail!(
            "invalid URL {:?}: push needs a tag (oci://HOST/REPO:TAG)",
            a.url
        );
    }
    let json = match a.output.as_deref() {
        None => false,
        Some("json") => true,
        Some(o) => bail!("unsupported output format {o:?} (json)"),
    };
    let mut annotations = BTreeMap::new();
    for kv in &a.annotations {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| anyhow!("invalid annotation {kv:?}: expected key=value"))?;
        annotations.insert(k.to_string(), v.to_string());
    }
    let meta = Metadata {
        source: Some(a.source.clone()),
        revision: Some(a.revision.clone()),
        created: a.reproducible.then(|| "1970-01-01T00:00:00Z".to_string()),
        annotations,
    };
    if !a.path.exists() {
        bail!(
            "invalid path {}: no such file or directory",
            a.path.display()
        );
    }
    if !json {
        progress::action(format_args!("pushing artifact to {r}"));
    }
    let client = a.registry.client(&r)?;
    let rules = local_rules(&a.path, &a.ignore_paths)?;
    let (path, rr) = (a.path.clone(), r.clone());
    let pushed = blocking(move || {
        let exclude = |p: &Path, is_dir: bool| rules.excluded_path(p, is_dir);
        Ok(artifact::push(&client, &rr, &path, &meta, &exclude)?)
    })
    .await?;
    let at = format!("{}/{}@{}", r.registry, r.repository, pushed.digest);
    if json {
        let out = serde_json::json!({
            "repository": format!("{}/{}", r.registry, r.repository),
            "tag": r.tag,
            "digest": pushed.digest,
            "url": format!("oci://{r}"),
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        progress::success(format_args!("artifact successfully pushed to {at}"));
    }
    Ok(ExitCode::SUCCESS)
}

/// `pull artifact`.
pub async fn pull(args: PullArgs) -> anyhow::Result<ExitCode> {
    let PullWhat::Artifact(a) = args.what;
    let r = parse_url(&a.url)?;
    progress::action(format_args!("pulling artifact from {r}"));
    let client = a.registry.client(&r)?;
    let (rr, out) = (r.clone(), a.output.clone());
    let pulled = blocking(move || {
        Ok(artifact::pull(
            &client,
            &rr,
            None,
            &out,
            DEFAULT_MAX_LAYER_SIZE,
            DEFAULT_MAX_EXTRACT_SIZE,
        )?)
    })
    .await?;
    if let Some(s) = &pulled.metadata.source {
        progress::success(format_args!("source {s}"));
    }
    if let Some(rev) = &pulled.metadata.revision {
        progress::success(format_args!("revision {rev}"));
    }
    progress::success(format_args!(
        "digest {}/{}@{}",
        r.registry, r.repository, pulled.resolved.digest
    ));
    progress::success(format_args!(
        "artifact content extracted to {}",
        a.output.display()
    ));
    Ok(ExitCode::SUCCESS)
}

/// `tag artifact`.
pub async fn tag(args: TagArgs) -> anyhow::Result<ExitCode> {
    let TagWhat::Artifact(a) = args.what;
    let r = parse_url(&a.url)?;
    for t in &a.tags {
        if !ferroflux_oci::valid_tag(t) {
            bail!("invalid tag {t:?}");
        }
    }
    progress::action("tagging artifact");
    let client = a.registry.client(&r)?;
    for t in a.tags {
        let (c, rr, tt) = (client.clone(), r.clone(), t.clone());
        blocking(move || Ok(c.tag(&rr, &tt)?)).await?;
        progress::success(format_args!("artifact tagged as {}", r.with_tag(&t)));
    }
    Ok(ExitCode::SUCCESS)
}

/// `list artifacts`: one row per tag (semver-filtered tags highest first, others by name).
pub async fn list(args: ListArgs) -> anyhow::Result<ExitCode> {
    let ListWhat::Artifacts(a) = args.what;
    let r = parse_url(&a.url)?;
    if r.tag.is_some() || r.digest.is_some() {
        bail!(
            "invalid URL {:?}: list takes a repository without tag",
            a.url
        );
    }
    if let Some(re) = &a.filter_regex {
        // Checked before any request, so a bad expression fails first.
        ferroflux_oci::tags::filter_regex(Vec::new(), re)
            .map_err(|e| anyhow!("invalid --filter-regex: {e}"))?;
    }
    let regex = a.filter_regex.clone();
    let range = match &a.filter_semver {
        Some(s) => Some(
            ferroflux_semver::Range::parse(s)
                .map_err(|e| anyhow!("invalid --filter-semver {s:?}: {e}"))?,
        ),
        None => None,
    };
    let client = a.registry.client(&r)?;
    let rr = r.clone();
    let rows = blocking(move || {
        let mut tags = client.list_tags(&rr.repository)?;
        if let Some(re) = &regex {
            tags = ferroflux_oci::tags::filter_regex(tags, re)?;
        }
        if let Some(range) = &range {
            let refs: Vec<&str> = tags.iter().map(String::as_str).collect();
            tags = ferroflux_oci::tags::sort_semver_desc(&refs)
                .into_iter()
                .filter(|t| {
                    ferroflux_semver::Version::parse_tag(t).is_ok_and(|v| range.matches(&v))
                })
                .collect();
        } else {
            tags.sort();
        }
        let mut rows = Vec::new();
        for t in tags {
            let tr = rr.with_tag(&t);
            let resolved = artifact::resolve(&client, &tr)?;
            let m = Metadata::from_annotations(&resolved.manifest.annotations);
            rows.push(vec![
                tr.to_string(),
                resolved.digest,
                m.source.unwrap_or_default(),
                m.revision.unwrap_or_default(),
            ]);
        }
        Ok(rows)
    })
    .await?;
    print!(
        "{}",
        flux_table(&["ARTIFACT", "DIGEST", "SOURCE", "REVISION"], &rows)
    );
    Ok(ExitCode::SUCCESS)
}

/// `build artifact`: the tar.gz `push artifact` would upload, written to a file.
pub async fn build(a: BuildArtifactArgs) -> anyhow::Result<ExitCode> {
    if !a.path.exists() {
        bail!(
            "invalid path {}: no such file or directory",
            a.path.display()
        );
    }
    progress::action(format_args!("building artifact from {}", a.path.display()));
    let rules = local_rules(&a.path, &a.ignore_paths)?;
    let (path, output) = (a.path.clone(), a.output.clone());
    blocking(move || {
        let exclude = |p: &Path, is_dir: bool| rules.excluded_path(p, is_dir);
        let file = std::fs::File::create(&output)
            .with_context(|| format!("creating {}", output.display()))?;
        artifact::pack_dir(&path, &exclude, std::io::BufWriter::new(file))?;
        Ok(())
    })
    .await?;
    progress::success(format_args!("artifact created at {}", a.output.display()));
    Ok(ExitCode::SUCCESS)
}

/// `diff artifact`: compares the artifact's files with the local tree's; exit 0 when equal,
/// 1 with the differing paths listed, 2 on error (flux's contract for `diff`).
pub async fn diff(a: DiffArtifactArgs) -> anyhow::Result<ExitCode> {
    let r = parse_url(&a.url)?;
    if !a.path.exists() {
        bail!(
            "invalid path {}: no such file or directory",
            a.path.display()
        );
    }
    let client = a.registry.client(&r)?;
    let rules = local_rules(&a.path, &a.ignore_paths)?;
    let (rr, path) = (r.clone(), a.path.clone());
    let changes = blocking(move || {
        let remote = tempfile::tempdir()?;
        artifact::pull(
            &client,
            &rr,
            None,
            remote.path(),
            DEFAULT_MAX_LAYER_SIZE,
            DEFAULT_MAX_EXTRACT_SIZE,
        )?;
        let local = tempfile::tempdir()?;
        // Packing then extracting the local tree applies the same rules push does.
        let exclude = |p: &Path, is_dir: bool| rules.excluded_path(p, is_dir);
        let mut tgz = Vec::new();
        artifact::pack_dir(&path, &exclude, &mut tgz)?;
        ferroflux_oci::extract::extract_tar_gz(tgz.as_slice(), local.path(), u64::MAX)?;
        compare_trees(remote.path(), local.path())
    })
    .await?;
    if changes.is_empty() {
        progress::success("no changes detected");
        return Ok(ExitCode::SUCCESS);
    }
    for c in &changes {
        println!("{c}");
    }
    progress::failure(format_args!(
        "the remote artifact contents differs from the local one ({} paths)",
        changes.len()
    ));
    Ok(ExitCode::from(exit::DIFF_CHANGES))
}

/// `+ path` (only local), `- path` (only in the artifact), `~ path` (content differs).
fn compare_trees(remote: &Path, local: &Path) -> anyhow::Result<Vec<String>> {
    fn files(root: &Path, dir: &Path, out: &mut BTreeMap<String, PathBuf>) -> anyhow::Result<()> {
        for e in std::fs::read_dir(dir)? {
            let p = e?.path();
            let meta = std::fs::symlink_metadata(&p)?;
            if meta.is_dir() {
                files(root, &p, out)?;
            } else {
                let rel = p.strip_prefix(root)?.to_string_lossy().into_owned();
                out.insert(rel, p);
            }
        }
        Ok(())
    }
    let (mut r, mut l) = (BTreeMap::new(), BTreeMap::new());
    files(remote, remote, &mut r)?;
    files(local, local, &mut l)?;
    let mut out = Vec::new();
    for (k, p) in &l {
        match r.get(k) {
            None => out.push(format!("+ {k}")),
            Some(rp) if std::fs::read(rp)? != std::fs::read(p)? => out.push(format!("~ {k}")),
            Some(_) => {}
        }
    }
    for k in r.keys() {
        if !l.contains_key(k) {
            out.push(format!("- {k}"));
        }
    }
    out.sort_by(|a, b| a[2..].cmp(&b[2..]));
    Ok(out)
}
