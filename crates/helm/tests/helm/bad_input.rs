//! Bad inputs issue 14 names, each with the message `ferroflux helm template` prints: chart
//! archives holding `..` paths, absolute paths or links are refused (stricter than Helm, which
//! loads some of them), and 10,000-deep values render as in Helm while one level more fails with
//! Helm's message, without overflowing the stack.

use std::io::Write;

/// An archive entry: its raw name, its data, and for a link its kind and target.
type Entry<'a> = (&'a str, &'a [u8], Option<(tar::EntryType, &'a str)>);

/// A gzipped tar whose entries carry names and link targets byte for byte as given (the `tar`
/// crate's own path setters refuse the very names under test).
fn archive(entries: &[Entry<'_>]) -> Vec<u8> {
    let mut tar_bytes = Vec::new();
    for (name, data, link) in entries {
        let mut h = tar::Header::new_ustar();
        {
            let raw = h.as_old_mut();
            raw.name[..name.len()].copy_from_slice(name.as_bytes());
            if let Some((_, target)) = link {
                raw.linkname[..target.len()].copy_from_slice(target.as_bytes());
            }
        }
        h.set_mode(0o644);
        match link {
            Some((kind, _)) => {
                h.set_entry_type(*kind);
                h.set_size(0);
            }
            None => {
                h.set_entry_type(tar::EntryType::Regular);
                h.set_size(data.len() as u64);
            }
        }
        h.set_cksum();
        tar_bytes.extend_from_slice(h.as_bytes());
        if link.is_none() {
            tar_bytes.extend_from_slice(data);
            let pad = (512 - data.len() % 512) % 512;
            tar_bytes.extend(std::iter::repeat_n(0u8, pad));
        }
    }
    tar_bytes.extend(std::iter::repeat_n(0u8, 1024));
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&tar_bytes)
        .unwrap_or_else(|e| panic!("gzip: {e}"));
    gz.finish().unwrap_or_else(|e| panic!("gzip: {e}"))
}

const CHART_YAML: &[u8] = b"apiVersion: v2\nname: c\nversion: 0.1.0\n";
const TEMPLATE: &[u8] = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n";

/// Runs `helm template r c.tgz` over `tgz` as the CLI does; what it prints on stderr.
fn template_error(tgz: &[u8]) -> String {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    std::fs::write(dir.path().join("c.tgz"), tgz).unwrap_or_else(|e| panic!("write: {e}"));
    let args = ["r".to_string(), "c.tgz".to_string()];
    match ferroflux_helm::run_template(&args, dir.path()) {
        Ok(out) => panic!("the archive was accepted:\n{out}"),
        Err(e) => format!("Error: {}", ferroflux_helm::error_message(&e)),
    }
}

#[test]
fn a_well_formed_archive_renders() {
    let tgz = archive(&[
        ("c/Chart.yaml", CHART_YAML, None),
        ("c/templates/cm.yaml", TEMPLATE, None),
    ]);
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    std::fs::write(dir.path().join("c.tgz"), tgz).unwrap_or_else(|e| panic!("write: {e}"));
    let out = ferroflux_helm::run_template(&["r".into(), "c.tgz".into()], dir.path())
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(out.contains("# Source: c/templates/cm.yaml"), "{out}");
}

#[test]
fn absolute_paths_are_refused() {
    let tgz = archive(&[
        ("c/Chart.yaml", CHART_YAML, None),
        ("/etc/cron.d/x.yaml", b"x: 1\n", None),
    ]);
    assert_eq!(
        template_error(&tgz),
        "Error: chart archive refused: entry \"/etc/cron.d/x.yaml\" has an absolute path"
    );
}

#[test]
fn parent_directory_components_are_refused() {
    // Helm drops the first component unseen, so it would load this one as `x.yaml`.
    let tgz = archive(&[
        ("c/Chart.yaml", CHART_YAML, None),
        ("../x.yaml", b"x: 1\n", None),
    ]);
    assert_eq!(
        template_error(&tgz),
        "Error: chart archive refused: entry \"../x.yaml\" has a '..' path component"
    );
    // A `..` that stays inside the chart is refused too.
    let tgz = archive(&[
        ("c/Chart.yaml", CHART_YAML, None),
        ("c/templates/../x.yaml", b"x: 1\n", None),
    ]);
    assert_eq!(
        template_error(&tgz),
        "Error: chart archive refused: entry \"c/templates/../x.yaml\" has a '..' path component"
    );
    // One that climbs out after the first component keeps Helm's own message.
    let tgz = archive(&[
        ("c/Chart.yaml", CHART_YAML, None),
        ("c/templates/../../x.yaml", b"x: 1\n", None),
    ]);
    assert_eq!(
        template_error(&tgz),
        "Error: chart illegally references parent directory"
    );
}

