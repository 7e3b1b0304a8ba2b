//! `ferroflux kustomize build DIR`: the native kustomize build, printed like `kubectl kustomize`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use tempfile::TempDir;

#[derive(Args)]
pub struct KustomizeArgs {
    #[command(subcommand)]
    command: KustomizeCommand,
}

#[derive(Subcommand)]
enum KustomizeCommand {
    /// Build a kustomization directory and print the YAML stream (same objects, order and
    /// formatting as `kubectl kustomize DIR`).
    Build {
        /// Directory holding kustomization.yaml.
        #[arg(default_value = ".")]
        dir: PathBuf,
        /// Repository root: nothing outside it is read (default: the Git work tree holding DIR,
        /// else the current directory if it contains DIR, else DIR itself).
        #[arg(long)]
        root: Option<PathBuf>,
        /// kubectl's flag: `LoadRestrictionsRootOnly` reads files only inside the directory of
        /// the kustomization naming them; `LoadRestrictionsNone` (how Flux builds) anywhere
        /// inside the repository root.
        #[arg(long, value_enum, default_value_t = LoadRestrictor::LoadRestrictionsRootOnly)]
        load_restrictor: LoadRestrictor,
    },
    /// Time `kustomize build` of generated trees, ours against `kubectl kustomize`, and check
    /// the outputs are identical. Prints a Markdown table.
    Bench(BenchArgs),
}

/// The values of kubectl's `--load-restrictor`, spelled as kubectl spells them.
#[derive(Clone, Copy, clap::ValueEnum)]
#[clap(rename_all = "verbatim")]
enum LoadRestrictor {
    LoadRestrictionsRootOnly,
    LoadRestrictionsNone,
}

pub fn run(args: KustomizeArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        KustomizeCommand::Build {
            dir,
            root,
            load_restrictor,
        } => build(&dir, root.as_deref(), load_restrictor)?,
        KustomizeCommand::Bench(args) => bench(args)?,
    }
    Ok(ExitCode::SUCCESS)
}

fn build(dir: &Path, root: Option<&Path>, restrictor: LoadRestrictor) -> anyhow::Result<()> {
    let dir_abs = dir
        .canonicalize()
        .with_context(|| format!("{}: cannot open directory", dir.display()))?;
    let root = match root {
        Some(r) => r
            .canonicalize()
            .with_context(|| format!("{}: cannot open repository root", r.display()))?,
        None => {
            let cwd = std::env::current_dir()?.canonicalize()?;
            let git_root = dir_abs
                .ancestors()
                .find(|a| a.join(".git").exists())
                .map(Path::to_path_buf);
            match git_root {
                Some(g) => g,
                None if dir_abs.starts_with(&cwd) => cwd,
                None => dir_abs.clone(),
            }
        }
    };
    let restrictions = match restrictor {
        LoadRestrictor::LoadRestrictionsRootOnly => ferroflux_kustomize::LoadRestrictions::RootOnly,
        LoadRestrictor::LoadRestrictionsNone => ferroflux_kustomize::LoadRestrictions::None,
    };
    let build = ferroflux_kustomize::Build::new(&root)?.with_load_restrictions(restrictions);
    let out = build.build_with_warnings(&dir_abs)?;
    for w in &out.warnings {
        eprintln!("{w}");
    }
    let text = ferroflux_kustomize::render_yaml(&out.objects);
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()?;
    Ok(())
}

/// Options of `ferroflux kustomize bench`.
#[derive(Args)]
pub struct BenchArgs {
    /// Leaf counts to generate (each leaf: base of 30 ConfigMaps, a Deployment and a Service;
    /// overlay with namePrefix, labels, a configMapGenerator, 5 strategic-merge and 5 JSON 6902
    /// patches and an image override; groups of 50 leaves; a root with a namespace).
    #[arg(long, value_delimiter = ',', default_value = "25,50,100")]
    leaves: Vec<usize>,
    /// Skip kubectl (only time ferroflux).
    #[arg(long)]
    no_kubectl: bool,
    /// Runs of ferroflux per size (the median is reported).
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Keep the generated trees in this directory instead of a temporary one.
    #[arg(long)]
    keep: Option<PathBuf>,
}

struct Run {
    wall: std::time::Duration,
    max_rss_kib: i64,
    stdout: Vec<u8>,
}

/// Runs a command, measuring its wall time and peak RSS (from wait4's rusage).
fn measure(cmd: &mut std::process::Command) -> anyhow::Result<Run> {
    use std::io::Read;
    let start = std::time::Instant::now();
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .context("spawn")?;
    let mut stdout = Vec::new();
    if let Some(mut out) = child.stdout.take() {
        out.read_to_end(&mut stdout)?;
    }
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain data; wait4 writes it for the child we spawned and still own.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let wall = start.elapsed();
    anyhow::ensure!(r == pid, "wait4 failed");
    anyhow::ensure!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{:?} failed",
        cmd
    );
    Ok(Run {
        wall,
        max_rss_kib: usage.ru_maxrss,
        stdout,
    })
}

