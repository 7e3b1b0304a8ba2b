//! The template set: named parse trees that share `define`s, one function map and the
//! `missingkey` option, as Go's `*template.Template` with its associated templates.

use std::sync::Arc;

use crate::func::FuncMap;

/// What a map lookup of a missing key gives (Go's `missingkey=` option).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MissingKey {
    /// `missingkey=default` / `invalid`: no value; printed as `<no value>`.
    #[default]
    Invalid,
    /// `missingkey=zero`: the map element type's zero value, a nil `interface{}` (Helm's
    /// normal mode). Printed as `<no value>` too; a field of it is an error.
    Zero,
    /// `missingkey=error`: execution stops with `map has no entry for key "x"` (Helm's strict
    /// mode).
    Error,
}

/// A set of named templates (one per parsed file plus one per `define`), sharing functions
/// and options. Cloning is cheap: parse trees are shared, and a clone's later parses do not
/// change the original (Go's `Template.Clone`).
#[derive(Clone, Default)]
pub struct Template {
    pub(crate) funcs: Arc<FuncMap>,
    pub(crate) missing_key: MissingKey,
}

impl Template {
    /// An empty set with no host functions (the builtins are always there).
    pub fn new() -> Template {
        Template::default()
    }

    /// Sets the host functions (replacing any set before).
    pub fn with_funcs(mut self, funcs: FuncMap) -> Template {
        self.funcs = Arc::new(funcs);
        self
    }

    /// The host functions.
    pub fn funcs(&self) -> &FuncMap {
        &self.funcs
    }

    /// Sets Go's `missingkey` option.
    pub fn with_missing_key(mut self, m: MissingKey) -> Template {
        self.missing_key = m;
        self
    }

    /// The `missingkey` option in force.
    pub fn missing_key(&self) -> MissingKey {
        self.missing_key
    }
}