#[test]
fn links_are_refused() {
    let tgz = archive(&[
        ("c/Chart.yaml", CHART_YAML, None),
        (
            "c/templates/link.yaml",
            b"",
            Some((tar::EntryType::Symlink, "/etc/passwd")),
        ),
    ]);
    assert_eq!(
        template_error(&tgz),
        "Error: chart archive refused: entry \"c/templates/link.yaml\" is a symbolic link (to \"/etc/passwd\"); links are not allowed in a chart archive"
    );
    let tgz = archive(&[
        ("c/Chart.yaml", CHART_YAML, None),
        (
            "c/values.yaml",
            b"",
            Some((tar::EntryType::Link, "c/Chart.yaml")),
        ),
    ]);
    assert_eq!(
        template_error(&tgz),
        "Error: chart archive refused: entry \"c/values.yaml\" is a hard link (to \"c/Chart.yaml\"); links are not allowed in a chart archive"
    );
}

#[test]
fn a_subchart_archive_with_a_link_is_refused_naming_the_subchart() {
    let sub = archive(&[
        (
            "s/Chart.yaml",
            b"apiVersion: v2\nname: s\nversion: 0.1.0\n",
            None,
        ),
        (
            "s/templates/l.yaml",
            b"",
            Some((tar::EntryType::Symlink, "../../../etc/passwd")),
        ),
    ]);
    let tgz = archive(&[
        ("c/Chart.yaml", CHART_YAML, None),
        ("c/charts/s-0.1.0.tgz", &sub, None),
    ]);
    assert_eq!(
        template_error(&tgz),
        "Error: error unpacking subchart s-0.1.0.tgz in c: chart archive refused: entry \"s/templates/l.yaml\" is a symbolic link (to \"../../../etc/passwd\"); links are not allowed in a chart archive"
    );
}

/// Renders `chart` (a template printing `toJson .Values.deep | len`) with a values file.
fn render_with_values(values: &str) -> Result<String, String> {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let c = dir.path().join("c");
    std::fs::create_dir_all(c.join("templates")).unwrap_or_else(|e| panic!("mkdir: {e}"));
    std::fs::write(c.join("Chart.yaml"), CHART_YAML).unwrap_or_else(|e| panic!("write: {e}"));
    std::fs::write(
        c.join("templates/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  n: {{ toJson .Values.deep | len | quote }}\n",
    )
    .unwrap_or_else(|e| panic!("write: {e}"));
    std::fs::write(dir.path().join("v.yaml"), values).unwrap_or_else(|e| panic!("write: {e}"));
    let args: Vec<String> = ["r", "c", "-f", "v.yaml"]
        .iter()
        .map(|a| a.to_string())
        .collect();
    ferroflux_helm::run_template(&args, dir.path())
        .map_err(|e| format!("Error: {}", ferroflux_helm::error_message(&e)))
}

/// `deep:` then lists nested `depth` levels in flow style (the document's mapping is one more).
fn nested_lists(depth: usize) -> String {
    format!("deep: {}1{}\n", "[".repeat(depth), "]".repeat(depth))
}

#[test]
fn values_nested_to_go_s_json_limit_render_without_overflowing_the_stack() {
    // 9,999 lists under the document's mapping: 10,000 levels, Go's limit exactly. This test
    // runs on a test thread's small stack; the engine walks such values on a grown one.
    let out = render_with_values(&nested_lists(9_999)).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        out.contains(&format!("  n: \"{}\"\n", 2 * 9_999 + 1)),
        "{}",
        &out[..out.len().min(300)]
    );
}

#[test]
fn one_level_more_fails_with_helm_s_message() {
    assert_eq!(
        render_with_values(&nested_lists(10_000)),
        Err("Error: failed to parse v.yaml: cannot unmarshal yaml document: error unmarshaling JSON: while decoding JSON: invalid character '[' exceeded max depth".to_string())
    );
}
