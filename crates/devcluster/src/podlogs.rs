//! Real logs for simulated Pods: a process that stands for the containers of some Pods (as
//! `ferroflux dev up` runs the controllers of its clusters in its own process) attaches its log
//! to the Pods of a namespace whose labels match, and `GET pods/NAME/log` serves what it wrote,
//! as a kubelet serves a container's log: `tailLines`, `sinceSeconds`, `sinceTime`,
//! `timestamps` and `follow`. Every other Pod's log says that nothing runs.
//!
//! A log keeps its last [`MAX_BYTES`] of lines in memory (a kubelet rotates too).

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

use jiff::Timestamp;
use serde_json::Value;

/// How much of a log is kept.
pub const MAX_BYTES: usize = 8 * 1024 * 1024;

/// The logs attached to a cluster's Pods.
#[derive(Default)]
pub struct PodLogs {
    attached: Mutex<Vec<Attached>>,
}

struct Attached {
    namespace: String,
    labels: BTreeMap<String, String>,
    log: Arc<Log>,
}

impl PodLogs {
    /// Attaches a new log to the Pods of `namespace` carrying all of `labels`.
    pub fn attach(&self, namespace: &str, labels: BTreeMap<String, String>) -> LogWriter {
        let log = Arc::new(Log::default());
        if let Ok(mut attached) = self.attached.lock() {
            attached.push(Attached {
                namespace: namespace.to_string(),
                labels,
                log: log.clone(),
            });
        }
        LogWriter {
            log,
            partial: Vec::new(),
        }
    }

    /// The log of a Pod (the stored object), if one is attached to it.
    pub fn of(&self, pod: &Value) -> Option<Arc<Log>> {
        let ns = pod.pointer("/metadata/namespace").and_then(Value::as_str)?;
        let labels = pod.pointer("/metadata/labels").and_then(Value::as_object);
        let attached = self.attached.lock().ok()?;
        attached
            .iter()
            .find(|a| {
                a.namespace == ns
                    && a.labels.iter().all(|(k, v)| {
                        labels
                            .and_then(|l| l.get(k))
                            .and_then(Value::as_str)
                            .is_some_and(|x| x == v)
                    })
            })
            .map(|a| a.log.clone())
    }
}

/// One log: its lines with the time each was written, numbered from the first ever written.
#[derive(Default)]
pub struct Log {
    inner: Mutex<Lines>,
    written: tokio::sync::Notify,
}

#[derive(Default)]
struct Lines {
    /// The number of the first line kept.
    first: u64,
    lines: VecDeque<(Timestamp, String)>,
    bytes: usize,
}

/// Which lines a request reads.
#[derive(Debug, Default, Clone)]
pub struct Selection {
    pub tail_lines: Option<u64>,
    pub since: Option<Timestamp>,
    pub timestamps: bool,
}

impl Log {
    fn push(&self, line: String) {
        if let Ok(mut inner) = self.inner.lock() {
            inner.bytes += line.len();
            inner.lines.push_back((Timestamp::now(), line));
            while inner.bytes > MAX_BYTES {
                match inner.lines.pop_front() {
                    Some((_, old)) => {
                        inner.bytes -= old.len();
                        inner.first += 1;
                    }
                    None => break,
                }
            }
        }
        self.written.notify_waiters();
    }

    /// The lines `selection` picks (each ending with a newline) and the number of the next
    /// line to be written.
    pub fn read(&self, selection: &Selection) -> (String, u64) {
        let Ok(inner) = self.inner.lock() else {
            return (String::new(), 0);
        };
        let next = inner.first + inner.lines.len() as u64;
        let picked: Vec<&(Timestamp, String)> = inner
            .lines
            .iter()
            .filter(|(t, _)| selection.since.is_none_or(|s| *t >= s))
            .collect();
        let skip = match selection.tail_lines {
            Some(n) => picked.len().saturating_sub(n as usize),
            None => 0,
        };
        let text = picked[skip..]
            .iter()
            .map(|(t, l)| line(t, l, selection.timestamps))
            .collect();
        (text, next)
    }

    /// The lines written from line `from` on, and the number of the next one.
    pub fn read_from(&self, from: u64, timestamps: bool) -> (String, u64) {
        let Ok(inner) = self.inner.lock() else {
            return (String::new(), from);
        };
        let next = inner.first + inner.lines.len() as u64;
        let start = from.max(inner.first) - inner.first;
        let text = inner
            .lines
            .iter()
            .skip(start as usize)
            .map(|(t, l)| line(t, l, timestamps))
            .collect();
        (text, next)
    }

    /// Waits until a line is written after line `next`.
    pub async fn written_after(&self, next: u64) {
        loop {
            let notified = self.written.notified();
            if let Ok(inner) = self.inner.lock()
                && inner.first + inner.lines.len() as u64 > next
            {
                return;
            }
            notified.await;
        }
    }
}

/// A line as a kubelet serves it, with its RFC 3339 time first when asked.
fn line(t: &Timestamp, text: &str, timestamps: bool) -> String {
    if timestamps {
        format!("{} {text}\n", t.strftime("%Y-%m-%dT%H:%M:%S%.9fZ"))
    } else {
        format!("{text}\n")
    }
}

/// What a process writes to its attached log (as it would to a container's stdout): bytes,
/// kept as lines.
pub struct LogWriter {
    log: Arc<Log>,
    partial: Vec<u8>,
}

impl std::io::Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.partial.extend_from_slice(buf);
        while let Some(end) = self.partial.iter().position(|b| *b == b'\n') {
            let rest = self.partial.split_off(end + 1);
            let mut line = std::mem::replace(&mut self.partial, rest);
            line.pop();
            self.log.push(String::from_utf8_lossy(&line).into_owned());
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::io::Write;

    #[test]
    fn lines_tail_since_and_follow() {
        let logs = PodLogs::default();
        let labels: BTreeMap<String, String> =
            [("app".to_string(), "c".to_string())].into_iter().collect();
        let mut w = logs.attach("flux-system", labels);
        let pod =
            json!({"metadata": {"namespace": "flux-system", "labels": {"app": "c", "x": "y"}}});
        let other = json!({"metadata": {"namespace": "default", "labels": {"app": "c"}}});
        assert!(logs.of(&other).is_none());
        let log = logs.of(&pod).unwrap();
        w.write_all(b"one\ntw").unwrap();
        w.write_all(b"o\nthree\n").unwrap();
        let all = Selection::default();
        assert_eq!(log.read(&all), ("one\ntwo\nthree\n".to_string(), 3));
        let tail = Selection {
            tail_lines: Some(2),
            ..Selection::default()
        };
        assert_eq!(log.read(&tail).0, "two\nthree\n");
        let future = Selection {
            since: Some(Timestamp::now() + jiff::SignedDuration::from_secs(60)),
            ..Selection::default()
        };
        assert_eq!(log.read(&future).0, "");
        assert_eq!(log.read_from(1, false), ("two\nthree\n".to_string(), 3));
        let stamped = log.read_from(2, true).0;
        assert!(stamped.ends_with("Z three\n"), "{stamped}");
    }
}
