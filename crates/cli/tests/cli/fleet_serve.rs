//! `ferroflux fleet serve` over two in-process clusters: the page read by Debian's headless
//! `chromium` (its DOM dumped; a phone-sized screenshot kept as target/fleet-serve.png), 401
//! without the token, and a change on a cluster pushed over `/events` (Server-Sent Events)
//! without a reload.

use crate::objects::*;
use crate::run::*;
use ferroflux_testkit::{flux_cluster, kubeconfig};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};

fn get(addr: &str, path: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

fn chromium(args: &[&str]) -> std::process::Output {
    Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
        ])
        .args(args)
        .output()
        .expect("chromium runs (./test.sh installs it)")
}

#[test]
fn fleet_page_in_chromium_and_live_events() {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (staging, production, p) = rt.block_on(async {
        let (staging, s) = flux_cluster("staging").await;
        git(&s, "flux-system", Some(SHA_A)).await;
        ks(&s, "apps", "flux-system", false).await;
        let msg = format!("Applied revision: {}", revision(SHA_A));
        ks_status(
            &s,
            "apps",
            ("True", &msg),
            Some(&revision(SHA_A)),
            serde_json::json!({}),
        )
        .await;
        let (production, p) = flux_cluster("production").await;
        git(&p, "flux-system", Some(SHA_A)).await;
        ks(&p, "apps", "flux-system", false).await;
        ks_status(
            &p,
            "apps",
            ("True", &msg),
            Some(&revision(SHA_A)),
            serde_json::json!({}),
        )
        .await;
        (staging, production, p)
    });
    let kc = kubeconfig(dir.path(), &[&staging, &production]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .args([
            "fleet",
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--token",
            "s3cret",
            "--kubeconfig",
        ])
        .arg(&kc)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    struct Reap(std::process::Child);
    impl Drop for Reap {
        fn drop(&mut self) {
            self.0.kill().ok();
            self.0.wait().ok();
        }
    }
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _child = Reap(child);
    let addr = line
        .trim()
        .strip_prefix("serving the fleet on http://")
        .and_then(|a| a.strip_suffix('/'))
        .unwrap_or_else(|| panic!("{line}"))
        .to_string();

    // No token, a wrong one: 401.
    for path in ["/", "/events", "/?token=nope", "/cluster/staging"] {
        let answer = get(&addr, path);
        assert!(answer.starts_with("HTTP/1.1 401"), "{path}: {answer}");
    }

    // The page as a browser renders it, once both clusters are listed.
    let url = format!("http://{addr}/?token=s3cret");
    let dom = rt.block_on(ferroflux_testkit::eventually(
        "both clusters on the page",
        || {
            let url = url.clone();
            async move {
                let out = tokio::task::spawn_blocking(move || chromium(&["--dump-dom", &url]))
                    .await
                    .unwrap();
                let dom = String::from_utf8_lossy(&out.stdout).into_owned();
                (dom.contains("2 clusters: 2 ready")).then_some(dom)
            }
        },
    ));
    assert!(dom.contains("<h1>Fleet: 2 clusters</h1>"), "{dom}");
    assert!(
        dom.contains("1 of 2 clusters at main@sha1:aaaaaaaa")
            || dom.contains("2 of 2 clusters at main@sha1:aaaaaaaa"),
        "{dom}"
    );
    assert!(dom.contains("<td>Kustomization</td><td>flux-system/apps</td><td>main@sha1:aaaaaaaa</td><td class=\"ready\">True</td>"), "{dom}");
    assert!(
        dom.contains("<a href=\"cluster/production?token=s3cret\">production</a>"),
        "{dom}"
    );
    // Kept under the workspace's target/ (ignored by Git), wherever cargo builds.
    let shots = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target");
    std::fs::create_dir_all(&shots).unwrap();
    let shot = shots.join("fleet-serve.png");
    std::fs::remove_file(&shot).ok();
    let out = chromium(&[
        &format!("--screenshot={}", shot.display()),
        "--window-size=412,915",
        &url,
    ]);
    assert!(shot.is_file(), "{}", String::from_utf8_lossy(&out.stderr));

    // One cluster's graph.
    let answer = get(&addr, "/cluster/production?token=s3cret");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("<li>Kustomization flux-system/apps (Ready True) ← source GitRepository/flux-system/flux-system</li>"), "{answer}");

    // The events stream: a change on production arrives without asking again.
    let mut s = TcpStream::connect(&addr).unwrap();
    write!(
        s,
        "GET /events HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer s3cret\r\n\r\n"
    )
    .unwrap();
    let mut reader = BufReader::new(s);
    let mut head = String::new();
    reader.read_line(&mut head).unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    rt.block_on(ks_status(
        &p,
        "apps",
        ("False", "kustomize build failed: boom"),
        None,
        serde_json::json!({}),
    ));
    // One event: its `data:` lines (the fragment's own newlines split it), then a blank line.
    let mut seen = String::new();
    let mut data = String::new();
    loop {
        let mut l = String::new();
        // The read is bounded by the server's keep-alive comments, never by a sleep here.
        if reader.read_line(&mut l).unwrap() == 0 {
            panic!("the stream ended: {seen}");
        }
        seen.push_str(&l);
        if let Some(d) = l.strip_prefix("data: ").or_else(|| l.strip_prefix("data:")) {
            data.push_str(d);
        } else if l.trim().is_empty() && !data.is_empty() {
            if data.contains("kustomize build failed: boom") {
                assert!(data.contains("2 clusters: 1 failing, 1 ready"), "{data}");
                break;
            }
            data.clear();
        }
    }

    rt.block_on(async {
        staging.shutdown().await;
        production.shutdown().await;
    });
}
