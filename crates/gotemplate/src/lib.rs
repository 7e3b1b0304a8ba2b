//! Go's `text/template`, as Helm v4 (built with Go 1.24) runs it: a pure library, no I/O.
//!
//! Owns: the dynamic value model ([`Value`], [`Map`], host [`Object`]s), Go's `fmt` printing
//! ([`fmt`]), the host-function interface ([`FuncMap`], [`Func`], [`Signature`], [`Type`],
//! [`CallContext`]), and template sets ([`Template`]): Go's lexer, parser and executor with
//! Go's error messages and positions.
//!
//! Must not touch: files, the network, charts or Helm's functions. Helm's `include`, `tpl`,
//! `required`, `toYaml` and sprig's library live in `crates/helm` and `crates/sprig`; they are
//! host functions built on [`CallContext`] (run a named template of the set, parse and run new
//! text in a clone of the set, know the running template's name, reach per-execution state).
//!
//! ```
//! use ferroflux_gotemplate::{Func, FuncMap, MissingKey, Template, Type, Value};
//!
//! let mut funcs = FuncMap::new();
//! funcs.insert("upper", Func::fixed(&[Type::String], |_, a| {
//!     Ok(Value::from(a[0].as_str().unwrap_or_default().to_uppercase()))
//! }));
//! let mut set = Template::named("gotpl").with_funcs(funcs).with_missing_key(MissingKey::Zero);
//! set.parse("t.yaml", "{{ define \"n\" }}{{ .name | upper }}{{ end }}x={{ template \"n\" .Values }}")
//!     .unwrap();
//! let data = Value::from_json(&serde_json::json!({ "Values": { "name": "web" } }));
//! assert_eq!(set.execute("t.yaml", &data).unwrap(), "x=WEB");
//! ```
//!
//! What Helm needs and how it maps:
//! - one set for a whole chart: [`Template::parse`] each file under its name; `define`s are
//!   global, a later definition replaces an earlier one, a blank one never replaces a real one;
//! - `missingkey=zero` (Helm's default) and `missingkey=error` (`--strict`): [`MissingKey`];
//!   Helm itself then blanks `<no value>` in the output, which this crate prints as Go does;
//! - `include`: [`CallContext::execute_template`]; `tpl`: clone [`CallContext::templates`],
//!   [`Template::parse`] the text into the clone, [`CallContext::execute_in`] it;
//! - per-render state (Helm's include counters): [`Template::execute_with_state`] and
//!   [`CallContext::state`].
//!
//! Deep recursion (template calls, `include`, nested parentheses, deeply nested values) never
//! overflows the stack: recursion continues on heap-allocated stack segments (`stacker`), and
//! Go's own limit, `exceeded maximum template depth (100000)`, stops runaway template calls.
//! Nested executions through [`CallContext`] count towards the same depth (in Go each
//! `ExecuteTemplate` starts at 0; Helm stops `include` recursion at 1000 itself).
//!
//! Known differences from Go:
//! - complex constants (`1+2i`) parse but fail at execution (`complex constant … is not
//!   supported`); channels and Go function values do not exist, so `call` always fails
//!   (`non-function NODE of type …`, `call of nil`);
//! - a string holding bytes that are not UTF-8 (`.Files.Get` of a binary file, a byte-wise
//!   `slice` through a character) keeps them exactly through [`gostr`]'s escapes, and `len`,
//!   `index`, `slice`, `%q`, `%x` and `lt`/`gt` see Go's bytes, as does a `"\xff"` or octal
//!   escape in template text; `index` of a string gives an `int`, not a `uint8`;
//! - only `int`, `int64` and `float64` numbers exist (no `uint`, `float32`); typed slices such as
//!   `[]string` are host [`Object`]s whose [`Object::as_value`] gives the list;
//! - `%#v` of containers approximates Go's syntax; `%q` and `js` decide printability with
//!   Rust's Unicode tables, newer than Go 1.24's (Unicode 15.0).
//!
//! Tests: unit tests per module, and one integration-test binary (`tests/gotemplate/`): the
//! table `tests/cases.txt`, templates whose `[helm]` cases were recorded from Helm 4.2.3's own
//! engine (regenerate with `tests/oracle/render.py` in a venv with `helm-python-sdk==0.2.2`),
//! including printf sweeps (97 formats × 39 values, 448 code points under `%q`) and 90
//! parse/exec error texts, read by crates/testkit's case reader; `host` (include, tpl, host
//! objects, typed parameters); `fuzz`, seeded property tests (issue 20): the parser,
//! parse→execute of generated templates and `printf` never panic, deep nesting never
//! overflows. Benchmark: `cargo run --release -p ferroflux-gotemplate --example bench-render`.

mod builtins;
pub mod error;
mod exec;
pub mod fmt;
pub mod func;
pub mod gostr;
mod lex;
mod parse;
pub mod template;
pub mod value;

pub use error::{ExecError, ParseError};
pub use func::{CallContext, Func, FuncError, FuncMap, Signature, Type};
pub use template::{MissingKey, Template};
pub use value::{Map, Object, Value};
