//! Debian's headless `chromium` driven over the Chrome DevTools Protocol, for tests that read a
//! page as a browser renders it and keeps it: the DOM after scripts ran, changes pushed to the
//! page without a reload, screenshots. The protocol runs over `--remote-debugging-pipe`: JSON
//! messages, each ended by a NUL byte, read by chromium on its fd 3 and written on its fd 4, so
//! no websocket client is needed. The fds are wired by the shell that starts chromium
//! (`3<&0 4>&1`), which keeps this file free of `unsafe`.
//!
//! Waiting is never a sleep: [`Page::wait_for`] evaluates a Promise in the page that resolves
//! the moment a condition holds (checked at once, then on every DOM mutation), and the reply
//! is awaited with a deadline.

use base64::Engine as _;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

/// A headless chromium; killed when dropped.
pub struct Browser {
    child: Child,
    input: ChildStdin,
    messages: Receiver<Value>,
    /// Events read while waiting for a reply, oldest first.
    events: VecDeque<Value>,
    next_id: u64,
    /// Its profile directory (removed when dropped).
    _profile: tempfile::TempDir,
}

/// One tab, attached in flat mode (its commands carry the session id).
pub struct Page {
    session: String,
}

/// An evaluation sent to a page and not yet answered ([`Browser::start_eval`]).
pub struct Evaluation {
    id: u64,
}

impl Drop for Browser {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

impl Browser {
    /// Starts `chromium --headless --remote-debugging-pipe` (./test.sh installs it).
    pub fn launch() -> Browser {
        let profile = tempfile::tempdir().expect("a temporary profile directory");
        let mut child = Command::new("sh")
            .arg("-c")
            // The pipe is fds 3 (commands) and 4 (replies); chromium's own stdout is discarded
            // so that nothing but the protocol reaches our end of fd 4.
            .arg(r#"exec chromium "$@" 3<&0 4>&1 0</dev/null 1>/dev/null"#)
            .arg("sh")
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--no-first-run",
                "--remote-debugging-pipe",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromium runs (./test.sh installs it)");
        let input = child.stdin.take().expect("piped stdin");
        let output = child.stdout.take().expect("piped stdout");
        let (tx, messages) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(output);
            loop {
                let mut buf = Vec::new();
                match reader.read_until(0, &mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                if buf.last() == Some(&0) {
                    buf.pop();
                }
                let Ok(message) = serde_json::from_slice::<Value>(&buf) else {
                    continue;
                };
                if tx.send(message).is_err() {
                    return;
                }
            }
        });
        Browser {
            child,
            input,
            messages,
            events: VecDeque::new(),
            next_id: 1,
            _profile: profile,
        }
    }

    /// Sends `method` (to the page's session when given) and returns its `result`, or panics
    /// with the protocol's error, or when no reply came within `timeout`.
    pub fn call_within(
        &mut self,
        session: Option<&str>,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Value {
        let id = self.send(session, method, params);
        self.reply(id, method, timeout)
    }

    /// Sends `method` without waiting: the id its reply will carry.
    fn send(&mut self, session: Option<&str>, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            message["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&message).expect("JSON");
        bytes.push(0);
        self.input
            .write_all(&bytes)
            .and_then(|()| self.input.flush())
            .unwrap_or_else(|e| panic!("writing {method} to chromium: {e}"));
        id
    }

    /// The `result` of the reply to `id` (already received or to come).
    fn reply(&mut self, id: u64, method: &str, timeout: Duration) -> Value {
        let mine = |m: &Value| m["id"] == json!(id);
        let message = match self.events.iter().position(mine) {
            Some(i) => self.events.remove(i).unwrap_or_default(),
            None => {
                let deadline = Instant::now() + timeout;
                loop {
                    let left = deadline.saturating_duration_since(Instant::now());
                    let message = match self.messages.recv_timeout(left) {
                        Ok(m) => m,
                        Err(RecvTimeoutError::Timeout) => {
                            panic!("chromium did not answer {method} within {timeout:?}")
                        }
                        Err(RecvTimeoutError::Disconnected) => {
                            panic!("chromium exited during {method}")
                        }
                    };
                    if mine(&message) {
                        break message;
                    }
                    self.events.push_back(message);
                }
            }
        };
        if let Some(error) = message.get("error") {
            panic!("{method}: {error}");
        }
        message["result"].clone()
    }

    /// [`Browser::call_within`] with a minute's bound.
    pub fn call(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        self.call_within(session, method, params, Duration::from_secs(60))
    }

    /// Waits for the event `method` of `session` (already received or to come).
    pub fn event(&mut self, session: &str, method: &str, timeout: Duration) -> Value {
        let matches = |m: &Value| m["method"] == json!(method) && m["sessionId"] == json!(session);
        if let Some(i) = self.events.iter().position(matches) {
            return self.events.remove(i).unwrap_or_default();
        }
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.messages.recv_timeout(left) {
                Ok(m) if matches(&m) => return m,
                Ok(m) => self.events.push_back(m),
                Err(_) => panic!("no {method} from chromium within {timeout:?}"),
            }
        }
    }

    /// Opens `url` in a new tab of `width`×`height` CSS pixels (a phone: 412×915) and waits
    /// for its load event.
    pub fn open(&mut self, url: &str, width: u32, height: u32) -> Page {
        let target = self.call(None, "Target.createTarget", json!({"url": "about:blank"}));
        let target_id = target["targetId"].clone();
        let attached = self.call(
            None,
            "Target.attachToTarget",
            json!({"targetId": target_id, "flatten": true}),
        );
        let session = attached["sessionId"]
            .as_str()
            .expect("a session id")
            .to_string();
        self.call(Some(&session), "Page.enable", json!({}));
        self.call(
            Some(&session),
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600}),
        );
        self.call(Some(&session), "Page.navigate", json!({"url": url}));
        self.event(&session, "Page.loadEventFired", Duration::from_secs(60));
        Page { session }
    }

