//! ferroflux's own image, built as a user builds it: `image/build.sh` compiles the static
//! binary (glibc with crt-static, see the script for why), lays the image out with umoci and
//! pushes it with skopeo to a real registry (Debian's docker-registry). skopeo, a client no one
//! here wrote, reads the manifest and config back; they are compared with what
//! `image/Containerfile` states (entrypoint, a user that is not root, the OCI labels). The
//! image is then unpacked by umoci and its binary run in a root holding nothing else but the
//! `/etc/hosts` Kubernetes would mount, as the image's user: it resolves a registry name and
//! pulls an artifact. `install --export --registry --version` names exactly the pushed image.
//!
//! The static build is a second build of the whole stack. It uses the `image-test` profile
//! (no optimisation, no debug info: the shortest build) and its own target dir beside the
//! suite's, `<target>/static`, which stays between runs so only what changed is rebuilt.

use crate::run::text;
use ferroflux_testkit::{Registry, RegistryOptions};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../image/build.sh")
}

fn containerfile() -> String {
    std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../image/Containerfile"),
    )
    .unwrap()
}

/// `LABEL k="v" \` lines of the Containerfile, `${VERSION}`/`${REVISION}` filled in.
fn labels(version: &str, revision: &str) -> Vec<(String, String)> {
    let text = containerfile();
    let start = text.find("\nLABEL ").unwrap() + "\nLABEL ".len();
    text[start..]
        .lines()
        .map(|l| l.trim().trim_end_matches('\\').trim())
        .take_while(|l| !l.is_empty())
        .map(|l| {
            let (k, v) = l.split_once('=').unwrap();
            let v = v.trim_matches('"');
            (
                k.to_string(),
                v.replace("${VERSION}", version)
                    .replace("${REVISION}", revision),
            )
        })
        .collect()
}

/// The suite's target dir: the test binary's `ferroflux` is `<target>/<profile>/ferroflux`.
fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_ferroflux"))
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .to_path_buf()
}

fn skopeo(args: &[&str]) -> Output {
    Command::new("skopeo")
        .args(args)
        .output()
        .expect("skopeo must be installed: run ./test.sh")
}