fn write_file(path: &Path, content: &str) -> anyhow::Result<()> {
    if let Some(p) = path.parent() {
        std::fs::create_dir_all(p)?;
    }
    std::fs::write(path, content).with_context(|| format!("write {}", path.display()))
}

/// Writes the benchmark tree for `n` leaves under `root` and returns the number of objects the
/// build produces.
fn generate_tree(root: &Path, n: usize) -> anyhow::Result<usize> {
    let groups = n.div_ceil(50);
    let mut root_k = String::from("namespace: bench\nresources:\n");
    for g in 0..groups {
        root_k.push_str(&format!("- group-{g}\n"));
        let mut group_k = String::from("resources:\n");
        for l in (g * 50)..((g + 1) * 50).min(n) {
            group_k.push_str(&format!("- leaf-{l}/overlay\n"));
            let leaf = root.join(format!("group-{g}/leaf-{l}"));
            let mut cms = String::new();
            for c in 0..30 {
                cms.push_str(&format!(
                    "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{c}\n  labels:\n    app: app-{l}\ndata:\n  key: value-{c}\n  other: \"{c}\"\n"
                ));
            }
            write_file(&leaf.join("base/configmaps.yaml"), &cms)?;
            write_file(
                &leaf.join("base/deployment.yaml"),
                &format!(
                    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  replicas: 1\n  selector:\n    matchLabels:\n      app: app-{l}\n  template:\n    metadata:\n      labels:\n        app: app-{l}\n    spec:\n      containers:\n      - name: app\n        image: registry.example.com/app:1.0.0\n        envFrom:\n        - configMapRef:\n            name: cm-0\n        env:\n        - name: A\n          value: \"1\"\n        ports:\n        - containerPort: 8080\n      volumes:\n      - name: config\n        configMap:\n          name: cm-1\n"
                ),
            )?;
            write_file(
                &leaf.join("base/service.yaml"),
                &format!(
                    "apiVersion: v1\nkind: Service\nmetadata:\n  name: app\nspec:\n  selector:\n    app: app-{l}\n  ports:\n  - port: 80\n    targetPort: 8080\n"
                ),
            )?;
            write_file(
                &leaf.join("base/kustomization.yaml"),
                "resources:\n- configmaps.yaml\n- deployment.yaml\n- service.yaml\n",
            )?;
            let mut ov = format!(
                "resources:\n- ../base\nnamePrefix: leaf-{l}-\nlabels:\n- pairs:\n    leaf: \"{l}\"\n  includeSelectors: false\nconfigMapGenerator:\n- name: generated\n  literals:\n  - LEAF={l}\n  - MODE=bench\nimages:\n- name: registry.example.com/app\n  newTag: 2.0.0\npatches:\n"
            );
            let smp = [
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  replicas: 3\n",
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  template:\n    spec:\n      containers:\n      - name: app\n        env:\n        - name: B\n          value: \"2\"\n",
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  template:\n    spec:\n      containers:\n      - name: app\n        resources:\n          limits:\n            memory: 128Mi\n",
                "apiVersion: v1\nkind: Service\nmetadata:\n  name: app\n  annotations:\n    patched: \"true\"\n",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-2\ndata:\n  patched: \"yes\"\n",
            ];
            for (i, p) in smp.iter().enumerate() {
                write_file(&leaf.join(format!("overlay/smp-{i}.yaml")), p)?;
                ov.push_str(&format!("- path: smp-{i}.yaml\n"));
            }
            for i in 0..5 {
                ov.push_str(&format!(
                    "- target:\n    kind: ConfigMap\n    name: cm-{}\n  patch: |-\n    - op: add\n      path: /data/json{i}\n      value: \"{i}\"\n",
                    i + 3
                ));
            }
            write_file(&leaf.join("overlay/kustomization.yaml"), &ov)?;
        }
        write_file(
            &root.join(format!("group-{g}/kustomization.yaml")),
            &group_k,
        )?;
    }
    write_file(&root.join("kustomization.yaml"), &root_k)?;
    Ok(n * 33)
}

fn median(mut v: Vec<std::time::Duration>) -> std::time::Duration {
    v.sort();
    v[v.len() / 2]
}

