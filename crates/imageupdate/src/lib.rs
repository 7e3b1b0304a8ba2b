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
//! ```
//! use std::collections::BTreeMap;
//! use ferroflux_imageupdate::{ImagePolicy, ImageRef, render_message, update_with_setters};
//!
//! let policy = ImagePolicy {
//!     namespace: "flux-system".into(),
//!     name: "app".into(),
//!     latest: ImageRef { name: "ghcr.io/org/app".into(), tag: "1.1.0".into(), digest: None },
//! };
//! let file = "image: ghcr.io/org/app:1.0.0 # {\"$imagepolicy\": \"flux-system:app\"}\n";
//! let out = update_with_setters([("apps/app.yaml", file)], &[policy]).unwrap();
//! assert_eq!(
//!     out.files["apps/app.yaml"],
//!     b"image: ghcr.io/org/app:1.1.0 # {\"$imagepolicy\": \"flux-system:app\"}\n"
//! );
//! let template = "{{ range .Changed.Changes }}{{ .OldValue }} -> {{ .NewValue }}{{ end }}";
//! let msg = render_message(Some(template), "flux-system", "auto", &out.changes, &BTreeMap::new());
//! assert_eq!(msg.unwrap(), "ghcr.io/org/app:1.0.0 -> ghcr.io/org/app:1.1.0");
//! ```
//!
//! Differs from Flux:
//! - on purpose, a changed file is edited in place (only the marked scalars' bytes change)
//!   instead of being re-serialised through kyaml, which re-indents sequences and re-wraps
//!   text; the values written and the changes reported are the same. A new value is quoted
//!   where kyaml would quote it (double quotes for a plain value that would not read back as
//!   that string), except that go-yaml's emitter picks single quotes for some plain-unsafe
//!   strings that are not YAML collections, which an image reference never is;
//! - a document that is not a mapping has its markers rewritten and its changes recorded
//!   under an empty identifier; kyaml cannot read an identity from it, so Flux records none;
//! - a `kind: List` document is one object here; kyaml's reader unwraps its `items`, so Flux
//!   identifies a change inside by the item;
//! - a plain scalar that was typed (`1`, `true`) and gets a string value is written plainly;
//!   go-yaml v3 would keep its old tag (`!!int v2`).
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
