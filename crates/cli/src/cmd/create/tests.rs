use super::*;
use clap::Parser;

#[derive(Parser)]
struct Wrapper {
    #[command(flatten)]
    args: HelmReleaseArgs,
}

fn exported(args: &[&str]) -> String {
    let mut argv = vec!["create-hr"];
    argv.extend_from_slice(args);
    let parsed = Wrapper::try_parse_from(argv).unwrap();
    let object = build("flux-system", &parsed.args).unwrap();
    format!(
        "---\n{}",
        ferroflux_kustomize::render_yaml(std::slice::from_ref(&object))
    )
}

fn golden(name: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/goldens/helmrelease/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(path)
        .unwrap()
        .replace("{{ .fluxns }}", "flux-system")
}

#[test]
fn export_matches_flux_for_a_chart_template_and_chart_refs() {
    assert_eq!(
        exported(&[
            "podinfo",
            "--source",
            "HelmRepository/podinfo",
            "--chart",
            "podinfo"
        ]),
        golden("basic.yaml")
    );
    assert_eq!(
        exported(&["podinfo", "--chart-ref", "HelmChart/podinfo"]),
        golden("hc_basic.yaml")
    );
    assert_eq!(
        exported(&["podinfo", "--chart-ref", "OCIRepository/podinfo"]),
        golden("or_basic.yaml")
    );
}

#[test]
fn every_flag_lands_where_flux_puts_it() {
    let out = exported(&[
        "podinfo",
        "--source",
        "GitRepository/fleet.flux-system",
        "--chart",
        "./charts/podinfo",
        "--chart-version",
        ">=6.0.0",
        "--target-namespace",
        "apps",
        "--create-target-namespace",
        "--crds",
        "CreateReplace",
        "--depends-on",
        "infra/cert-manager",
        "--values-from",
        "ConfigMap/podinfo-values",
        "--interval",
        "10m",
    ]);
    let object: Value = serde_saphyr::from_str(out.trim_start_matches("---\n")).unwrap();
    let spec = &object["spec"];
    assert_eq!(spec["interval"], "10m0s");
    assert_eq!(
        spec["chart"]["spec"]["sourceRef"]["namespace"],
        "flux-system"
    );
    assert_eq!(spec["chart"]["spec"]["version"], ">=6.0.0");
    assert_eq!(spec["targetNamespace"], "apps");
    assert_eq!(
        spec["install"],
        json!({"createNamespace": true, "crds": "CreateReplace"})
    );
    assert_eq!(spec["upgrade"], json!({"crds": "CreateReplace"}));
    assert_eq!(
        spec["dependsOn"],
        json!([{"name": "cert-manager", "namespace": "infra"}])
    );
    assert_eq!(
        spec["valuesFrom"],
        json!([{"kind": "ConfigMap", "name": "podinfo-values"}])
    );
}

#[test]
fn bad_flags_are_refused_with_flux_s_words() {
    let parse = |args: &[&str]| {
        let mut argv = vec!["create-hr"];
        argv.extend_from_slice(args);
        let parsed = Wrapper::try_parse_from(argv).unwrap();
        build("flux-system", &parsed.args).unwrap_err().to_string()
    };
    assert_eq!(
        parse(&["p", "--source", "OCIRepository/x", "--chart", "p"]),
        "invalid argument \"OCIRepository/x\" for \"--source\" flag: source kind 'OCIRepository' is not supported, must be one of: HelmRepository, GitRepository, Bucket"
    );
    assert_eq!(
        parse(&["p", "--source", "HelmRepository/x"]),
        "chart or chart-ref is required"
    );
    assert_eq!(
        parse(&["p", "--chart-ref", "HelmChart/x", "--crds", "Always"]),
        "'Always' is an invalid CRDs policy(valid: Skip, Create, CreateReplace)"
    );
}
