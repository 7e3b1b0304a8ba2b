//! The promotion plan: a YAML file of our own in the fleet repository (default
//! `fleet-promotion.yaml` at its root) naming waves of clusters and the Git ref each wave's
//! clusters follow. Promoting moves that ref, wave by wave.
//!
//! ```yaml
//! # fleet-promotion.yaml
//! source: main        # the branch (or any revision) whose commit is promoted; default main
//! soak: 30s           # how long a wave stays Ready before the next starts; default 0s
//! timeout: 5m         # how long a wave may take to become Ready; default 5m
//! waves:
//!   - name: staging
//!     clusters: [staging]     # folder names under clusters/, also kubeconfig context names
//!     branch: staging         # the branch these clusters' flux-system GitRepository follows
//!   - name: production
//!     clusters: [production-eu, production-us]
//!     tag: production         # or a tag (moved with a forced push)
//!     after: [staging]        # optional; default: the wave listed before
//! ```
//!
//! Checked before anything moves: every wave has a name, clusters and exactly one of
//! branch/tag; names are unique; every cluster has a `clusters/<name>/` folder; no cluster is
//! in two waves; `after` names known waves and makes no cycle.

use ferroflux_api::duration::parse_duration;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// What a plan can be wrong about; each message names the file.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {message}")]
pub struct PlanError {
    /// The plan file.
    pub file: String,
    /// What is wrong.
    pub message: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPlan {
    source: Option<String>,
    soak: Option<String>,
    timeout: Option<String>,
    waves: Vec<RawWave>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWave {
    name: String,
    clusters: Vec<String>,
    branch: Option<String>,
    tag: Option<String>,
    after: Option<Vec<String>>,
}

/// The ref a wave's clusters follow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FollowedRef {
    /// `refs/heads/<name>`: moved forward only (fast-forward pushes).
    Branch(String),
    /// `refs/tags/<name>`: moved with a forced push.
    Tag(String),
}

impl FollowedRef {
    /// The full ref name.
    pub fn full(&self) -> String {
        match self {
            FollowedRef::Branch(b) => format!("refs/heads/{b}"),
            FollowedRef::Tag(t) => format!("refs/tags/{t}"),
        }
    }
}

/// One wave.
#[derive(Clone, Debug)]
pub struct Wave {
    /// Its name.
    pub name: String,
    /// Its clusters (folder and context names).
    pub clusters: Vec<String>,
    /// What its clusters follow.
    pub follows: FollowedRef,
    /// The waves that must succeed first.
    pub after: Vec<String>,
}

/// A checked plan; `waves` in the order they run.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The branch or revision promoted.
    pub source: String,
    /// How long a wave stays healthy before the next.
    pub soak: Duration,
    /// How long a wave may take.
    pub timeout: Duration,
    /// The waves, dependencies first.
    pub waves: Vec<Wave>,
}

impl Plan {
    /// Parses and checks `text` (the file `file`) against the repository's cluster folders.
    pub fn parse(text: &str, file: &str, clusters: &[String]) -> Result<Plan, PlanError> {
        let err = |message: String| PlanError {
            file: file.to_string(),
            message,
        };
        let raw: RawPlan = serde_saphyr::from_str(text).map_err(|e| err(e.to_string()))?;
        let duration = |field: &str, v: &Option<String>, default: Duration| match v {
            None => Ok(default),
            Some(s) => parse_duration(s).map_err(|e| err(format!("{field}: {e}"))),
        };
        let soak = duration("soak", &raw.soak, Duration::ZERO)?;
        let timeout = duration("timeout", &raw.timeout, Duration::from_secs(300))?;
        if raw.waves.is_empty() {
            return Err(err("waves: the plan has no wave".into()));
        }
        let mut waves = Vec::new();
        let mut owner: BTreeMap<&str, &str> = BTreeMap::new();
        for (i, w) in raw.waves.iter().enumerate() {
            let at = format!("waves[{i}] ({})", w.name);
            if w.name.is_empty() {
                return Err(err(format!("waves[{i}]: a wave needs a name")));
            }
            if waves.iter().any(|x: &Wave| x.name == w.name) {
                return Err(err(format!("{at}: a second wave named {:?}", w.name)));
            }
            if w.clusters.is_empty() {
                return Err(err(format!("{at}: no clusters")));
            }
            for c in &w.clusters {
                if !clusters.contains(c) {
                    return Err(err(format!(
                        "{at}: unknown cluster {c:?}: the repository has no clusters/{c}/ folder (clusters: {})",
                        clusters.join(", ")
                    )));
                }
                if let Some(other) = owner.insert(c, &w.name) {
                    return Err(err(format!(
                        "{at}: cluster {c:?} is already in wave {other:?}"
                    )));
                }
            }
            let follows = match (&w.branch, &w.tag) {
                (Some(b), None) if !b.is_empty() => FollowedRef::Branch(b.clone()),
                (None, Some(t)) if !t.is_empty() => FollowedRef::Tag(t.clone()),
                _ => {
                    return Err(err(format!(
                        "{at}: give exactly one of branch or tag (the ref its clusters follow)"
                    )));
                }
            };
            let after = match &w.after {
                Some(a) => a.clone(),
                None if i > 0 => vec![raw.waves[i - 1].name.clone()],
                None => vec![],
            };
            waves.push(Wave {
                name: w.name.clone(),
                clusters: w.clusters.clone(),
                follows,
                after,
            });
        }
        for w in &waves {
            for a in &w.after {
                if !waves.iter().any(|x| &x.name == a) {
                    return Err(err(format!(
                        "wave {:?}: after names an unknown wave {a:?}",
                        w.name
                    )));
                }
            }
        }
        let waves = order(waves).map_err(|cycle| {
            err(format!(
                "the waves' after form a cycle: {}",
                cycle.join(" -> ")
            ))
        })?;
        Ok(Plan {
            source: raw.source.unwrap_or_else(|| "main".into()),
            soak,
            timeout,
            waves,
        })
    }
}

