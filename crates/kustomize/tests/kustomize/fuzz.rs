//! Fuzz targets of the kustomize engine (issue 20), on `ferroflux-fuzzkit`'s seeded generator:
//! the YAML reader never panics and what it reads is written and read back unchanged, and a
//! build of a mutated kustomization tree never panics and names a file when it fails.
//! `./test.sh` runs each for its default number of cases; `FUZZ_CASES=100000 cargo test -p
//! ferroflux-kustomize fuzz` runs longer, `FUZZ_SEED=<n>` replays a reported case.

use ferroflux_fuzzkit::{Rng, run};
use ferroflux_kustomize::yaml::emit::render_document;
use ferroflux_kustomize::yaml::parse::parse_documents;
use ferroflux_kustomize::{Build, BuildError, LoadRestrictions};

/// Valid inputs the mutations start from: what resources and kustomizations look like.
const SEEDS: &[&str] = &[
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    x: \"0644\"\ndata:\n  k: |\n    line\n  j: >-\n    folded\n      more\n",
    "a: [1, 2.5, -3e4, true, null, ~, \"s\", 's']\nb: {c: d, e: [f, {g: h}]}\n",
    "- &x {a: 1}\n- *x\n- <<: *x\n  b: 2\n",
    "key: \"\\u00e9\\U0001F680\\t\"\nother: 'it''s'\nlong: \"one two three four five six seven eight nine ten eleven twelve thirteen\"\n",
    "---\nk: v\n---\n- 1\n- 0x1F\n- 0o17\n- .inf\n- 2001-12-14\n",
];

const DICT: &[&str] = &[
    ": ",
    "- ",
    "\n  ",
    "\n",
    "---\n",
    "|",
    ">-",
    "|+",
    "&a ",
    "*a",
    "<<",
    "!!str ",
    "{",
    "}",
    "[",
    "]",
    "\"",
    "'",
    "#",
    "${x}",
    "0644",
    "yes",
    "1e+06",
    "\\U0001F680",
    "\t",
    "~",
];

#[test]
fn fuzz_yaml_reads_without_panic_and_round_trips() {
    run(
        "fuzz_yaml_reads_without_panic_and_round_trips",
        3_000,
        |rng: &mut Rng| {
            let seed = SEEDS[rng.below(SEEDS.len())];
            let input = rng.mutate(seed.as_bytes(), DICT);
            let Ok(text) = String::from_utf8(input) else {
                return;
            };
            let Ok(docs) = parse_documents(&text) else {
                return;
            };
            for doc in docs {
                let written = render_document(&doc);
                let again = parse_documents(&written).unwrap_or_else(|e| {
                panic!("our own output does not read back: {e}\n--- input\n{text}\n--- written\n{written}")
            });
                assert_eq!(
                    again.first(),
                    Some(&doc),
                    "written and read back differs\n--- input\n{text}\n--- written\n{written}"
                );
            }
        },
    );
}

const KUSTOMIZATION: &str = "resources:\n- cm.yaml\n- base\nnamePrefix: p-\nnamespace: ns\ncommonLabels:\n  app: x\nconfigMapGenerator:\n- name: gen\n  literals: [a=b]\npatches:\n- patch: |\n    apiVersion: v1\n    kind: ConfigMap\n    metadata:\n      name: a\n    data:\n      k: patched\nimages:\n- name: nginx\n  newTag: \"1.25\"\nreplicas:\n- name: web\n  count: 2\n";
const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n";
const BASE: &str = "resources:\n- deploy.yaml\n";
const DEPLOY: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        image: nginx\n        envFrom:\n        - configMapRef:\n            name: gen\n";
const KDICT: &[&str] = &[
    "resources",
    "components",
    "patches",
    "namePrefix",
    "nameSuffix",
    "namespace",
    "- ../",
    "- /",
    "kind: Component",
    "behavior: merge",
    "$patch: delete",
    "op: remove",
    "target:",
    "name: ",
    "configurations:\n- cm.yaml\n",
    "buildMetadata: [originAnnotations]",
    "replacements:",
    ": ",
    "\n- ",
    "\n  ",
    "${x}",
];

#[test]
fn fuzz_build_of_mutated_trees_never_panics() {
    run(
        "fuzz_build_of_mutated_trees_never_panics",
        400,
        |rng: &mut Rng| {
            let t = tempfile::tempdir().expect("temporary directory");
            let files = [
                ("kustomization.yaml", KUSTOMIZATION),
                ("cm.yaml", CM),
                ("base/kustomization.yaml", BASE),
                ("base/deploy.yaml", DEPLOY),
            ];
            let mutated = rng.below(files.len());
            for (i, (name, content)) in files.iter().enumerate() {
                let path = t.path().join(name);
                std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
                let bytes = if i == mutated || rng.one_in(4) {
                    rng.mutate(content.as_bytes(), KDICT)
                } else {
                    content.as_bytes().to_vec()
                };
                std::fs::write(&path, bytes).expect("write");
            }
            for restrictions in [LoadRestrictions::RootOnly, LoadRestrictions::None] {
                let result = Build::new(t.path())
                    .map(|b| b.with_load_restrictions(restrictions))
                    .and_then(|b| b.build(t.path()));
                if let Err(e) = result {
                    let shown = e.to_string();
                    assert!(!shown.is_empty(), "an error with no message");
                    if let BuildError::Yaml { path, .. } = &e {
                        assert!(
                            !path.as_os_str().is_empty(),
                            "a YAML error names its file: {shown}"
                        );
                    }
                }
            }
        },
    );
}