    /// Navigates the page to `url` and waits for its load event.
    pub fn navigate(&mut self, page: &Page, url: &str) {
        // A load event of an earlier navigation must not pass for this one's.
        let earlier = |m: &Value| {
            m["method"] == json!("Page.loadEventFired") && m["sessionId"] == json!(page.session)
        };
        self.events.retain(|m| !earlier(m));
        self.call(Some(&page.session), "Page.navigate", json!({"url": url}));
        self.event(
            &page.session,
            "Page.loadEventFired",
            Duration::from_secs(60),
        );
    }

    /// Starts evaluating `expression` in the page (a Promise is awaited) without waiting for
    /// it: something can happen meanwhile; [`Browser::finish`] gives its value.
    pub fn start_eval(&mut self, page: &Page, expression: &str) -> Evaluation {
        let id = self.send(
            Some(&page.session),
            "Runtime.evaluate",
            json!({"expression": expression, "awaitPromise": true, "returnByValue": true}),
        );
        Evaluation { id }
    }

    /// The value of an evaluation [`Browser::start_eval`] started, within `timeout`.
    pub fn finish(&mut self, evaluation: Evaluation, timeout: Duration) -> Value {
        let result = self.reply(evaluation.id, "Runtime.evaluate", timeout);
        if let Some(e) = result.get("exceptionDetails") {
            panic!("evaluation: {e}");
        }
        result["result"]["value"].clone()
    }

    /// Evaluates `expression` in the page (a Promise is awaited) and returns its value.
    pub fn eval(&mut self, page: &Page, expression: &str) -> Value {
        self.eval_within(page, expression, Duration::from_secs(60))
    }

    fn eval_within(&mut self, page: &Page, expression: &str, timeout: Duration) -> Value {
        let result = self.call_within(
            Some(&page.session),
            "Runtime.evaluate",
            json!({"expression": expression, "awaitPromise": true, "returnByValue": true}),
            timeout,
        );
        if let Some(e) = result.get("exceptionDetails") {
            panic!("{expression}: {e}");
        }
        result["result"]["value"].clone()
    }

    /// Waits until the JavaScript expression `condition` is true in the page: checked at once,
    /// then after every DOM mutation, without a reload and without a sleep; panics after
    /// `timeout`.
    pub fn wait_for(&mut self, page: &Page, condition: &str, timeout: Duration) {
        let ms = timeout.as_millis();
        let script = format!(
            "new Promise((resolve, reject) => {{
               const ok = () => {{ try {{ return !!({condition}); }} catch (e) {{ return false; }} }};
               if (ok()) {{ resolve(true); return; }}
               const seen = new MutationObserver(() => {{ if (ok()) {{ seen.disconnect(); resolve(true); }} }});
               seen.observe(document, {{subtree: true, childList: true, characterData: true, attributes: true}});
               setTimeout(() => {{ seen.disconnect(); resolve(ok()); }}, {ms});
             }})"
        );
        // The page gives up first and says whether the condition held at its deadline.
        let held = self.eval_within(page, &script, timeout + Duration::from_secs(30));
        assert_eq!(
            held,
            json!(true),
            "not true in the page within {timeout:?}: {condition}\npage text:\n{}",
            self.eval(page, "document.body.innerText")
        );
    }

    /// A PNG screenshot of the page's viewport, written to `path`.
    pub fn screenshot(&mut self, page: &Page, path: &std::path::Path) {
        let shot = self.call(
            Some(&page.session),
            "Page.captureScreenshot",
            json!({"format": "png"}),
        );
        let data = shot["data"].as_str().expect("screenshot data");
        let png = base64::engine::general_purpose::STANDARD
            .decode(data)
            .expect("base64 PNG");
        std::fs::write(path, png).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    }
}