/// The waves with every wave after those it depends on (stable: the file's order otherwise),
/// or a cycle.
fn order(waves: Vec<Wave>) -> Result<Vec<Wave>, Vec<String>> {
    let mut done: BTreeSet<String> = BTreeSet::new();
    let mut out = Vec::new();
    let mut left = waves;
    while !left.is_empty() {
        let ready = left
            .iter()
            .position(|w| w.after.iter().all(|a| done.contains(a)));
        match ready {
            Some(i) => {
                let w = left.remove(i);
                done.insert(w.name.clone());
                out.push(w);
            }
            None => return Err(cycle(&left)),
        }
    }
    Ok(out)
}

/// A cycle among `left` (every wave there waits for another there).
fn cycle(left: &[Wave]) -> Vec<String> {
    let mut path: Vec<String> = vec![left[0].name.clone()];
    loop {
        let Some(current) = left.iter().find(|w| Some(&w.name) == path.last()) else {
            return path;
        };
        let Some(next) = current
            .after
            .iter()
            .find(|a| left.iter().any(|w| &&w.name == a))
        else {
            return path;
        };
        if let Some(at) = path.iter().position(|p| p == next) {
            let mut c = path[at..].to_vec();
            c.push(next.clone());
            return c;
        }
        path.push(next.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clusters() -> Vec<String> {
        ["staging", "canary", "production"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    #[test]
    fn waves_run_after_what_they_name() {
        let plan = Plan::parse(
            "soak: 10s\nwaves:\n- name: production\n  clusters: [production]\n  tag: production\n  after: [canary]\n- name: staging\n  clusters: [staging]\n  branch: staging\n  after: []\n- name: canary\n  clusters: [canary]\n  branch: canary\n  after: [staging]\n",
            "fleet-promotion.yaml",
            &clusters(),
        )
        .unwrap();
        let names: Vec<&str> = plan.waves.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names, ["staging", "canary", "production"]);
        assert_eq!(plan.soak, Duration::from_secs(10));
        assert_eq!(plan.source, "main");
        assert_eq!(plan.waves[2].follows.full(), "refs/tags/production");
    }

    #[test]
    fn a_cycle_is_named() {
        let e = Plan::parse(
            "waves:\n- name: a\n  clusters: [staging]\n  branch: a\n  after: [b]\n- name: b\n  clusters: [canary]\n  branch: b\n",
            "plan.yaml",
            &clusters(),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "plan.yaml: the waves' after form a cycle: a -> b -> a"
        );
    }

    #[test]
    fn an_unknown_cluster_is_named() {
        let e = Plan::parse(
            "waves:\n- name: prod\n  clusters: [production-eu]\n  branch: production\n",
            "plan.yaml",
            &clusters(),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "plan.yaml: waves[0] (prod): unknown cluster \"production-eu\": the repository has no clusters/production-eu/ folder (clusters: staging, canary, production)"
        );
    }

    #[test]
    fn other_mistakes() {
        for (text, message) in [
            ("waves: []\n", "waves: the plan has no wave"),
            (
                "waves:\n- name: a\n  clusters: [staging]\n",
                "waves[0] (a): give exactly one of branch or tag",
            ),
            (
                "waves:\n- name: a\n  clusters: [staging]\n  branch: a\n- name: a\n  clusters: [canary]\n  branch: b\n",
                "waves[1] (a): a second wave named \"a\"",
            ),
            (
                "waves:\n- name: a\n  clusters: [staging]\n  branch: a\n- name: b\n  clusters: [staging]\n  branch: b\n",
                "cluster \"staging\" is already in wave \"a\"",
            ),
            (
                "waves:\n- name: a\n  clusters: [staging]\n  branch: a\n  after: [z]\n",
                "wave \"a\": after names an unknown wave \"z\"",
            ),
            ("soak: soon\nwaves: []\n", "soak: "),
        ] {
            let e = Plan::parse(text, "p.yaml", &clusters()).unwrap_err();
            assert!(e.to_string().contains(message), "{text}: {e}");
        }
    }
}
