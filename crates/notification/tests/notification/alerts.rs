//! Which Alerts an event matches, the metadata an alert adds, and the rate limit.

use crate::test_event;
use ferroflux_api::notification::Alert;
use ferroflux_notification::alert::{RateLimiter, matches, rate_limit_key};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

fn alert(json: &str) -> Alert {
    serde_json::from_str(json).unwrap()
}

fn no_labels() -> Option<BTreeMap<String, String>> {
    panic!("labels looked up without matchLabels")
}

const BASE: &str = r#"{"apiVersion":"notification.toolkit.fluxcd.io/v1beta3","kind":"Alert",
 "metadata":{"name":"a","namespace":"gitops-system"},
 "spec":{"providerRef":{"name":"slack"},"eventSources":[{"kind":"GitRepository","name":"*"}]}}"#;

#[test]
fn wildcard_source_in_the_alerts_namespace_matches() {
    let a = alert(BASE);
    assert!(matches(&a, &test_event(), &mut no_labels).matched);
    let mut other_ns = test_event();
    other_ns.involved_object.namespace = "default".into();
    assert!(!matches(&a, &other_ns, &mut no_labels).matched);
    let mut other_kind = test_event();
    other_kind.involved_object.kind = "Kustomization".into();
    assert!(!matches(&a, &other_kind, &mut no_labels).matched);
}

#[test]
fn named_source_severity_and_suspend() {
    let mut a = alert(BASE);
    a.spec.event_sources[0].name = "other".into();
    assert!(!matches(&a, &test_event(), &mut no_labels).matched);
    a.spec.event_sources[0].name = "webapp".into();
    assert!(matches(&a, &test_event(), &mut no_labels).matched);
    a.spec.event_severity = Some(ferroflux_api::notification::EventSeverity::Error);
    assert!(!matches(&a, &test_event(), &mut no_labels).matched);
    let mut error = test_event();
    error.severity = "error".into();
    assert!(matches(&a, &error, &mut no_labels).matched);
    a.spec.suspend = Some(true);
    assert!(!matches(&a, &error, &mut no_labels).matched);
}

#[test]
fn match_labels_read_the_objects_labels() {
    let mut a = alert(BASE);
    a.spec.event_sources[0].match_labels =
        Some(BTreeMap::from([("team".to_string(), "web".to_string())]));
    let mut web = || Some(BTreeMap::from([("team".to_string(), "web".to_string())]));
    assert!(matches(&a, &test_event(), &mut web).matched);
    let mut ops = || Some(BTreeMap::from([("team".to_string(), "ops".to_string())]));
    assert!(!matches(&a, &test_event(), &mut ops).matched);
    let mut gone = || None;
    assert!(!matches(&a, &test_event(), &mut gone).matched);
}

#[test]
fn inclusion_and_exclusion_lists_with_a_bad_regex_reported() {
    let mut a = alert(BASE);
    a.spec.inclusion_list = Some(vec!["^mess".into()]);
    assert!(matches(&a, &test_event(), &mut no_labels).matched);
    a.spec.exclusion_list = Some(vec!["age$".into()]);
    assert!(!matches(&a, &test_event(), &mut no_labels).matched);
    a.spec.exclusion_list = Some(vec!["(".into()]);
    let m = matches(&a, &test_event(), &mut no_labels);
    assert!(m.matched);
    assert_eq!(m.problems, vec!["failed to compile exclusion regex: ("]);
}

#[test]
fn metadata_is_combined_as_flux_does_with_conflicts_named() {
    let mut e = test_event();
    e.metadata = BTreeMap::from([
        (
            "source.toolkit.fluxcd.io/revision".into(),
            "main@sha1:abc".into(),
        ),
        ("source.toolkit.fluxcd.io/checksum".into(), "x".into()),
        (
            "event.toolkit.fluxcd.io/cluster".into(),
            "production".into(),
        ),
        ("event.toolkit.fluxcd.io/env".into(), "from-object".into()),
        ("unrelated".into(), "dropped".into()),
    ]);
    e.cleanup_metadata();
    assert_eq!(e.metadata.len(), 3, "{:?}", e.metadata);
    let conflicts = e.combine_metadata(
        &BTreeMap::from([("env".to_string(), "from-alert".to_string())]),
        Some("prod cluster"),
    );
    assert_eq!(
        e.metadata,
        BTreeMap::from([
            ("cluster".to_string(), "production".to_string()),
            ("env".to_string(), "from-alert".to_string()),
            ("revision".to_string(), "main@sha1:abc".to_string()),
            ("summary".to_string(), "prod cluster".to_string()),
        ])
    );
    assert_eq!(conflicts.len(), 1);
    assert_eq!(conflicts[0].key, "env");
    assert_eq!(e.cluster(), Some("production"));
    assert_eq!(e.revision(), Some("main@sha1:abc"));
}

#[test]
fn the_same_event_passes_once_per_interval() {
    let mut limiter = RateLimiter::new(Duration::from_secs(300));
    let start = Instant::now();
    let e = test_event();
    assert!(limiter.allow(&e, start));
    assert!(!limiter.allow(&e, start + Duration::from_secs(299)));
    assert!(limiter.allow(&e, start + Duration::from_secs(300)));
    // Another message, or another revision, is another event.
    let mut other = test_event();
    other.message = "other".into();
    assert!(limiter.allow(&other, start + Duration::from_secs(300)));
    let mut rev = test_event();
    rev.metadata.insert(
        "source.toolkit.fluxcd.io/revision".into(),
        "main@sha1:1".into(),
    );
    assert_ne!(rate_limit_key(&rev), rate_limit_key(&e));
    assert!(limiter.allow(&rev, start + Duration::from_secs(300)));
    // Old keys are forgotten: memory holds one interval's distinct events.
    assert!(limiter.allow(&rev, start + Duration::from_secs(1000)));
    assert_eq!(limiter.len(), 1);
}
