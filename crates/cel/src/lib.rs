//! An interpreter for the subset of Google's Common Expression Language (CEL) that Flux users
//! write in `healthCheckExprs`, `dependsOn[].readyExpr`, a Receiver's `resourceFilter` and a
//! Provider's `commitStatusExpr`, evaluated over
//! JSON objects (`serde_json::Value`), with the semantics and error wording of cel-go as Flux
//! configures it (cross-type numeric comparisons, optional types, the strings, sets and base64
//! extensions).
//!
//! This crate owns the language only: lexing, parsing, evaluation and the error messages users
//! see. It must not touch Kubernetes objects beyond the JSON it is given, nor decide health or
//! what is reconciled: the controllers map results to statuses and actions.
//!
//! The subset:
//! - literals: int (decimal, `0x` hex), uint (`1u`), double (`1.5`, `1e3`), strings in single,
//!   double and triple quotes with escapes, raw `r'..'` and bytes `b'..'` strings, `true`,
//!   `false`, `null`, lists `[a, b]`, maps `{'k': v}` (keys: string, int, uint, bool);
//! - operators with CEL's precedence: `?:`, `||`, `&&` (absorbing errors as CEL does: `false &&
//!   <error>` is false either way round), `== != < <= > >=` (numbers compare across int, uint
//!   and double; `==` between other different types is false), `in`, `+ - * / %` (integer
//!   overflow and division by zero are errors; `+` on strings, bytes and lists), unary `-`, `!`;
//! - selection `a.b` (`no such key: b` when absent), indexing `a[0]`, `a['k']`, optional
//!   selection `a.?b`, `a[?k]`, `[?x]`, `{?k: v}` with `hasValue()`, `value()`, `orValue(x)`,
//!   `or(o)`, `optional.of`, `optional.none`, `optional.ofNonZeroValue`, lists' `first()`/`last()`;
//! - macros: `has(a.b)`, `all`, `exists`, `exists_one`, `filter`, `map` (2 and 3 arguments) over
//!   lists and map keys;
//! - functions: `size`, `startsWith`, `endsWith`, `contains`, `matches` (the `regex` crate, RE2
//!   syntax), `int`, `uint`, `double`, `string`, `bool`, `bytes`, `dyn`, `type`, `duration`,
//!   `timestamp` (with comparison, arithmetic and the `get*` accessors in UTC); from the strings
//!   extension `charAt`, `indexOf`, `lastIndexOf`, `lowerAscii`, `upperAscii`, `replace`,
//!   `split`, `substring`, `trim`, `join`, `reverse`; `sets.contains`, `sets.equivalent`,
//!   `sets.intersects`; `base64.encode`, `base64.decode`.
//!
//! Refused, with an error naming what: any other function (`unknown function 'x'`, at parse
//! time, where cel-go would fail only at evaluation), `strings.format`/`quote`, message
//! construction (`T{...}`), root-qualified names (`.a`), two-variable comprehensions, time
//! zones other than UTC, expressions nested deeper than 100 levels (a parse error, never a stack
//! overflow), and evaluations beyond a million steps.

mod eval;
mod functions;
mod lexer;
mod parser;
mod time;
mod value;

pub use value::Value;

/// Why an expression could not be parsed or evaluated, worded as Flux words it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The source is not a valid expression of the subset.
    #[error("failed to parse the CEL expression '{expression}': {line}:{column}: {reason}")]
    Parse {
        /// The source text.
        expression: String,
        /// 1-based line of the problem.
        line: usize,
        /// 1-based column (in characters) of the problem.
        column: usize,
        /// What is wrong.
        reason: String,
    },
    /// Evaluation failed (a missing key, a type mismatch, an overflow...).
    #[error("failed to evaluate the CEL expression '{expression}': {reason}")]
    Evaluate {
        /// The source text.
        expression: String,
        /// What failed, in cel-go's words where known.
        reason: String,
    },
    /// `evaluate_bool` got a value that is not a bool.
    #[error("failed to evaluate CEL expression as boolean: '{expression}'")]
    NotBool {
        /// The source text.
        expression: String,
    },
}

/// A parsed CEL expression.
#[derive(Debug)]
pub struct Expression {
    source: String,
    ast: parser::Expr,
}

/// 1-based line and column (in characters) of byte offset `at` in `src`.
fn line_col(src: &str, at: usize) -> (usize, usize) {
    let before = src.get(..at).unwrap_or(src);
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    (line, col)
}

impl Expression {
    /// Parses `source`; `Err(Error::Parse)` with a position and a reason.
    pub fn parse(source: &str) -> Result<Expression, Error> {
        let fail = |(at, reason): (usize, String)| {
            let (line, column) = line_col(source, at);
            Error::Parse {
                expression: source.to_string(),
                line,
                column,
                reason,
            }
        };
        let toks = lexer::lex(source).map_err(fail)?;
        let ast = parser::parse(toks).map_err(fail)?;
        Ok(Expression {
            source: source.to_string(),
            ast,
        })
    }

    /// The source text.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Evaluates with `variables` as the top-level identifiers (for a health check: the
    /// object's own top-level fields `apiVersion`, `kind`, `metadata`, `spec`, `status`...; for
    /// readyExpr: `self` and `dep`, each a whole object).
    pub fn evaluate(
        &self,
        variables: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<Value, Error> {
        eval::Env::new(variables)
            .eval(&self.ast)
            .map_err(|reason| Error::Evaluate {
                expression: self.source.clone(),
                reason,
            })
    }

    /// `evaluate()`, then the result must be a bool.
    pub fn evaluate_bool(
        &self,
        variables: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<bool, Error> {
        match self.evaluate(variables)? {
            Value::Bool(b) => Ok(b),
            _ => Err(Error::NotBool {
                expression: self.source.clone(),
            }),
        }
    }
}

#[cfg(test)]
mod tests;
