//! `ferroflux envsubst` against flux's golden (`fixtures/goldens/envsubst/`), and its bad input:
//! an unset variable with `--strict`, a malformed expansion, an unknown flag.

use std::io::Write;
use std::process::{Command, Output, Stdio};

const INPUT: &str = include_str!("../fixtures/goldens/envsubst/file.yaml");
const GOLDEN: &str = include_str!("../fixtures/goldens/envsubst/file.gold");

/// Runs `ferroflux envsubst ARGS` with `input` on stdin and only `env` (plus PATH) set.
fn envsubst(args: &[&str], env: &[(&str, &str)], input: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ferroflux"))
        .arg("envsubst")
        .args(args)
        .env_clear()
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).unwrap();
    drop(stdin);
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn matches_flux_golden() {
    let out = envsubst(&[], &[("REPO_NAME", "test")], INPUT);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), GOLDEN);
}

#[test]
fn strict_with_the_variable_set_matches_the_golden() {
    let out = envsubst(&["--strict"], &[("REPO_NAME", "test")], INPUT);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), GOLDEN);
}

#[test]
fn strict_fails_on_an_unset_variable() {
    let out = envsubst(&["--strict"], &[], INPUT);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("✗ variable not set (strict mode): \"REPO_NAME\""),
        "{err}"
    );
    // The lines before the failing one were printed, as flux prints them.
    assert_eq!(
        text(&out.stdout),
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n"
    );
}

#[test]
fn unset_variable_without_strict_is_empty() {
    let out = envsubst(&[], &[], "name: '${REPO_NAME}'\nns: ${NS:=flux-system}\r\n");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "name: ''\nns: flux-system\n");
}

#[test]
fn unclosed_expansion_is_refused() {
    let out = envsubst(&[], &[], "a: ok\nb: ${REPO_NAME\n");
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("missing closing brace"), "{err}");
    assert_eq!(text(&out.stdout), "a: ok\n");
}

#[test]
fn unknown_flag_is_refused() {
    let out = envsubst(&["--stric"], &[], "");
    assert_ne!(out.status.code(), Some(0));
    let err = text(&out.stderr);
    assert!(err.contains("unexpected argument '--stric'"), "{err}");
}
