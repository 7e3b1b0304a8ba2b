//! What Flux's image-automation-controller does to files, below Git and Kubernetes.
//!
//! Owns: the "Setters" update strategy ([`setters`]: find the `{"$imagepolicy": "ns:name"}`
//! markers in a tree's YAML files and rewrite the marked values to the policies' latest image
//! references, reporting every change per file and object), the image-reference check Flux
//! applies to each policy first, and the commit message template ([`message`]: Go
//! text/template with sprig's hermetic functions over Flux's `TemplateData`).
//!
//! Must not touch: files, Git, Kubernetes or the clock. The caller reads the tree (paths
//! relative to the update root, bytes), passes the ready policies, writes the changed files
//! back and commits with the rendered message; keeping this pure makes every rule testable on
//! its own and lets the controller decide about I/O and retries.
//!
//! Differs from Flux on purpose: a changed file is edited in place (only the marked scalars'
//! bytes change) instead of being re-serialised through kyaml, which re-indents sequences and
//! re-wraps text; the values written and the changes reported are the same.
//!
//! Tests: unit tests per module; one integration-test binary (`tests/imageupdate/`) runs
//! Flux's own `internal/update/testdata` (copied under `tests/flux-testdata/`) and Flux's
//! commit message cases.

mod imageref;
pub mod message;
mod scalar;
pub mod setters;

pub use message::{MessageError, render_message};
pub use setters::{
    Change, Changes, ImagePolicy, ImageRef, ObjectChanges, ObjectId, SetterError, SetterUpdate,
    update_with_setters,
};
