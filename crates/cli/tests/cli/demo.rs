//! README command 1 as a newcomer runs it: `ferroflux demo` bootstraps two local clusters from
//! the example fleet repository, shows them Ready, promotes podinfo's chart (a HelmRelease of a
//! chart kept in the repository) from staging to production,
//! cleans up and exits 0.

use std::process::Command;

#[test]
fn the_demo_bootstraps_two_clusters_and_promotes_by_commit() {
    let o = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .arg("demo")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "demo failed:\n{out}\n{err}");
    for cluster in ["staging", "production"] {
        for ks in ["flux-system", "infrastructure", "apps"] {
            assert!(
                out.lines()
                    .any(|l| l.starts_with(&format!("✔ {cluster:<11} {ks:<15} ready"))),
                "{cluster}/{ks} never reported ready:\n{out}"
            );
        }
    }
    // podinfo is a HelmRelease of the chart kept in the repository: after the staging commit
    // staging's release is chart 6.8.0 (and runs its appVersion) while production stays on
    // 6.7.1; after the production commit both are on 6.8.0.
    let images: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("podinfo chart"))
        .collect();
    assert_eq!(
        images,
        [
            "staging     podinfo chart podinfo@6.8.0 runs ghcr.io/stefanprodan/podinfo:6.8.0",
            "production  podinfo chart podinfo@6.7.1 runs ghcr.io/stefanprodan/podinfo:6.7.1",
            "staging     podinfo chart podinfo@6.8.0 runs ghcr.io/stefanprodan/podinfo:6.8.0",
            "production  podinfo chart podinfo@6.8.0 runs ghcr.io/stefanprodan/podinfo:6.8.0",
        ],
        "{out}"
    );
    // `get helmreleases -A` on each cluster, after both are Ready, lists the release installed.
    assert!(
        out.contains("$ ferroflux get helmreleases --all-namespaces --context staging"),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("podinfo") && l.contains("podinfo") && l.contains("True")),
        "no Ready HelmRelease listed:\n{out}"
    );
    assert!(out.contains("$ ferroflux fleet status"), "{out}");
    assert!(out.contains("demo finished in"), "{out}");
}
