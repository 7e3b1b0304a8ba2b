//! The process's logging, installed once by `main` before any command runs: `tracing` events
//! (the controllers', the Kubernetes client's retries, …) go to stderr, coloured only when
//! stderr is a terminal (text only, and not when `NO_COLOR` is set).
//!
//! `controller` and `dev up` log what their `--log-level` and `--log-format` say. Every other
//! command is silent unless asked: `--verbose` shows ferroflux's debug events (warnings of the
//! libraries below too), and `RUST_LOG`, when set, chooses instead. So a command's stderr reads
//! like flux's unless a user wants more.
//!
//! JSON lines are flux's controllers' (controller-runtime's zap encoder): `level` (`debug`,
//! `info` or `error`), `ts` (RFC 3339 in UTC, milliseconds), `logger`, `msg`, then the event's
//! fields, the object's kind named `controllerKind`. `flux logs` and `ferroflux logs` read them.

use std::io::IsTerminal;

use anyhow::anyhow;
use clap::ValueEnum;
use tracing_subscriber::EnvFilter;

/// How log lines are written.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// Which events are logged, and how.
pub struct Logging {
    filter: Filter,
    format: LogFormat,
}

enum Filter {
    /// A `--log-level` value: a level or any `tracing` filter directive.
    Level(String),
    /// A command without logging flags.
    Quiet { verbose: bool },
}

impl Logging {
    /// For `controller` and `dev up`: their `--log-level` and `--log-format`.
    pub fn flags(level: &str, format: LogFormat) -> Logging {
        Logging {
            filter: Filter::Level(level.to_string()),
            format,
        }
    }

    /// For every other command: nothing unless `--verbose` or `RUST_LOG`.
    pub fn quiet(verbose: bool) -> Logging {
        Logging {
            filter: Filter::Quiet { verbose },
            format: LogFormat::Text,
        }
    }

    fn env_filter(&self) -> anyhow::Result<EnvFilter> {
        match &self.filter {
            Filter::Level(level) => {
                EnvFilter::try_new(level).map_err(|e| anyhow!("--log-level {level:?}: {e}"))
            }
            Filter::Quiet { .. } if std::env::var_os(EnvFilter::DEFAULT_ENV).is_some() => {
                EnvFilter::try_from_default_env()
                    .map_err(|e| anyhow!("{}: {e}", EnvFilter::DEFAULT_ENV))
            }
            // A directive's target matches by prefix: `ferroflux` is every crate of ours.
            Filter::Quiet { verbose: true } => Ok(EnvFilter::new("warn,ferroflux=debug")),
            Filter::Quiet { verbose: false } => Ok(EnvFilter::new("off")),
        }
    }
}

/// Installs the subscriber for the whole process: stderr as `--log-format` says, and flux's
/// JSON lines to every [`add_json_sink`].
pub fn init(logging: &Logging) -> anyhow::Result<()> {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let stderr = tracing_subscriber::fmt::layer()
        .with_ansi(use_colour(
            logging.format,
            std::io::stderr().is_terminal(),
            std::env::var_os("NO_COLOR").as_deref(),
        ))
        .with_writer(std::io::stderr);
    let stderr = match logging.format {
        LogFormat::Json => stderr.event_format(FluxJson).boxed(),
        LogFormat::Text => stderr.boxed(),
    };
    // Formatting for sinks costs nothing until one is added.
    let sinks = tracing_subscriber::fmt::layer()
        .event_format(FluxJson)
        .with_writer(|| SinkWriter)
        .with_filter(tracing_subscriber::filter::filter_fn(|_| has_sinks()));
    tracing_subscriber::registry()
        .with(logging.env_filter()?)
        .with(stderr)
        .with(sinks)
        .try_init()
        .map_err(|e| anyhow!("cannot set up logging: {e}"))
}

type Sink = Box<dyn std::io::Write + Send>;

