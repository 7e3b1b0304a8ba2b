//! `ferroflux fleet serve` over two in-process clusters: 401 without the token; the page read
//! by Debian's headless `chromium` (its DOM dumped); then the page kept open in chromium driven
//! over the DevTools protocol: a Kustomization failing on one cluster, then an Event about it,
//! appear in the same document (no reload: a mark set in the page survives) as the server
//! pushes them over `/events`, read from the DOM. A phone-sized screenshot of that page is kept
//! as target/fleet-serve.png. Then pages of one row (`--page-rows 1`): each cluster on a page
//! of its own linked to the next, bad `?from=` refused, and in chromium the first page
//! completed with the rest of the fleet over `/events`.

use crate::objects::*;
use crate::run::*;
use ferroflux_testkit::cdp::Browser;
use ferroflux_testkit::{flux_cluster, kubeconfig};
use k8s_openapi::api::core::v1::Event as CoreEvent;
use k8s_openapi::api::events::v1::Event as EventsV1;
use kube::api::{Api, PostParams};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

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

/// An open `/events` stream: its bytes as they come.
struct Sse {
    stream: TcpStream,
    seen: String,
}

impl Sse {
    fn open(addr: &str, query: &str) -> Sse {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        write!(
            stream,
            "GET /events?{query} HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n"
        )
        .unwrap();
        Sse {
            stream,
            seen: String::new(),
        }
    }

    /// Everything read until `want` has arrived (a minute at most).
    fn until(&mut self, want: &str) -> String {
        let mut chunk = [0u8; 65536];
        while !self.seen.contains(want) {
            let n = self
                .stream
                .read(&mut chunk)
                .unwrap_or_else(|e| panic!("no {want:?} in /events: {e}\n{}", self.seen));
            assert!(n > 0, "/events ended before {want:?}:\n{}", self.seen);
            self.seen.push_str(&String::from_utf8_lossy(&chunk[..n]));
        }
        self.seen.clone()
    }
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

/// A `fleet serve` process on a free port, with the token `s3cret` and `extra` arguments:
/// killed when the first value is dropped; its address.
fn serve(kubeconfig: &std::path::Path, extra: &[&str]) -> (Reap, String) {
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
        .arg(kubeconfig)
        .args(extra)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let reap = Reap(child);
    let addr = line
        .trim()
        .strip_prefix("serving the fleet on http://")
        .and_then(|a| a.strip_suffix('/'))
        .unwrap_or_else(|| panic!("{line}"))
        .to_string();
    (reap, addr)
}

struct Reap(std::process::Child);

impl Drop for Reap {
    fn drop(&mut self) {
        self.0.kill().ok();
        self.0.wait().ok();
    }
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
    let (_server, addr) = serve(&kc, &[]);

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
    // One cluster's graph.
    let answer = get(&addr, "/cluster/production?token=s3cret");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("<li>Kustomization flux-system/apps (Ready True) ← source GitRepository/flux-system/flux-system</li>"), "{answer}");

    // /events: a subscriber of no known version gets the whole fleet at once; one that gives
    // the version of the page it loaded gets only what changes after it.
    let page = get(&addr, "/?token=s3cret");
    let version = page
        .split("data-version=\"")
        .nth(1)
        .and_then(|v| v.split('"').next())
        .unwrap_or_else(|| panic!("no version in the page: {page}"))
        .to_string();
    let mut fresh = Sse::open(&addr, "token=s3cret");
    let first = fresh.until("event: fleet");
    assert!(!first.contains("event: parts"), "{first}");
    let mut known = Sse::open(&addr, &format!("since={version}&token=s3cret"));

    // The page kept open in chromium: changes on production arrive without a reload.
    let mut browser = Browser::launch();
    let page = browser.open(&url, 412, 915);
    let minute = Duration::from_secs(60);
    browser.wait_for(
        &page,
        "document.body.innerText.includes('2 clusters: 2 ready')",
        minute,
    );
    // A reload would make a new window object: this mark tells.
    browser.eval(&page, "window.sameDocument = 'yes'");
    rt.block_on(ks_status(
        &p,
        "apps",
        ("False", "kustomize build failed: boom"),
        None,
        serde_json::json!({}),
    ));
    browser.wait_for(
        &page,
        "document.getElementById('fleet').textContent.includes('kustomize build failed: boom')",
        minute,
    );
    // Over /events, that change is production's rows (and the rollup), not the whole page.
    let seen = known.until("kustomize build failed: boom");
    assert!(seen.contains("event: parts"), "{seen}");
    assert!(
        !seen.contains("event: fleet"),
        "the whole fleet was sent: {seen}"
    );
    assert!(
        seen.contains("\"k1\"") && !seen.contains("\"k0\""),
        "{seen}"
    );
    fresh.until("kustomize build failed: boom");
    let text = browser.eval(&page, "document.getElementById('fleet').innerText");
    let text = text.as_str().unwrap_or_default();
    assert!(text.contains("2 clusters: 1 failing, 1 ready"), "{text}");
    let row = browser.eval(
        &page,
        "Array.from(document.querySelectorAll('#fleet tr.False td')).map(td => td.textContent)",
    );
    // CLUSTER, KIND, NAME, READY, SUSPENDED and MESSAGE of the one row that is not Ready.
    let row: Vec<&str> = row
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(row.len(), 9, "{row:?}");
    assert_eq!(
        [row[0], row[1], row[2], row[4], row[5], row[8]],
        [
            "production",
            "Kustomization",
            "flux-system/apps",
            "False",
            "False",
            "kustomize build failed: boom"
        ]
    );