fn json_of(out: &Output) -> Value {
    assert!(out.status.success(), "{}", text(out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Whether the ELF file names a program interpreter or shared libraries.
fn dynamic(path: &Path) -> bool {
    let headers = Command::new("readelf")
        .arg("-ld")
        .arg(path)
        .output()
        .expect("readelf (binutils) must be installed: run ./test.sh");
    assert!(headers.status.success(), "{}", text(&headers));
    let headers = String::from_utf8_lossy(&headers.stdout);
    headers.contains("Requesting program interpreter") || headers.contains("(NEEDED)")
}

/// Runs `args` in `root` as chroot does, as the image's user when this test runs as root; as
/// the root of a new user namespace otherwise (the image's user cannot be mapped there).
fn in_root(root: &Path, user: &str, args: &[&str]) -> Output {
    let uid = Command::new("id").arg("-u").output().unwrap();
    let mut cmd = if String::from_utf8_lossy(&uid.stdout).trim() == "0" {
        // chroot lives in /usr/sbin, which a user's PATH may not name.
        let chroot = ["/usr/sbin/chroot", "/usr/bin/chroot"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .unwrap_or("chroot");
        let mut cmd = Command::new(chroot);
        cmd.arg(format!("--userspec={user}"));
        cmd
    } else {
        let mut cmd = Command::new("unshare");
        cmd.args(["--user", "--map-root-user", "chroot"]);
        cmd
    };
    cmd.arg(root)
        .args(args)
        .env_clear()
        .env("HOME", "/tmp")
        .output()
        .unwrap()
}

#[test]
fn build_push_and_read_the_image_back() {
    let reg = Registry::start(RegistryOptions::default());
    let image = format!("{}/ferroflux:v0.0.0-test", reg.host());
    let debug_binary = env!("CARGO_BIN_EXE_ferroflux");

    // The suite's binary is dynamically linked: refused for an image FROM scratch.
    let out = Command::new(script())
        .args(["--image", &image, "--binary", debug_binary, "--insecure"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("is dynamically linked (it names a program interpreter"),
        "{}",
        text(&out)
    );

    // The static build, laid out and pushed.
    let static_dir = target_dir().join("static");
    let out = Command::new(script())
        .args([
            "--image",
            &image,
            "--profile",
            "image-test",
            "--target-dir",
            static_dir.to_str().unwrap(),
            "--revision",
            "0123abc",
            "--insecure",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).ends_with(&format!("pushed {image}\n")),
        "{}",
        text(&out)
    );

    // Read back by skopeo: the manifest, then the config it names.
    let reference = format!("docker://{image}");
    let manifest = json_of(&skopeo(&[
        "inspect",
        "--tls-verify=false",
        "--raw",
        &reference,
    ]));
    // An OCI manifest (umoci leaves out its optional mediaType field).
    assert_eq!(manifest["schemaVersion"], 2);
    assert!(
        [
            Value::Null,
            "application/vnd.oci.image.manifest.v1+json".into()
        ]
        .contains(&manifest["mediaType"]),
        "{manifest}"
    );
    assert_eq!(
        manifest["config"]["mediaType"],
        "application/vnd.oci.image.config.v1+json"
    );
    let layers = manifest["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 1, "FROM scratch and one COPY: {manifest}");
    assert_eq!(
        layers[0]["mediaType"],
        "application/vnd.oci.image.layer.v1.tar+gzip"
    );
    let config = json_of(&skopeo(&[
        "inspect",
        "--tls-verify=false",
        "--config",
        "--raw",
        &reference,
    ]));
    assert_eq!(config["os"], "linux");
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    assert_eq!(config["architecture"], arch);
    assert_eq!(
        config["config"]["Entrypoint"],
        serde_json::json!(["/ferroflux"])
    );
    assert_eq!(config["config"]["Cmd"], serde_json::json!(["controller"]));
    assert_eq!(config["config"]["Env"], Value::Null, "{config}");
    let user = config["config"]["User"].as_str().unwrap().to_string();
    assert!(
        containerfile().contains(&format!("\nUSER {user}\n")),
        "{user}"
    );
    let uid = user.split(':').next().unwrap();
    assert!(uid != "0" && uid != "root" && !uid.is_empty(), "{user}");
    let want = labels("v0.0.0-test", "0123abc");
    assert_eq!(want.len(), 6, "{want:?}");
    for (k, v) in want {
        assert_eq!(config["config"]["Labels"][&k], v, "label {k}");
    }
    // skopeo's summary of the same image agrees.
    let summary = json_of(&skopeo(&["inspect", "--tls-verify=false", &reference]));
    assert_eq!(
        summary["Labels"]["org.opencontainers.image.revision"],
        "0123abc"
    );

    // Copied back by skopeo and unpacked by umoci: the root holds the static binary alone.
    let work = tempfile::tempdir().unwrap();
    let layout = work.path().join("layout");
    let out = skopeo(&[
        "copy",
        "-q",
        "--src-tls-verify=false",
        &reference,
        &format!("oci:{}:pulled", layout.display()),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let bundle = work.path().join("bundle");
    let out = Command::new("umoci")
        .args(["unpack", "--rootless", "--image"])
        .arg(format!("{}:pulled", layout.display()))
        .arg(&bundle)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let root = bundle.join("rootfs");
    let entries: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(entries, ["ferroflux"]);
    let binary = root.join("ferroflux");
    assert!(!dynamic(&binary), "the image's binary is static");
    let triple = format!("{}-unknown-linux-gnu", std::env::consts::ARCH);
    let built = std::fs::read(static_dir.join(triple).join("image-test/ferroflux"));
    assert!(
        built.unwrap() == std::fs::read(&binary).unwrap(),
        "the image holds the binary as built"
    );

    // Run in that root, as the image's user, with what a kubelet adds (/etc/hosts and a
    // writable /tmp): the name of the registry is resolved without any shared library, and an
    // artifact pushed by the suite's binary is pulled.
    let content = work.path().join("content");
    std::fs::create_dir(&content).unwrap();
    std::fs::write(content.join("settings.yaml"), "colour: blue\n").unwrap();
    let out = Command::new(debug_binary)
        .args(["push", "artifact"])
        .arg(format!("oci://{}/settings:v1", reg.host()))
        .arg("--path")
        .arg(&content)
        .args([
            "--source",
            "https://example.com/settings",
            "--revision",
            "v1",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    std::fs::create_dir(root.join("etc")).unwrap();
    std::fs::write(
        root.join("etc/hosts"),
        "127.0.0.1 localhost\n127.0.0.1 registry.ferroflux.test\n",
    )
    .unwrap();
    let tmp = root.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    std::fs::set_permissions(&tmp, std::os::unix::fs::PermissionsExt::from_mode(0o1777)).unwrap();
    let url = format!("oci://registry.ferroflux.test:{}/settings:v1", reg.port());
    let out = in_root(
        &root,
        &user,
        &[
            "/ferroflux",
            "pull",
            "artifact",
            &url,
            "--output",
            "/tmp/out",
            "--insecure-registry",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        std::fs::read_to_string(tmp.join("out/settings.yaml")).unwrap(),
        "colour: blue\n"
    );

    // install names exactly that image.
    let out = Command::new(debug_binary)
        .args([
            "install",
            "--export",
            "--registry",
            &reg.host(),
            "--version",
            "v0.0.0-test",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(&format!("image: {image}\n")),
        "{}",
        text(&out)
    );
}
