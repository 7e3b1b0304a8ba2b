//! Unit tests of the substitution syntax and strict mode.

use super::*;

fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn eval(input: &str, pairs: &[(&str, &str)]) -> String {
    substitute(input, &vars(pairs), false).unwrap()
}

/// An input, the variables it sees, and the expected output.
type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str);

#[test]
fn expansions_follow_bash_parameter_substitution() {
    let cases: &[Case] = &[
        ("abcdEFGH28ij", &[], "abcdEFGH28ij"),
        ("${#v}", &[("v", "abcdEFGH28ij")], "12"),
        ("${v^}", &[("v", "abcdEFGH28ij")], "AbcdEFGH28ij"),
        ("${v^^}", &[("v", "abcdEFGH28ij")], "ABCDEFGH28IJ"),
        ("${v,}", &[("v", "ABCDEFGH28IJ")], "aBCDEFGH28IJ"),
        ("${v,,}", &[("v", "ABCDEFGH28IJ")], "abcdefgh28ij"),
        (
            "${p:11}",
            &[("p", "/home/bozo/ideas/thoughts.for.today")],
            "ideas/thoughts.for.today",
        ),
        (
            "${p:11:5}",
            &[("p", "/home/bozo/ideas/thoughts.for.today")],
            "ideas",
        ),
        ("${p:-5}", &[("p", "abcdefgh")], "abcdefgh"),
        ("${p:1:-1}", &[("p", "abcdefgh")], "bcdefg"),
        ("${v=xyz}", &[("v", "abc")], "abc"),
        ("${v=xyz}", &[], "xyz"),
        ("${v:=xyz}", &[], "xyz"),
        ("${v:-xyz}", &[("v", "")], "xyz"),
        ("something ${v=${d}}", &[("d", "foo")], "something foo"),
        (
            "foo: ${v=prefix${d}-suffix}",
            &[("d", "foo1")],
            "foo: prefixfoo1-suffix",
        ),
        (
            "${s/%abc/XYZ}",
            &[("s", "abcABC123ABCabc")],
            "abcABC123ABCXYZ",
        ),
        (
            "${s/#abc/XYZ}",
            &[("s", "abcABC123ABCabc")],
            "XYZABC123ABCabc",
        ),
        ("${s/#/prefix-}", &[("s", "somevalue")], "prefix-somevalue"),
        ("${s/%/-suffix}", &[("s", "somevalue")], "somevalue-suffix"),
        (
            "${s//abc/xyz}",
            &[("s", "abcABC123ABCabc")],
            "xyzABC123ABCxyz",
        ),
        (
            "${s/abc/xyz}",
            &[("s", "abcABC123ABCabc")],
            "xyzABC123ABCabc",
        ),
        ("${s/./}", &[("s", "foo.bar")], "foobar"),
        (r"${s/\//-}", &[("s", "foo/bar")], "foo-bar"),
        (r"${s//\//-}", &[("s", "foo/bar/baz")], "foo-bar-baz"),
        ("${f#*.}", &[("f", "bash.string.txt")], "string.txt"),
        ("${f#*/}", &[("f", "/path/to/file")], "path/to/file"),
        ("${f##*.}", &[("f", "bash.string.txt")], "txt"),
        ("${f##*/}", &[("f", "path/to/file")], "file"),
        ("${f%.*}", &[("f", "bash.string.txt")], "bash.string"),
        ("${f%%.*}", &[("f", "bash.string.txt")], "bash"),
        ("${f#[a-c]}", &[("f", "bash")], "ash"),
        ("${v=${w^^}}", &[("w", "abcdEFGH28ij")], "ABCDEFGH28IJ"),
        ("$${v}", &[("v", "x")], "${v}"),
        (
            "some text ${v}$${v$${v}$v${v}",
            &[("v", "abcdEFGH28ij")],
            "some text abcdEFGH28ij${v${v}$vabcdEFGH28ij",
        ),
        (
            "something $${v=${d}}",
            &[("d", "foo")],
            "something ${v=foo}",
        ),
        ("$$${v}", &[("v", "x")], "$x"),
        (
            r"\\something ${v=${d}}",
            &[("d", "foo")],
            r"\\something foo",
        ),
        ("price: $5 and $HOME", &[], "price: $5 and $HOME"),
        ("ünïcode ${v}", &[("v", "ok")], "ünïcode ok"),
    ];
    for (input, pairs, want) in cases {
        assert_eq!(&eval(input, pairs), want, "input {input:?}");
    }
}

#[test]
fn strict_mode_refuses_unset_variables_without_default() {
    let none = BTreeMap::new();
    for input in [
        "${missing}",
        "${#missing}",
        "${missing^^}",
        "${missing,}",
        "${missing:0:10}",
        "${missing/a/b}",
        "${missing//a/b}",
        "${missing#a}",
        "${missing%%a}",
        "x ${v=${missing}}",
    ] {
        assert_eq!(
            substitute(input, &none, true),
            Err(SubstError::VariableNotSet("missing".into())),
            "input {input:?}"
        );
    }
    for (input, want) in [
        ("${missing:-fallback}", "fallback"),
        ("${missing:=assigned}", "assigned"),
        ("${missing=assigned}", "assigned"),
    ] {
        assert_eq!(substitute(input, &none, true).unwrap(), want);
    }
    assert_eq!(
        substitute("${empty}", &vars(&[("empty", "")]), true).unwrap(),
        ""
    );
    assert_eq!(
        SubstError::VariableNotSet("region".into()).to_string(),
        "variable not set (strict mode): \"region\""
    );
}

#[test]
fn malformed_expansions_are_errors() {
    let v = vars(&[("v", "x")]);
    assert!(matches!(
        substitute("${v", &v, false),
        Err(SubstError::MissingClosingBrace(_))
    ));
    assert!(matches!(
        substitute("${}", &v, false),
        Err(SubstError::VariableName(2))
    ));
    assert!(matches!(
        substitute("${v-default}", &v, false),
        Err(SubstError::MissingClosingBrace(_))
    ));
    assert!(matches!(
        substitute("${v^x}", &v, false),
        Err(SubstError::BadSubstitution(_))
    ));
    assert!(matches!(
        substitute("${v/abc}", &v, false),
        Err(SubstError::BadSubstitution(_))
    ));
}

#[test]
fn variable_names_follow_flux_rule() {
    for ok in ["a", "_x", "cluster_env", "A1_b2"] {
        assert!(validate_var_name(ok).is_ok(), "{ok}");
    }
    for bad in ["", "1a", "cluster-env", "a.b", "é"] {
        assert_eq!(
            validate_var_name(bad),
            Err(SubstError::InvalidVarName(bad.into()))
        );
    }
}

/// The flux CLI's own golden for `flux envsubst`: same input, same output.
#[test]
fn flux_envsubst_golden() {
    let input = "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: ${REPO_NAME}\n  namespace: ${REPO_NAMESPACE:=flux-system}\nspec:\n  ref:\n    branch: main\n  interval: 5m\n  url: ssh://git@github.com/example/${REPO_NAME}\n";
    let want = "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: test\n  namespace: flux-system\nspec:\n  ref:\n    branch: main\n  interval: 5m\n  url: ssh://git@github.com/example/test\n";
    assert_eq!(
        substitute(input, &vars(&[("REPO_NAME", "test")]), true).unwrap(),
        want
    );
}
