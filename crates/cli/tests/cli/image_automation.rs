//! Image automation end to end: a registry (Debian's docker-registry) with podinfo's tags, the
//! image reflector and the ImageUpdateAutomation controller in this process on a devcluster, and
//! a fleet repository behind `git http-backend` with basic auth (the GitRepository's secret).
//! The automation rewrites the marked fields (a Deployment's whole image, a HelmRelease's
//! `:name` and `:tag`), commits with the author and rendered message template, and pushes; the
//! test reads the result back with the `git` program on the server's repository, then has a
//! newer tag pushed to the registry and sees a second commit on top of the first. Then the CLI:
//! `create image update` (another push branch, an SSH-signed commit that `git verify-commit`
//! accepts) waits for the automation, and `reconcile image update` asks for a pass; last, a
//! `push.refspec` sends the commit to a second ref as well.
//!
//! Bad input, each with the message a user reads in the Ready condition and nothing pushed: a
//! template using the removed `.Updated` field (Stalled), a GitRepository that does not exist, and a push branch that cannot be inferred.

use crate::image_reflector::push;
use crate::run::{ferroflux, runtime, stderr};
use ferroflux_api::ImageUpdateAutomation;
use ferroflux_testkit::{
    Auth, GitHttpServer, Kubectl, Registry, RegistryOptions, eventually, flux_cluster, git,
    kubeconfig,
};
use kube::api::Api;
use std::process::Command;

const NS: &str = "images";
const PASSWORD: &str = "automation-pa55";

/// The fleet repository: `<root>/fleet.git`, served, and a work tree that made it.
fn fleet(host: &str) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    git(
        root.path(),
        &["init", "--bare", "-q", "-b", "main", "fleet.git"],
    );
    git(root.path(), &["init", "-q", "-b", "main", "work"]);
    let work = root.path().join("work");
    let write = |rel: &str, text: String| {
        let p = work.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write(
        "apps/podinfo/deployment.yaml",
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: podinfo\n  namespace: apps\nspec:\n  template:\n    spec:\n      containers:\n        - name: podinfo\n          # the line below is kept up to date by Flux\n          image: {host}/stefanprodan/podinfo:5.0.0 # {{\"$imagepolicy\": \"{NS}:podinfo\"}}\n"
        ),
    );
    write(
        "apps/podinfo/release.yaml",
        format!(
            "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: podinfo\n  namespace: apps\nspec:\n  values:\n    image:\n      repository: example.org/old # {{\"$imagepolicy\": \"{NS}:podinfo:name\"}}\n      tag: 5.0.0 # {{\"$imagepolicy\": \"{NS}:podinfo:tag\"}}\n"
        ),
    );
    write(
        "apps/untouched.yaml",
        "kind: ConfigMap\n# {\"$imagepolicy\": \"x:y\"}\n".into(),
    );
    write(
        "infrastructure/other.yaml",
        format!(
            "image: {host}/stefanprodan/podinfo:5.0.0 # {{\"$imagepolicy\": \"{NS}:podinfo\"}}\n"
        ),
    );
    git(&work, &["add", "-A"]);
    git(&work, &["commit", "-q", "-m", "fleet"]);
    git(&work, &["push", "-q", "../fleet.git", "main"]);
    root
}

fn bare(root: &tempfile::TempDir, args: &[&str]) -> String {
    git(&root.path().join("fleet.git"), args)
}

const TEMPLATE: &str = r#"Automated image update

Automation name: {{ .AutomationObject }}

Files:
{{ range $filename, $_ := .Changed.FileChanges -}}
- {{ $filename }}
{{ end -}}

Objects:
{{ range $resource, $changes := .Changed.Objects -}}
- {{ $resource.Kind }} {{ $resource.Name }}
  Changes:
{{- range $_, $change := $changes }}
    - {{ $change.OldValue }} -> {{ $change.NewValue }}
{{ end -}}
{{ end -}}
cluster: {{ .Values.cluster }}"#;