    // Events: one about a Pod (not a Flux object: not listed), then one about the failing
    // Kustomization, written through events.k8s.io/v1 as the controllers write them.
    rt.block_on(async {
        let core: Api<CoreEvent> = Api::namespaced(p.clone(), "flux-system");
        let pod_event = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "podinfo.1", "namespace": "flux-system"},
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": "podinfo", "namespace": "flux-system"},
            "reason": "Scheduled", "message": "Successfully assigned podinfo", "type": "Normal",
            "lastTimestamp": jiff::Timestamp::now().to_string(),
        }))
        .unwrap();
        core.create(&PostParams::default(), &pod_event).await.unwrap();
        let events: Api<EventsV1> = Api::namespaced(p.clone(), "flux-system");
        let flux_event = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "apps.1", "namespace": "flux-system"},
            "regarding": {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization", "name": "apps", "namespace": "flux-system"},
            "reason": "BuildFailed", "note": "kustomize build failed: boom", "type": "Warning",
            "eventTime": jiff::Timestamp::now().to_string(),
            "reportingController": "kustomize-controller", "reportingInstance": "kustomize-controller",
            "action": "Reconcile",
        }))
        .unwrap();
        events.create(&PostParams::default(), &flux_event).await.unwrap();
    });
    browser.wait_for(
        &page,
        "Array.from(document.querySelectorAll('#fleet table.events td')).some(td => td.textContent === 'BuildFailed')",
        minute,
    );
    let events = browser.eval(
        &page,
        "Array.from(document.querySelectorAll('#fleet table.events tbody tr')).map(tr => Array.from(tr.cells).map(td => td.textContent))",
    );
    let rows = events.as_array().unwrap();
    assert_eq!(rows.len(), 1, "{events}");
    let cells: Vec<&str> = rows[0]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(cells[0], "production");
    assert!(cells[1].ends_with(" s"), "an age in seconds: {cells:?}");
    assert_eq!(
        cells[2..],
        [
            "Warning",
            "Kustomization/flux-system/apps",
            "BuildFailed",
            "kustomize build failed: boom"
        ]
    );
    assert_eq!(
        browser.eval(&page, "window.sameDocument"),
        serde_json::json!("yes"),
        "the page was reloaded"
    );
    assert!(
        browser
            .eval(&page, "Number(document.body.getAttribute('data-updates'))")
            .as_f64()
            .is_some_and(|n| n >= 2.0),
        "the page was not updated by pushed events"
    );
    // Kept under the workspace's target/ (ignored by Git), wherever cargo builds.
    let shots = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target");
    std::fs::create_dir_all(&shots).unwrap();
    let shot = shots.join("fleet-serve.png");
    std::fs::remove_file(&shot).ok();
    browser.screenshot(&page, &shot);
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");

    // Pages of one row: the first holds staging alone and links to production's, for a
    // browser without JavaScript; with JavaScript, the page asks for the rest once painted.
    let (_paged, paged) = serve(&kc, &["--page-rows", "1"]);
    let first = rt.block_on(ferroflux_testkit::eventually(
        "both clusters read by the second server",
        || {
            let paged = paged.clone();
            async move {
                let page = tokio::task::spawn_blocking(move || get(&paged, "/?token=s3cret"))
                    .await
                    .unwrap();
                page.contains("2 clusters: 1 failing, 1 ready")
                    .then_some(page)
            }
        },
    ));
    assert!(first.contains("data-partial>"), "{first}");
    assert!(
        first.contains("<a href=\"cluster/staging?token=s3cret\">staging</a>"),
        "{first}"
    );
    assert!(!first.contains("cluster/production"), "{first}");
    assert!(
        first.contains("<nav class=\"pages\">Cluster 1 of 2 · <a href=\"?from=1&amp;token=s3cret\">cluster 2 →</a></nav>"),
        "{first}"
    );
    let second = get(&paged, "/?from=1&token=s3cret");
    assert!(second.starts_with("HTTP/1.1 200"), "{second}");
    assert!(
        second.contains("<a href=\"cluster/production?token=s3cret\">production</a>"),
        "{second}"
    );
    assert!(second.contains("kustomize build failed: boom"), "{second}");
    assert!(
        second.contains("<nav class=\"pages\">Cluster 2 of 2 · <a href=\"?from=0&amp;token=s3cret\">first clusters</a></nav>"),
        "{second}"
    );
    for (path, status, message) in [
        (
            "/?from=2&token=s3cret",
            "404",
            "no cluster at index 2: the fleet has 2 clusters",
        ),
        (
            "/?from=two&token=s3cret",
            "400",
            "from: expected the index of a cluster (0 for the first), got \"two\"",
        ),
        ("/?from=1", "401", ""),
    ] {
        let answer = get(&paged, path);
        assert!(
            answer.starts_with(&format!("HTTP/1.1 {status}")),
            "{path}: {answer}"
        );
        assert!(answer.contains(message), "{path}: {answer}");
    }
    let paged_page = browser.open(&format!("http://{paged}/?token=s3cret"), 1280, 900);
    browser.wait_for(
        &paged_page,
        "document.querySelectorAll('#fleet section[id^=k]').length === 2 && !document.getElementById('fleet').hasAttribute('data-partial') && !document.querySelector('nav.pages')",
        minute,
    );
    // textContent: sections off screen are not laid out, so innerText may not hold them.
    let text = browser.eval(&paged_page, "document.getElementById('fleet').textContent");
    assert!(
        text.as_str()
            .unwrap_or_default()
            .contains("kustomize build failed: boom"),
        "{text}"
    );
    drop(browser);

    rt.block_on(async {
        staging.shutdown().await;
        production.shutdown().await;
    });
}
