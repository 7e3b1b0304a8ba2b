//! Go's `text/template`, as Helm v4 (built with Go 1.24+) runs it: a pure library, no I/O.
//!
//! Owns: the dynamic value model ([`Value`], [`Map`], host [`Object`]s), Go's `fmt` printing
//! ([`fmt`]), the host-function interface ([`FuncMap`], [`Func`], [`Signature`], [`Type`],
//! [`CallContext`]), and (in later steps) the lexer, parser and executor of template sets with
//! Go's error messages.
//!
//! Must not touch: files, the network, charts or Helm's functions. Helm's `include`, `tpl`,
//! `required`, `toYaml` and sprig's library live in `crates/helm` and `crates/sprig`; they are
//! host functions built on [`CallContext`] (run a named template of the set, parse and run new
//! text in a clone of the set, know the running template's name, reach per-execution state).
//!
//! Differences from Go are listed in each module's docs.

pub mod error;
pub mod fmt;
pub mod func;
pub mod template;
pub mod value;

pub use error::{ExecError, ParseError};
pub use func::{CallContext, Func, FuncError, FuncMap, Signature, Type};
pub use template::{MissingKey, Template};
pub use value::{Map, Object, Value};
