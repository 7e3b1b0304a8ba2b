//! `--name-template`: the release name from a Go template with Sprig's functions, as Helm's
//! `action.TemplateName` makes it, and the errors a user sees.

fn chart() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let c = dir.path().join("c");
    std::fs::create_dir_all(c.join("templates")).unwrap_or_else(|e| panic!("mkdir: {e}"));
    std::fs::write(
        c.join("Chart.yaml"),
        "apiVersion: v2\nname: c\nversion: 0.1.0\n",
    )
    .unwrap_or_else(|e| panic!("write: {e}"));
    std::fs::write(
        c.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n",
    )
    .unwrap_or_else(|e| panic!("write: {e}"));
    dir
}

fn run(args: &[&str]) -> Result<String, String> {
    let dir = chart();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    ferroflux_helm::run_template(&args, dir.path())
        .map_err(|e| format!("Error: {}", ferroflux_helm::error_message(&e)))
}

#[test]
fn the_template_names_the_release() {
    let out = run(&["c", "--name-template", "{{ printf \"web-%d\" 3 | lower }}"])
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(out.contains("  name: web-3\n"), "{out}");
    // Sprig's functions are there, and the name is random where the template says so.
    let out = run(&["c", "--name-template={{ randAlpha 6 | lower }}-app"])
        .unwrap_or_else(|e| panic!("{e}"));
    let name = out
        .lines()
        .find_map(|l| l.strip_prefix("  name: "))
        .unwrap_or_default();
    assert_eq!(name.len(), 10, "{out}");
    assert!(name.ends_with("-app"), "{out}");
}

#[test]
fn a_name_and_a_name_template_conflict() {
    assert_eq!(
        run(&["r", "c", "--name-template", "x"]),
        Err("Error: cannot set --name-template and also specify a name".to_string())
    );
}

#[test]
fn a_broken_template_fails_with_go_s_message() {
    assert_eq!(
        run(&["c", "--name-template", "{{ nope }}"]),
        Err("Error: template: name-template:1: function \"nope\" not defined".to_string())
    );
}

#[test]
fn the_name_it_gives_is_validated() {
    let err = run(&["c", "--name-template", "Bad_Name"])
        .err()
        .unwrap_or_default();
    assert!(
        err.starts_with(
            "Error: release name check failed: release name \"Bad_Name\": invalid release name"
        ),
        "{err}"
    );
}
