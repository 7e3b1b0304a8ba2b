//! Fuzz target: Flux's `postBuild` substitution over random and mutated text (the generator is
//! `ferroflux-fuzzkit`). Whatever the text, substitution ends with a result or one of its
//! errors — never a panic or a hang — and keeps its promises: text without `$` comes back
//! unchanged, a value is inserted once and never expanded again, strict mode succeeds only
//! where lenient mode gives the same text, and an error's byte position lies inside the text.
//!
//! `FUZZ_CASES=100000 cargo test -p ferroflux-envsubst --test envsubst fuzz` runs longer.

use std::collections::BTreeMap;

use ferroflux_envsubst::{SubstError, substitute};
use ferroflux_fuzzkit::{Rng, run};

/// Pieces of the language: the generator builds texts out of them.
const DICTIONARY: &[&str] = &[
    "${", "}", "$", "$$", "${#", ":=", "=", ":-", ":+", ":?", "^", "^^", ",", ",,", ":", "/", "//",
    "/#", "/%", "#", "##", "%", "%%", "*", "?", "[a-z]", "var", "v", "_x1", "é", "0", "-1", "\n",
    "  ", "\"", "'", "{", "\\",
];

/// Valid texts the mutations start from.
const CORPUS: &[&str] = &[
    "apiVersion: v1\nkind: ConfigMap\ndata:\n  name: ${cluster_name}\n",
    "replicas: ${replicas:=2}\nimage: ${image:-nginx}:${tag=1.0}\n",
    "x: ${var^^} ${var,,} ${#var} ${var:1:3} ${var/a/b} ${var//a/b} ${var#*a} ${var%%b*}\n",
    "escaped: $${not_a_var} and $$ and $plain\n",
    "nested: ${outer:=${inner:=deep}}\n",
];

fn vars(rng: &mut Rng) -> BTreeMap<String, String> {
    let mut vars = BTreeMap::new();
    for name in ["var", "v", "cluster_name", "replicas", "outer", "tag"] {
        if rng.one_in(2) {
            let value = rng.text(DICTIONARY, 12);
            vars.insert(name.to_string(), value);
        }
    }
    vars
}

fn position(e: &SubstError) -> Option<usize> {
    match e {
        SubstError::BadSubstitution(p)
        | SubstError::MissingClosingBrace(p)
        | SubstError::VariableName(p) => Some(*p),
        _ => None,
    }
}

#[test]
fn fuzz_substitution_never_panics_and_keeps_its_promises() {
    run("envsubst", 3000, |rng| {
        let text = if rng.one_in(3) {
            rng.text(DICTIONARY, 80)
        } else {
            let seed = rng.pick(CORPUS).as_bytes();
            String::from_utf8_lossy(&rng.mutate(seed, DICTIONARY)).into_owned()
        };
        let vars = vars(rng);
        let lenient = substitute(&text, &vars, false);
        let strict = substitute(&text, &vars, true);
        if let Ok(s) = &strict {
            assert_eq!(
                Ok(s),
                lenient.as_ref(),
                "strict and lenient differ on {text:?}"
            );
        }
        for e in [&lenient, &strict]
            .into_iter()
            .filter_map(|r| r.as_ref().err())
        {
            assert!(!e.to_string().is_empty());
            if let Some(p) = position(e) {
                assert!(p <= text.len(), "{e} is past the end of {text:?}");
            }
        }
        if !text.contains('$') {
            assert_eq!(lenient.as_deref(), Ok(text.as_str()), "{text:?}");
        }
    });
}

#[test]
fn fuzz_values_are_inserted_once_never_expanded_again() {
    run("envsubst_values", 2000, |rng| {
        let value = rng.text(DICTIONARY, 30);
        let prefix = rng.text(&["a", " ", ":", "\n"], 5).replace('$', "");
        let vars = BTreeMap::from([("v".to_string(), value.clone())]);
        let out = substitute(&format!("{prefix}${{v}}{prefix}"), &vars, true);
        assert_eq!(
            out,
            Ok(format!("{prefix}{value}{prefix}")),
            "value {value:?}"
        );
    });
}