fn automation(name: &str, source: &str, extra_git: &str, template: &str, path: &str) -> String {
    let template = template
        .lines()
        .map(|l| format!("        {l}"))
        .collect::<Vec<_>>()
        .join("\n");
    format!(
        r#"apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageUpdateAutomation
metadata:
  name: {name}
  namespace: {NS}
spec:
  interval: 10m
  sourceRef:
{source}
  git:{extra_git}
    commit:
      author:
        name: fluxcdbot
        email: fluxcdbot@users.noreply.github.com
      messageTemplate: |-
{template}
      messageTemplateValues:
        cluster: staging
  update:
    path: {path}
"#
    )
}

fn ready(obj: &ImageUpdateAutomation) -> Option<(String, String, String)> {
    let c = obj
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")?;
    Some((c.status.clone(), c.reason.clone(), c.message.clone()))
}

#[test]
fn automation_commits_and_pushes_the_latest_images() {
    let reg = Registry::start(RegistryOptions::default());
    let host = reg.host();
    for tag in ["5.0.0", "5.0.3", "6.0.0"] {
        push(&host, tag);
    }
    let root = fleet(&host);
    let server = GitHttpServer::start(
        root.path(),
        Auth::Basic("flux".into(), PASSWORD.into()),
        None,
    );
    let before = bare(&root, &["rev-parse", "main"]);

    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (cl, c) = rt.block_on(flux_cluster("image-automation"));
    let kc = kubeconfig(dir.path(), &[&cl]);
    let kubectl = Kubectl::at(&kc);
    kubectl.ok(&["create", "namespace", NS], "");
    let images = ferroflux_controller::imagerepository::Options::default();
    let metrics = std::sync::Arc::new(ferroflux_controller::Metrics::new());
    let (_, repos) = ferroflux_controller::imagerepository::controller(
        c.clone(),
        images.clone(),
        2,
        metrics.clone(),
        Box::pin(std::future::pending()),
    );
    let (_, policies) = ferroflux_controller::imagepolicy::controller(
        c.clone(),
        images,
        2,
        metrics.clone(),
        Box::pin(std::future::pending()),
    );
    let (_, automations) = ferroflux_controller::imageupdateautomation::controller(
        c.clone(),
        ferroflux_controller::imageupdateautomation::Options::default(),
        2,
        metrics,
        Box::pin(std::future::pending()),
    );
    rt.spawn(repos);
    rt.spawn(policies);
    rt.spawn(automations);

    let url = server.url("fleet");
    kubectl.ok(
        &["apply", "-f", "-"],
        &format!(
            r#"apiVersion: v1
kind: Secret
metadata:
  name: fleet-auth
  namespace: {NS}
stringData:
  username: flux
  password: {PASSWORD}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: fleet
  namespace: {NS}
spec:
  interval: 10m
  url: {url}
  ref:
    branch: main
  secretRef:
    name: fleet-auth
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImageRepository
metadata:
  name: podinfo
  namespace: {NS}
spec:
  image: {host}/stefanprodan/podinfo
  interval: 10m
---
apiVersion: image.toolkit.fluxcd.io/v1
kind: ImagePolicy
metadata:
  name: podinfo
  namespace: {NS}
spec:
  imageRepositoryRef:
    name: podinfo
  policy:
    semver:
      range: 5.0.x
"#
        ),
    );
    let source = "    kind: GitRepository\n    name: fleet";
    kubectl.ok(
        &["apply", "-f", "-"],
        &automation("podinfo", source, "", TEMPLATE, "./apps"),
    );
    let api: Api<ImageUpdateAutomation> = Api::namespaced(c.clone(), NS);
    let first = rt.block_on(eventually("the first push", || async {
        let obj = api.get("podinfo").await.ok()?;
        obj.status?.last_push_commit
    }));
    assert_eq!(bare(&root, &["rev-parse", "main"]), first);
    bare(&root, &["fsck", "--strict"]);
    assert_eq!(bare(&root, &["rev-parse", "main~1"]), before);
    assert_eq!(
        bare(&root, &["log", "-1", "--format=%an <%ae>", "main"]),
        "fluxcdbot <fluxcdbot@users.noreply.github.com>"
    );
    let message = bare(&root, &["log", "-1", "--format=%B", "main"]);
    let image = format!("{host}/stefanprodan/podinfo");
    assert_eq!(
        message,
        format!(
            // Go's trim markers as Flux's documented template has them: no blank line before
            // "Objects:", one between two changes of an object.
            "Automated image update\n\nAutomation name: {NS}/podinfo\n\nFiles:\n- podinfo/deployment.yaml\n- podinfo/release.yaml\nObjects:\n- Deployment podinfo\n  Changes:\n    - {image}:5.0.0 -> {image}:5.0.3\n- HelmRelease podinfo\n  Changes:\n    - example.org/old -> {image}\n\n    - 5.0.0 -> 5.0.3\ncluster: staging"
        )
    );
    // Only the marked values changed; the file outside `update.path` is left alone.
    assert_eq!(
        bare(&root, &["diff", "--name-only", "main~1", "main"]),
        "apps/podinfo/deployment.yaml\napps/podinfo/release.yaml"
    );
    assert_eq!(
        bare(&root, &["show", "main:apps/podinfo/deployment.yaml"]),
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: podinfo\n  namespace: apps\nspec:\n  template:\n    spec:\n      containers:\n        - name: podinfo\n          # the line below is kept up to date by Flux\n          image: {image}:5.0.3 # {{\"$imagepolicy\": \"{NS}:podinfo\"}}"
        )
    );
    let obj = rt.block_on(api.get("podinfo")).unwrap();
    assert_eq!(
        ready(&obj).unwrap(),
        (
            "True".into(),
            "Succeeded".into(),
            "repository up-to-date".into()
        )
    );
    let status = obj.status.unwrap();
    assert_eq!(
        status.observed_source_revision.as_deref(),
        Some(format!("main@sha1:{first}").as_str())
    );
    let observed = status.observed_policies.unwrap();
    assert_eq!(observed["podinfo"].tag, "5.0.3");

    // `get image update` shows it.
    let out = ferroflux(&kc, &["get", "image", "update", "-n", NS]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = crate::run::stdout(&out);
    assert!(
        text.contains("podinfo") && text.contains("repository up-to-date"),
        "{text}"
    );

    // A newer tag: the policy moves to it, and the automation commits on top.
    push(&host, "5.0.4");
    kubectl.ok(
        &[
            "annotate",
            "--overwrite",
            "-n",
            NS,
            "imagerepository/podinfo",
            "reconcile.fluxcd.io/requestedAt=second",
        ],
        "",
    );
    let second = rt.block_on(eventually("the second push", || async {
        let obj = api.get("podinfo").await.ok()?;
        obj.status?.last_push_commit.filter(|c| *c != first)
    }));
    assert_eq!(bare(&root, &["rev-parse", "main~1"]), first);
    assert_eq!(bare(&root, &["rev-parse", "main"]), second);
    assert!(bare(&root, &["show", "main:apps/podinfo/release.yaml"]).contains("tag: 5.0.4 # "));

    // Bad input: nothing more is pushed, and the Ready condition says why.
    let removed = automation(
        "removed-field",
        source,
        "",
        "{{ range .Updated.Images }}{{ . }}{{ end }}",
        "infrastructure",
    );
    let missing = automation(
        "missing",
        "    kind: GitRepository\n    name: nowhere",
        "",
        "x",
        ".",
    );
    let tag_checkout = automation(
        "tag-checkout",
        source,
        "\n    checkout:\n      ref:\n        tag: v1.0.0",
        "x",
        ".",
    );
    kubectl.ok(
        &["apply", "-f", "-"],
        &[removed, missing, tag_checkout].join("---\n"),
    );
    let cases = [
        (
            "removed-field",
            "RemovedTemplateField",
            "template uses removed '.Updated' field. Please use '.Changed' instead. See: https://fluxcd.io/flux/components/image/imageupdateautomations/#message-template",
        ),
        (
            "missing",
            "SourceManagerFailed",
            "failed configuring source manager: referenced git repository does not exist: gitrepositories.source.toolkit.fluxcd.io \"nowhere\" not found",
        ),
        (
            "tag-checkout",
            "SourceManagerFailed",
            "failed configuring source manager: push spec not provided, and cannot be inferred from .spec.git.checkout.ref or GitRepository .spec.ref",
        ),
    ];
    for (name, reason, message) in cases {
        let got = rt.block_on(eventually(name, || async {
            let obj = api.get(name).await.ok()?;
            ready(&obj).filter(|r| r.0 == "False")
        }));
        assert_eq!(
            got,
            ("False".into(), reason.into(), message.into()),
            "{name}"
        );
    }
    // The removed-field automation had a change to commit (infrastructure/ is stale): it was
    // never pushed.
    assert_eq!(bare(&root, &["rev-parse", "main"]), second);
    kubectl.ok(
        &["delete", "imageupdateautomation", "removed-field", "-n", NS],
        "",
    );

    // `create image update` as flux writes it, pushing to another branch with an SSH-signed
    // commit, waits until the automation is ready; the branch holds a commit on top of main's
    // head that `git verify-commit` accepts with the key's public half.
    let keys = tempfile::tempdir().unwrap();
    let (private, public) = ferroflux_testkit::keygen(&keys.path().join("signing"), "");
    kubectl.ok(
        &[
            "create",
            "secret",
            "generic",
            "signing",
            "-n",
            NS,
            &format!("--from-literal=identity={private}"),
        ],
        "",
    );
    let out = ferroflux(
        &kc,
        &[
            "create",
            "image",
            "update",
            "infra",
            "--git-repo-ref=fleet",
            "--git-repo-path=./infrastructure",
            "--checkout-branch=main",
            "--push-branch=auto",
            "--author-name=bot",
            "--author-email=bot@example.com",
            "--signing-key-secret=signing",
            "--signing-key-type=ssh",
            "-n",
            NS,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "✚ generating ImageUpdateAutomation\n► applying ImageUpdateAutomation\n\
         ✔ ImageUpdateAutomation created\n◎ waiting for ImageUpdateAutomation reconciliation\n\
         ✔ ImageUpdateAutomation reconciliation completed\n"
    );
    assert_eq!(bare(&root, &["rev-parse", "main"]), second);
    assert_eq!(bare(&root, &["rev-parse", "auto~1"]), second);
    assert_eq!(
        bare(&root, &["diff", "--name-only", "main", "auto"]),
        "infrastructure/other.yaml"
    );
    assert_eq!(
        bare(&root, &["log", "-1", "--format=%B", "auto"]),
        "Update from image update automation"
    );
    let allowed = keys.path().join("allowed_signers");
    std::fs::write(&allowed, format!("bot@example.com {public}")).unwrap();
    let verified = Command::new("git")
        .args(["-c", "gpg.format=ssh"])
        .arg("-c")
        .arg(format!("gpg.ssh.allowedSignersFile={}", allowed.display()))
        .args(["verify-commit", "auto"])
        .current_dir(root.path().join("fleet.git"))
        .output()
        .unwrap();
    assert!(verified.status.success(), "{}", stderr(&verified));
    let infra = rt.block_on(api.get("infra")).unwrap();
    let status = infra.status.unwrap();
    // The checkout's revision, not the pushed branch's: the next pass starts from main again.
    assert_eq!(
        status.observed_source_revision.as_deref(),
        Some(format!("main@sha1:{second}").as_str())
    );
    assert_eq!(
        status.last_push_commit.as_deref(),
        Some(bare(&root, &["rev-parse", "auto"]).as_str())
    );

    // `reconcile image update` asks for a pass and waits for it.
    let out = ferroflux(&kc, &["reconcile", "image", "update", "podinfo", "-n", NS]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // flux prints the Ready message (its `successMessage` for this kind).
    assert_eq!(
        stderr(&out),
        format!(
            "► annotating ImageUpdateAutomation podinfo in {NS} namespace\n✔ ImageUpdateAutomation annotated\n\
             ◎ waiting for ImageUpdateAutomation reconciliation\n✔ repository up-to-date\n"
        )
    );
    assert_eq!(bare(&root, &["rev-parse", "main"]), second);

    // push.refspec: the commit goes to the checkout branch and, by the refspec, to another ref.
    let refspec = automation(
        "refspec",
        source,
        "\n    push:\n      refspec: refs/heads/main:refs/heads/review",
        "infra update",
        "./infrastructure",
    );
    kubectl.ok(&["apply", "-f", "-"], &refspec);
    let pushed = rt.block_on(eventually("the refspec push", || async {
        let obj = api.get("refspec").await.ok()?;
        obj.status?.last_push_commit
    }));
    assert_eq!(bare(&root, &["rev-parse", "main"]), pushed);
    assert_eq!(bare(&root, &["rev-parse", "review"]), pushed);
    assert_eq!(bare(&root, &["rev-parse", "main~1"]), second);
}