/// Where flux's JSON lines go besides stderr (`dev up`: the log its clusters serve as their
/// controller Pod's).
static SINKS: std::sync::Mutex<Vec<Sink>> = std::sync::Mutex::new(Vec::new());
static HAS_SINKS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// From now on every log line is also written, as flux's JSON, to `sink`.
pub fn add_json_sink(sink: Sink) {
    if let Ok(mut sinks) = SINKS.lock() {
        sinks.push(sink);
        HAS_SINKS.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

fn has_sinks() -> bool {
    HAS_SINKS.load(std::sync::atomic::Ordering::Relaxed)
}

/// Writes each formatted line to every sink.
struct SinkWriter;

impl std::io::Write for SinkWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut sinks) = SINKS.lock() {
            for sink in sinks.iter_mut() {
                // A sink that fails loses the line; logging never fails the process.
                let _ = sink.write_all(buf);
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Whether log lines carry ANSI colours: text logs on a terminal, unless `NO_COLOR` is set to
/// something (no-color.org). JSON never does: a colour code inside a string field is noise to
/// every log collector.
fn use_colour(format: LogFormat, terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    matches!(format, LogFormat::Text) && terminal && no_color.is_none_or(|v| v.is_empty())
}

#[cfg(test)]
mod colour_tests {
    use super::*;

    #[test]
    fn colours_only_text_on_a_terminal_without_no_color() {
        use std::ffi::OsStr;
        assert!(use_colour(LogFormat::Text, true, None));
        assert!(use_colour(LogFormat::Text, true, Some(OsStr::new(""))));
        assert!(!use_colour(LogFormat::Text, false, None));
        assert!(!use_colour(LogFormat::Text, true, Some(OsStr::new("1"))));
        assert!(!use_colour(LogFormat::Json, true, None));
        assert!(!use_colour(LogFormat::Json, false, None));
    }
}

/// The JSON encoder of flux's controllers (see the module's doc).
struct FluxJson;

/// An event's fields as JSON values, `message` apart.
#[derive(Default)]
struct Fields {
    message: String,
    rest: Vec<(String, serde_json::Value)>,
}

impl Fields {
    fn add(&mut self, field: &tracing::field::Field, value: serde_json::Value) {
        match field.name() {
            "message" => {
                self.message = match value {
                    serde_json::Value::String(s) => s,
                    other => other.to_string(),
                }
            }
            // Our events name the object's kind `kind`; controller-runtime's JSON names it
            // `controllerKind`, which flux's `logs` reads.
            "kind" => self.rest.push(("controllerKind".into(), value)),
            name => self.rest.push((name.to_string(), value)),
        }
    }
}

impl tracing::field::Visit for Fields {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.add(field, value.into());
    }
    fn record_i64(&mut self, field: &tracing::field::Field, value: i64) {
        self.add(field, value.into());
    }
    fn record_u64(&mut self, field: &tracing::field::Field, value: u64) {
        self.add(field, value.into());
    }
    fn record_bool(&mut self, field: &tracing::field::Field, value: bool) {
        self.add(field, value.into());
    }
    fn record_f64(&mut self, field: &tracing::field::Field, value: f64) {
        self.add(field, value.into());
    }
    fn record_error(
        &mut self,
        field: &tracing::field::Field,
        value: &(dyn std::error::Error + 'static),
    ) {
        self.add(field, value.to_string().into());
    }
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.add(field, format!("{value:?}").into());
    }
}

/// The level as flux's controllers name it: zap's `debug`, `info` and `error`, the only ones
/// `flux logs --level` knows. What we log as a warning (a failed reconciliation among them)
/// flux's controllers log as an error.
fn flux_level(level: &tracing::Level) -> &'static str {
    match *level {
        tracing::Level::ERROR | tracing::Level::WARN => "error",
        tracing::Level::INFO => "info",
        _ => "debug",
    }
}

/// One event as one JSON line.
fn flux_json_line(level: &tracing::Level, ts: &str, target: &str, fields: Fields) -> String {
    let mut seen = std::collections::HashSet::new();
    let mut line = String::from("{");
    let mut push = |key: &str, value: &serde_json::Value| {
        if line.len() > 1 {
            line.push(',');
        }
        // Keys and values are JSON already: serializing them cannot fail.
        line.push_str(&serde_json::to_string(key).unwrap_or_default());
        line.push(':');
        line.push_str(&serde_json::to_string(value).unwrap_or_default());
    };
    push("level", &flux_level(level).into());
    push("ts", &ts.into());
    push("logger", &target.into());
    push("msg", &fields.message.into());
    for (k, v) in fields.rest {
        // A field named twice keeps its first value, as a JSON object can hold one.
        if !["level", "ts", "logger", "msg"].contains(&k.as_str()) && seen.insert(k.clone()) {
            push(&k, &v);
        }
    }
    line.push('}');
    line
}

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for FluxJson
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let ts = k8s_openapi::jiff::Timestamp::now()
            .strftime("%Y-%m-%dT%H:%M:%S%.3fZ")
            .to_string();
        let meta = event.metadata();
        writeln!(
            writer,
            "{}",
            flux_json_line(meta.level(), &ts, meta.target(), fields)
        )
    }
}

#[cfg(test)]
mod flux_json_tests {
    use super::*;

    #[test]
    fn lines_read_as_flux_controllers_write_them() {
        let fields = Fields {
            message: "reconciliation failed".into(),
            rest: vec![
                ("controllerKind".into(), "Kustomization".into()),
                ("namespace".into(), "apps".into()),
                ("name".into(), "web".into()),
                ("error".into(), "health check failed".into()),
                ("msg".into(), "shadowed".into()),
                ("name".into(), "twice".into()),
            ],
        };
        let line = flux_json_line(
            &tracing::Level::WARN,
            "2026-12-01T10:00:00.123Z",
            "ferroflux_controller::step",
            fields,
        );
        assert_eq!(
            line,
            r#"{"level":"error","ts":"2026-12-01T10:00:00.123Z","logger":"ferroflux_controller::step","msg":"reconciliation failed","controllerKind":"Kustomization","namespace":"apps","name":"web","error":"health check failed"}"#
        );
        // What `logs` prints of it.
        let printed = crate::cmd::logs::format_line(
            &line,
            &crate::cmd::logs::Filter {
                level: Some("error".into()),
                ..Default::default()
            },
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            printed,
            "2026-12-01T10:00:00.123Z error Kustomization/web.apps - reconciliation failed health check failed\n"
        );
    }

    #[test]
    fn the_formatter_names_kind_controller_kind() {
        let out = std::sync::Arc::new(std::sync::Mutex::new(Vec::<u8>::new()));
        let sink = out.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || Sink(sink.clone()))
            .event_format(FluxJson)
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!(
                kind = "GitRepository",
                namespace = "flux-system",
                name = "repo",
                revision = 3,
                "stored"
            );
        });
        let text = String::from_utf8(out.lock().unwrap().clone()).unwrap();
        let v: serde_json::Value = serde_json::from_str(text.trim_end()).unwrap();
        assert_eq!(v["level"], "info");
        assert_eq!(v["msg"], "stored");
        assert_eq!(v["controllerKind"], "GitRepository");
        assert_eq!(v["revision"], 3);
        assert!(v["ts"].as_str().unwrap().ends_with('Z'), "{text}");
        assert!(text.ends_with("}\n"), "{text}");
    }

    struct Sink(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
}
