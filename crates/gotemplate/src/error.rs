//! The two failures of a template, with Go's wording: a parse error
//! (`template: NAME:LINE: MESSAGE`) and an execution error
//! (`template: NAME:LINE:COL: executing "NAME" at <NODE>: MESSAGE`).

/// A template could not be parsed. The text is Go's, e.g.
/// `template: mychart/templates/x.yaml:3: unexpected "}" in operand`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ParseError {
    /// The template (file) name being parsed.
    pub name: String,
    /// The one-based line of the error.
    pub line: usize,
    /// The whole message, as Go prints it.
    pub message: String,
}

/// A template failed while executing. The text is Go's, e.g.
/// `template: x.yaml:2:9: executing "x.yaml" at <.Values.a.b>: nil pointer evaluating interface {}.b`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ExecError {
    /// The name of the template that was executing.
    pub name: String,
    /// The whole message, as Go prints it.
    pub message: String,
}

impl ExecError {
    /// An error with a complete message.
    pub fn new(name: impl Into<String>, message: impl Into<String>) -> ExecError {
        ExecError {
            name: name.into(),
            message: message.into(),
        }
    }
}
