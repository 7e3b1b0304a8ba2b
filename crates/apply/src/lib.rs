//! Applying a built set of objects to a cluster the way Flux's kustomize-controller does.
//!
//! Owns: the stage and kind order of a staged server-side apply, drift classification
//! (created / configured / unchanged) and the change set, the human report of a drift (`dyff`,
//! what `diff` prints, Secret values masked), the inventory of applied objects and
//! what a new inventory makes stale (prune candidates, in reverse apply order), and health
//! assessment of live objects in the spirit of kstatus, and a Kustomization's `spec.ignore` rules
//! (fields left to the cluster). The `applier` module talks to the API server
//! through kube-rs with dynamic objects; the rest is pure. It knows nothing of Git, of kustomize
//! builds (it borrows only the engine's YAML emitter, to print values in a report) or of the
//! reconcile loop that calls it.

pub mod applier;
pub mod changeset;
pub mod dyff;
pub mod health;
pub mod ignore;
pub mod inventory;
pub mod normalize;
pub mod object;
pub mod order;

pub use applier::{Applier, ApplyError, ApplyOptions, DryRun};
pub use changeset::{Action, Change, ChangeSet};
pub use health::{Health, assess};
pub use inventory::{InventoryObject, inventory_of, stale_entries};
