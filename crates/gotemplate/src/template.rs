//! The template set: named parse trees that share `define`s, one function map and the
//! `missingkey` option, as Go's `*template.Template` with its associated templates.
//!
//! Parsing a file adds its own tree and every `define`/`block` in it to the set. A later
//! definition of a name replaces an earlier one, except that an empty (blank) body never
//! replaces a non-empty one: Go's `AddParseTree`/`associate` rule, which Helm relies on when it
//! parses every template of a chart and its subcharts into one set.

use std::any::Any;
use std::collections::HashMap;
use std::sync::Arc;

use crate::error::{ExecError, ParseError};
use crate::exec;
use crate::func::FuncMap;
use crate::parse::{self, Tree};
use crate::value::Value;

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
    pub(crate) name: Arc<str>,
    pub(crate) funcs: Arc<FuncMap>,
    pub(crate) missing_key: MissingKey,
    pub(crate) trees: Arc<HashMap<String, Arc<Tree>>>,
}

impl Template {
    /// An empty set with no host functions (the builtins are always there), named "".
    pub fn new() -> Template {
        Template::default()
    }

    /// An empty set named `name` (Go's `template.New(name)`; Helm names its set `gotpl`).
    /// The name appears in `no template "x" associated with template "NAME"`.
    pub fn named(name: &str) -> Template {
        Template {
            name: name.into(),
            ..Template::default()
        }
    }

    /// The set's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Sets the host functions (replacing any set before). Set them before parsing: the
    /// parser rejects calls of functions it does not know, as Go's does.
    pub fn with_funcs(mut self, funcs: FuncMap) -> Template {
        self.funcs = Arc::new(funcs);
        self
    }

    /// [`Template::with_funcs`] with a map shared with other sets (no copy of it is made).
    pub fn with_shared_funcs(mut self, funcs: Arc<FuncMap>) -> Template {
        self.funcs = funcs;
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

    /// Parses `text` as the template `name` and adds it, with every template it defines, to
    /// the set (Go's `t.New(name).Parse(text)`). On error the set is unchanged.
    pub fn parse(&mut self, name: &str, text: &str) -> Result<(), ParseError> {
        let funcs = self.funcs.clone();
        let has_func = move |f: &str| funcs.contains(f) || exec::is_builtin(f);
        let trees = parse::parse(name, text, &has_func)?;
        let map = Arc::make_mut(&mut self.trees);
        for tree in trees {
            if let Some(old) = map.get(&tree.name)
                && tree.is_empty()
                && !old.is_empty()
            {
                continue;
            }
            map.insert(tree.name.clone(), Arc::new(tree));
        }
        Ok(())
    }

    /// Whether the set has a template called `name`.
    pub fn has_template(&self, name: &str) -> bool {
        self.trees.contains_key(name)
    }

    /// The names of the templates in the set, sorted.
    pub fn template_names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.trees.keys().cloned().collect();
        v.sort();
        v
    }

    /// Executes the template `name` with `data` as dot and `$` (Go's `ExecuteTemplate`).
    pub fn execute(&self, name: &str, data: &Value) -> Result<String, ExecError> {
        exec::execute(self, name, data, None, 0)
    }

    /// Like [`Template::execute`], with per-execution host state that host functions reach
    /// through [`crate::CallContext::state`].
    pub fn execute_with_state(
        &self,
        name: &str,
        data: &Value,
        state: &mut (dyn Any + Send),
    ) -> Result<String, ExecError> {
        exec::execute(self, name, data, Some(state), 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_definitions_replace_earlier_ones_but_blank_ones_do_not() {
        let mut t = Template::named("gotpl");
        t.parse("a", "{{define \"x\"}}A{{end}}").unwrap();
        t.parse("b", "{{define \"x\"}}B{{end}}").unwrap();
        assert_eq!(t.execute("x", &Value::Nil).unwrap(), "B");
        t.parse("c", "{{define \"x\"}}  {{end}}").unwrap();
        assert_eq!(t.execute("x", &Value::Nil).unwrap(), "B");
        assert_eq!(t.template_names(), vec!["a", "b", "c", "x"]);
    }

    #[test]
    fn clones_do_not_see_later_parses() {
        let mut t = Template::new();
        t.parse("a", "A").unwrap();
        let mut c = t.clone();
        c.parse("a", "C").unwrap();
        assert_eq!(t.execute("a", &Value::Nil).unwrap(), "A");
        assert_eq!(c.execute("a", &Value::Nil).unwrap(), "C");
    }

    #[test]
    fn a_failed_parse_leaves_the_set_alone() {
        let mut t = Template::new();
        t.parse("a", "A").unwrap();
        assert!(t.parse("a", "{{ oops }}").is_err());
        assert_eq!(t.execute("a", &Value::Nil).unwrap(), "A");
    }

    #[test]
    fn unknown_templates_are_named_like_go() {
        let t = Template::named("gotpl");
        assert_eq!(
            t.execute("nope", &Value::Nil).unwrap_err().to_string(),
            "template: no template \"nope\" associated with template \"gotpl\""
        );
    }
}
