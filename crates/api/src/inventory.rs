//! Inventory ids in Flux's format: `<namespace>_<name>_<group>_<kind>`.

use std::fmt;

/// One object recorded in a Kustomization's inventory (Flux's `ObjMetadata`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectId {
    /// Empty for cluster-scoped objects.
    pub namespace: String,
    /// The object's name.
    pub name: String,
    /// Empty for the core group.
    pub group: String,
    /// The object's kind.
    pub kind: String,
}

/// An inventory id that does not have Flux's four `_`-separated parts.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid inventory id {0:?}: expected <namespace>_<name>_<group>_<kind>")]
pub struct ObjectIdError(pub String);

impl ObjectId {
    /// An id from its four parts.
    pub fn new(
        namespace: impl Into<String>,
        name: impl Into<String>,
        group: impl Into<String>,
        kind: impl Into<String>,
    ) -> Self {
        ObjectId {
            namespace: namespace.into(),
            name: name.into(),
            group: group.into(),
            kind: kind.into(),
        }
    }

    /// Parses an id. Names and namespaces are DNS names and kinds are identifiers, so none holds
    /// `_`; a group cannot either. Names of RBAC objects may contain `:` but never `_`, which is
    /// why Flux picked this separator.
    pub fn parse(id: &str) -> Result<Self, ObjectIdError> {
        let parts: Vec<&str> = id.split('_').collect();
        match parts.as_slice() {
            [namespace, name, group, kind] if !name.is_empty() && !kind.is_empty() => {
                Ok(ObjectId::new(*namespace, *name, *group, *kind))
            }
            _ => Err(ObjectIdError(id.to_string())),
        }
    }

    /// `Kind/namespace/name`, or `Kind/name` for cluster-scoped objects, as Flux's change sets
    /// and `tree` print them.
    pub fn display_name(&self) -> String {
        if self.namespace.is_empty() {
            format!("{}/{}", self.kind, self.name)
        } else {
            format!("{}/{}/{}", self.kind, self.namespace, self.name)
        }
    }
}

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}_{}_{}_{}",
            self.namespace, self.name, self.group, self.kind
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_flux() {
        assert_eq!(
            ObjectId::new("default", "podinfo", "", "Service").to_string(),
            "default_podinfo__Service"
        );
        assert_eq!(
            ObjectId::new("", "podinfo", "", "Namespace").to_string(),
            "_podinfo__Namespace"
        );
        assert_eq!(
            ObjectId::new("podinfo", "podinfo", "apps", "Deployment").to_string(),
            "podinfo_podinfo_apps_Deployment"
        );
    }

    #[test]
    fn round_trips_and_rejects() {
        for id in [
            "default_podinfo__Service",
            "_podinfo__Namespace",
            "_system:controller__ClusterRole",
            "flux-system_apps_kustomize.toolkit.fluxcd.io_Kustomization",
        ] {
            assert_eq!(ObjectId::parse(id).unwrap().to_string(), id);
        }
        for bad in ["", "a_b_c", "a_b_c_d_e", "ns__g_Kind", "ns_name_g_"] {
            assert_eq!(ObjectId::parse(bad), Err(ObjectIdError(bad.to_string())));
        }
    }

    #[test]
    fn display_names() {
        assert_eq!(
            ObjectId::new("apps", "podinfo", "apps", "Deployment").display_name(),
            "Deployment/apps/podinfo"
        );
        assert_eq!(
            ObjectId::new("", "apps", "", "Namespace").display_name(),
            "Namespace/apps"
        );
    }
}
