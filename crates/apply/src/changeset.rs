//! What an apply did to each object, in the words of Flux's change sets and events.

use ferroflux_api::ObjectId;
use std::fmt;

/// What happened, or would happen, to one object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// The object did not exist and was created.
    Created,
    /// The object existed and the apply changed it.
    Configured,
    /// The object existed and the apply changed nothing.
    Unchanged,
    /// The object was pruned or deleted.
    Deleted,
    /// Left alone on purpose (the `ssa: Ignore` or `reconcile: disabled` annotation, or
    /// `IfNotPresent` on an existing object).
    Skipped,
}

impl Action {
    /// The word Flux's change sets and events use.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Created => "created",
            Action::Configured => "configured",
            Action::Unchanged => "unchanged",
            Action::Deleted => "deleted",
            Action::Skipped => "skipped",
        }
    }
}

/// One line of a change set: `Deployment/apps/podinfo configured`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// The object.
    pub id: ObjectId,
    /// What happened to it.
    pub action: Action,
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.id.display_name(), self.action.as_str())
    }
}

/// The change set of one apply or prune, in the order the objects were handled.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChangeSet {
    /// One entry per object, in the order handled.
    pub entries: Vec<Change>,
}

impl ChangeSet {
    /// Records what happened to `id`.
    pub fn push(&mut self, id: ObjectId, action: Action) {
        self.entries.push(Change { id, action });
    }

    /// Appends `other`'s entries after this one's.
    pub fn extend(&mut self, other: ChangeSet) {
        self.entries.extend(other.entries);
    }

    /// True when anything was created, configured or deleted.
    pub fn has_changes(&self) -> bool {
        self.entries.iter().any(|c| {
            matches!(
                c.action,
                Action::Created | Action::Configured | Action::Deleted
            )
        })
    }

    /// The lines Flux puts in its events: only what changed, one per line.
    pub fn changes_message(&self) -> String {
        self.entries
            .iter()
            .filter(|c| {
                matches!(
                    c.action,
                    Action::Created | Action::Configured | Action::Deleted
                )
            })
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_read_like_flux() {
        let mut set = ChangeSet::default();
        set.push(
            ObjectId::new("", "apps", "", "Namespace"),
            Action::Unchanged,
        );
        set.push(
            ObjectId::new("apps", "podinfo", "apps", "Deployment"),
            Action::Configured,
        );
        set.push(
            ObjectId::new("apps", "old", "", "ConfigMap"),
            Action::Deleted,
        );
        assert!(set.has_changes());
        assert_eq!(
            set.changes_message(),
            "Deployment/apps/podinfo configured\nConfigMap/apps/old deleted"
        );
        assert_eq!(set.entries[0].to_string(), "Namespace/apps unchanged");
        let mut quiet = ChangeSet::default();
        quiet.push(
            ObjectId::new("", "apps", "", "Namespace"),
            Action::Unchanged,
        );
        assert!(!quiet.has_changes());
    }
}