/// Least-squares slope of ln(time) against ln(objects).
fn growth_exponent(points: &[(f64, f64)]) -> Option<f64> {
    if points.len() < 2 {
        return None;
    }
    let xs: Vec<f64> = points.iter().map(|p| p.0.ln()).collect();
    let ys: Vec<f64> = points.iter().map(|p| p.1.ln()).collect();
    let n = xs.len() as f64;
    let mx = xs.iter().sum::<f64>() / n;
    let my = ys.iter().sum::<f64>() / n;
    let cov: f64 = xs.iter().zip(&ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let var: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
    if var == 0.0 { None } else { Some(cov / var) }
}

pub fn bench(args: BenchArgs) -> anyhow::Result<()> {
    let tmp;
    let base = match &args.keep {
        Some(p) => {
            std::fs::create_dir_all(p)?;
            p.clone()
        }
        None => {
            tmp = TempDir::new()?;
            tmp.path().to_path_buf()
        }
    };
    let exe = std::env::current_exe()?;
    let runs = args.runs.max(1);
    println!(
        "| leaves | objects | ferroflux wall (median of {runs}) | ferroflux peak RSS | kubectl kustomize wall | kubectl peak RSS | speed-up | identical |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|:---:|");
    let mut ours_points = Vec::new();
    let mut theirs_points = Vec::new();
    // The smallest case of the issue: one Deployment overlay with one patch.
    let small = base.join("one-deployment");
    write_file(
        &small.join("base/kustomization.yaml"),
        "resources:\n- deployment.yaml\n",
    )?;
    write_file(
        &small.join("base/deployment.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  selector:\n    matchLabels:\n      app: app\n  template:\n    metadata:\n      labels:\n        app: app\n    spec:\n      containers:\n      - name: app\n        image: app:1\n",
    )?;
    write_file(
        &small.join("overlay/kustomization.yaml"),
        "resources:\n- ../base\npatches:\n- patch: |-\n    apiVersion: apps/v1\n    kind: Deployment\n    metadata:\n      name: app\n    spec:\n      replicas: 2\n",
    )?;
    let mut small_runs = Vec::new();
    let mut small_out = Vec::new();
    for _ in 0..(runs * 4) {
        let r = measure(
            std::process::Command::new(&exe)
                .args(["kustomize", "build"])
                .arg(small.join("overlay")),
        )?;
        small_runs.push(r.wall);
        small_out = r.stdout;
    }
    let small_ours = median(small_runs);
    let small_kubectl = if args.no_kubectl {
        None
    } else {
        let r = measure(
            std::process::Command::new("kubectl")
                .arg("kustomize")
                .arg(small.join("overlay")),
        )?;
        Some((r.wall, r.stdout == small_out))
    };
    for &n in &args.leaves {
        let dir = base.join(format!("tree-{n}"));
        let _ = std::fs::remove_dir_all(&dir);
        let objects = generate_tree(&dir, n)?;
        let mut walls = Vec::new();
        let mut rss = 0;
        let mut out = Vec::new();
        for _ in 0..runs {
            let r = measure(
                std::process::Command::new(&exe)
                    .args(["kustomize", "build"])
                    .arg(&dir),
            )?;
            walls.push(r.wall);
            rss = rss.max(r.max_rss_kib);
            out = r.stdout;
        }
        let ours = median(walls);
        ours_points.push((objects as f64, ours.as_secs_f64()));
        let theirs = if args.no_kubectl {
            None
        } else {
            let r = measure(
                std::process::Command::new("kubectl")
                    .arg("kustomize")
                    .arg(&dir),
            )?;
            theirs_points.push((objects as f64, r.wall.as_secs_f64()));
            Some((r.wall, r.max_rss_kib, r.stdout == out))
        };
        match theirs {
            Some((tw, trss, same)) => println!(
                "| {n} | {objects} | {:.1} ms | {:.1} MiB | {:.2} s | {:.1} MiB | {:.0}x | {} |",
                ours.as_secs_f64() * 1e3,
                rss as f64 / 1024.0,
                tw.as_secs_f64(),
                trss as f64 / 1024.0,
                tw.as_secs_f64() / ours.as_secs_f64(),
                if same { "yes" } else { "NO" }
            ),
            None => println!(
                "| {n} | {objects} | {:.1} ms | {:.1} MiB | - | - | - | - |",
                ours.as_secs_f64() * 1e3,
                rss as f64 / 1024.0
            ),
        }
    }
    if let Some(e) = growth_exponent(&ours_points) {
        println!("\nferroflux growth exponent (time ~ objects^k): k = {e:.2}");
    }
    if let Some(e) = growth_exponent(&theirs_points) {
        println!("kubectl kustomize growth exponent: k = {e:.2}");
    }
    print!(
        "one-Deployment overlay with one patch: ferroflux {:.1} ms (median of {}, including process start)",
        small_ours.as_secs_f64() * 1e3,
        runs * 4
    );
    match small_kubectl {
        Some((w, same)) => println!(
            ", kubectl kustomize {:.0} ms, identical: {}",
            w.as_secs_f64() * 1e3,
            if same { "yes" } else { "NO" }
        ),
        None => println!(),
    }
    Ok(())
}
