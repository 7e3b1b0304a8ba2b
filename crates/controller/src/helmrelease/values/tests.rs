use super::*;
use serde_json::json;

fn reference(kind: ValuesKind, name: &str) -> ValuesReference {
    ValuesReference {
        kind,
        name: name.into(),
        ..Default::default()
    }
}

fn object(pairs: &[(&str, &str)]) -> Fetched {
    Some(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
            .collect(),
    )
}

#[test]
fn references_merge_in_order_then_inline_values_win() {
    let refs = vec![
        reference(ValuesKind::ConfigMap, "base"),
        ValuesReference {
            values_key: Some("prod.yaml".into()),
            ..reference(ValuesKind::Secret, "prod")
        },
    ];
    let mut objects = BTreeMap::new();
    objects.insert(
        (ValuesKind::ConfigMap, "base".into()),
        object(&[(
            "values.yaml",
            "replicaCount: 1\nimage:\n  tag: v1\n  pullPolicy: Always\n",
        )]),
    );
    objects.insert(
        (ValuesKind::Secret, "prod".into()),
        object(&[("prod.yaml", "replicaCount: 3\nimage:\n  tag: v2\n")]),
    );
    let inline = json!({"image": {"tag": "v3"}, "extra": true});
    let values = compose("apps", &refs, &objects, Some(&inline)).unwrap();
    assert_eq!(
        Value::Object(values),
        // YAML numbers are float64 in Helm's values, as here.
        json!({"replicaCount": 3.0, "image": {"tag": "v3", "pullPolicy": "Always"}, "extra": true})
    );
}

#[test]
fn target_path_sets_one_value_over_the_inline_values() {
    let refs = vec![
        ValuesReference {
            values_key: Some("token".into()),
            target_path: Some("auth.token".into()),
            ..reference(ValuesKind::Secret, "creds")
        },
        ValuesReference {
            values_key: Some("count".into()),
            target_path: Some("replicas".into()),
            ..reference(ValuesKind::ConfigMap, "scale")
        },
        ValuesReference {
            values_key: Some("count".into()),
            target_path: Some("asString".into()),
            ..reference(ValuesKind::ConfigMap, "quoted")
        },
    ];
    let mut objects = BTreeMap::new();
    objects.insert(
        (ValuesKind::Secret, "creds".into()),
        object(&[("token", "s3cr3t")]),
    );
    objects.insert(
        (ValuesKind::ConfigMap, "scale".into()),
        object(&[("count", "4")]),
    );
    objects.insert(
        (ValuesKind::ConfigMap, "quoted".into()),
        object(&[("count", "\"4\"")]),
    );
    let inline = json!({"auth": {"token": "inline", "user": "me"}, "replicas": 1});
    let values = compose("apps", &refs, &objects, Some(&inline)).unwrap();
    // Flux merges the inline values once more at the end: where they set the same path, they
    // win over a targetPath value too.
    assert_eq!(
        Value::Object(values),
        json!({"auth": {"token": "inline", "user": "me"}, "replicas": 1, "asString": "4"})
    );
    let values = compose("apps", &refs, &objects, None).unwrap();
    assert_eq!(
        Value::Object(values),
        json!({"auth": {"token": "s3cr3t"}, "replicas": 4, "asString": "4"})
    );
}

#[test]
fn missing_objects_and_keys_fail_unless_optional_with_flux_messages() {
    let refs = vec![reference(ValuesKind::ConfigMap, "podinfo-values")];
    let objects = BTreeMap::from([((ValuesKind::ConfigMap, "podinfo-values".into()), None)]);
    let err = compose("apps", &refs, &objects, None).unwrap_err();
    assert_eq!(
        err.to_string(),
        "could not resolve ConfigMap chart values reference 'apps/podinfo-values' with key 'values.yaml': resource not found"
    );

    let optional = vec![ValuesReference {
        optional: Some(true),
        ..reference(ValuesKind::ConfigMap, "podinfo-values")
    }];
    let inline = json!({"a": 1});
    assert_eq!(
        Value::Object(compose("apps", &optional, &objects, Some(&inline)).unwrap()),
        json!({"a": 1})
    );

    let refs = vec![ValuesReference {
        values_key: Some("other.yaml".into()),
        ..reference(ValuesKind::Secret, "s")
    }];
    let objects = BTreeMap::from([(
        (ValuesKind::Secret, "s".into()),
        object(&[("values.yaml", "a: 1")]),
    )]);
    let err = compose("apps", &refs, &objects, None).unwrap_err();
    assert_eq!(
        err.to_string(),
        "could not resolve Secret chart values reference 'apps/s' with key 'other.yaml': key not found"
    );
}

#[test]
fn unreadable_yaml_names_the_reference() {
    let refs = vec![reference(ValuesKind::ConfigMap, "bad")];
    let objects = BTreeMap::from([(
        (ValuesKind::ConfigMap, "bad".into()),
        object(&[("values.yaml", "a: [1, 2\n")]),
    )]);
    let err = compose("apps", &refs, &objects, None)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(
            "could not resolve ConfigMap chart values reference 'apps/bad' with key 'values.yaml': failed to read values data: "
        ),
        "{err}"
    );
}

#[test]
fn digest_ignores_key_order_and_sees_every_change() {
    let a = json!({"b": 1, "a": {"y": "<x>", "x": [1, 2]}});
    let b = json!({"a": {"x": [1, 2], "y": "<x>"}, "b": 1});
    let (Value::Object(a), Value::Object(b)) = (a, b) else {
        unreachable!()
    };
    assert_eq!(digest(&a), digest(&b));
    // Go writes a whole float64 without a fraction: 3.0 and 3 digest alike.
    let (Value::Object(f), Value::Object(i)) = (json!({"n": 3.0}), json!({"n": 3})) else {
        unreachable!()
    };
    assert_eq!(digest(&f), digest(&i));
    let mut c = b.clone();
    c.insert("b".into(), json!(2));
    assert_ne!(digest(&a), digest(&c));
    // Go's encoding of {} : the digest Flux records for a release without values.
    assert_eq!(
        digest(&Map::new()),
        "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
    );
}
