//! `--set-file` of a file that is not UTF-8: the value is Go's `string(bytes)` of the file, the
//! same string `.Files.Get` gives for those bytes, so every function sees the file's bytes.
//!
//! The oracle cannot record this run itself (values cross libhelm_c's C ABI as JSON, which
//! turns each bad byte into U+FFFD), so the test holds `--set-file` to `.Files.Get` of the same
//! bytes in the same render, and to the answers Helm 4.2.3 gave for `.Files.Get` of this very
//! file in the corpus (`files-non-utf8/expected.yaml`: len, sha256sum, quote).

const FUNCS: &str = r#"{{ len $v }} {{ $v | sha256sum }} {{ printf "%q" $v }} {{ $v | b64enc }} {{ lt $v "café" }}"#;

fn render(bytes: &[u8]) -> (String, String) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let c = dir.path().join("c");
    std::fs::create_dir_all(c.join("templates")).unwrap_or_else(|e| panic!("mkdir: {e}"));
    let write = |path: std::path::PathBuf, data: &[u8]| {
        std::fs::write(&path, data).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    };
    write(
        c.join("Chart.yaml"),
        b"apiVersion: v2\nname: c\nversion: 0.1.0\n",
    );
    write(c.join("data.bin"), bytes);
    write(dir.path().join("value.bin"), bytes);
    // Every answer is ASCII, so the lines can be YAML comments of a manifest.
    let template = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n\
         {{{{- $v := .Values.v }}}}\n# set-file: {FUNCS}\n\
         {{{{- $v = .Files.Get \"data.bin\" }}}}\n# files-get: {FUNCS}\n"
    );
    write(c.join("templates/cm.yaml"), template.as_bytes());
    let args: Vec<String> = ["r", "c", "--set-file", "v=value.bin"]
        .iter()
        .map(|a| a.to_string())
        .collect();
    let out = ferroflux_helm::run_template(&args, dir.path())
        .unwrap_or_else(|e| panic!("{}", ferroflux_helm::error_message(&e)));
    let text = ferroflux_helm::output_bytes(&out);
    let text = String::from_utf8(text.to_vec()).unwrap_or_else(|e| panic!("{e}"));
    let line = |prefix: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("no {prefix} line in {text}"))
            .to_string()
    };
    (line("# set-file: "), line("# files-get: "))
}

#[test]
fn a_latin1_file_keeps_its_bytes() {
    let (set_file, files_get) = render(b"caf\xe9\n");
    assert_eq!(set_file, files_get);
    assert_eq!(
        set_file,
        r#"5 9e4efed0ff1dbcf37240f82e1aad6c763eb9331434d2b394a6441abbbe3634eb "caf\xe9\n" Y2Fm6Qo= false"#
    );
}

#[test]
fn a_binary_file_keeps_its_bytes() {
    let (set_file, files_get) = render(b"\xff\xfe\x00\x01\x80bin");
    assert_eq!(set_file, files_get);
    assert!(set_file.starts_with("8 "), "{set_file}");
    assert!(
        set_file.contains(r#""\xff\xfe\x00\x01\x80bin""#),
        "{set_file}"
    );
    assert!(set_file.ends_with(" //4AAYBiaW4= false"), "{set_file}");
}
