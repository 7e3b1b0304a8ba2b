//! Sprig v3.3's template function library, as Helm v4 registers it, for
//! `ferroflux-gotemplate`.
//!
//! Owns: every function of Sprig's `GenericFuncMap` that Helm keeps (Helm deletes `env` and
//! `expandenv`, which are not here), with Sprig's argument types, its Go type coercions (spf13/cast
//! for `int`, `add`, `max`…, shopspring/decimal for `addf`…), its emptiness rule, its error texts,
//! and the Go behaviours underneath: Go time layouts and durations ([`gotime`]), `encoding/json`
//! output ([`json`]), RE2 regular expressions with Go's ASCII classes ([`gore`]), base64/base32
//! with Go's error offsets ([`encoding`]), mergo's merge rules, `net/url`, `path`, Masterminds
//! semver (shared with the Git source through `ferroflux-semver`), and the crypto functions
//! ([`crypto`]: hashes, bcrypt, Master Password, AES, RSA/ECDSA/Ed25519 keys, certificates).
//!
//! Must not touch: Helm's own functions (`include`, `tpl`, `required`, `toYaml`, `lookup`,
//! Helm's overrides of `toJson`, `mustToJson`, `fromJson`, `fail` and the duration helpers),
//! files, the environment, or the network: `getHostByName` returns `""`, which is what Helm's
//! engine does when DNS is not enabled (`--enable-dns` is off by default and not supported here).
//!
//! Differences from Sprig on Go, all forced by the value model or by determinism:
//! - `keys` and `values` come in sorted key order; Go's map order is random.
//! - `now`'s monotonic reading (` m=+0.001` when a time from `now` is printed) counts from the
//!   first `funcs()` call, not from the process's start.
//! - Regex syntax errors outside the common kinds (see [`gore`]) carry the `regex` crate's
//!   description after Go's prefix.
//! - `genPrivateKey "dsa"` is not supported (an error text in place of the key).
//! - Certificates have Go's fields and extensions but rcgen's extension order (random keys and
//!   serials make every certificate differ anyway, as in Sprig).
//! - A `string` holding bytes that are not UTF-8 (`b64dec` of binary data, `trunc` inside a
//!   character, `.Files.Get` of a binary file) keeps them exactly (gotemplate's `gostr`):
//!   hashes, `b64enc`, `b32enc`, `trunc`, `substr`, `abbrev`, `wrap` and `quote` see Go's bytes,
//!   JSON output shows U+FFFD per bad byte as Go's does. Functions that map characters (`upper`,
//!   `title`…) leave such a byte as it is where Go writes U+FFFD.

pub mod conv;
pub mod crypto;
pub mod encoding;
mod funcs;
pub mod gore;
pub mod gotime;
pub mod json;
pub mod paths;
mod rsagen;
mod scryptpar;
pub mod text;
pub mod url;

pub use conv::TypedSlice;
pub use funcs::dates::GoTime;
pub use funcs::misc::{CertObject, SemverObject};

use ferroflux_gotemplate::{Func, FuncMap, Signature};

/// Every Sprig function Helm v4 registers (Sprig's `TxtFuncMap` without `env` and `expandenv`).
pub fn funcs() -> FuncMap {
    gotime::start_clock();
    let mut m = FuncMap::new();
    for def in funcs::all() {
        let sig = match def.variadic {
            Some(rest) => Signature::variadic(def.params, rest),
            None => Signature::fixed(def.params),
        };
        let body = def.body;
        m.insert(def.name, Func::new(sig, move |_, args| body(args)));
    }
    m
}

#[cfg(test)]
pub(crate) mod tests {
    use ferroflux_gotemplate::{FuncError, Value};

    /// Calls a table entry directly (after the executor's arity check) and unwraps the result.
    pub fn call(name: &str, args: &[Value]) -> Value {
        try_call(name, args).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    /// Calls a table entry and returns its error text.
    pub fn call_err(name: &str, args: &[Value]) -> String {
        match try_call(name, args) {
            Ok(v) => panic!("{name} should fail, gave {v}"),
            Err(e) => e.0,
        }
    }

    /// Calls a table entry and prints the result as `{{ . }}` would.
    pub fn render(name: &str, args: &[Value]) -> String {
        call(name, args).to_string()
    }

    /// A list of strings.
    pub fn list(items: &[&str]) -> Value {
        Value::list(items.iter().map(|s| Value::from(*s)).collect())
    }

    fn try_call(name: &str, args: &[Value]) -> Result<Value, FuncError> {
        let def = super::funcs::all()
            .into_iter()
            .find(|d| d.name == name)
            .unwrap_or_else(|| panic!("no function {name}"));
        let sig = match def.variadic {
            Some(rest) => ferroflux_gotemplate::Signature::variadic(def.params, rest),
            None => ferroflux_gotemplate::Signature::fixed(def.params),
        };
        sig.check_count(name, args.len()).map_err(FuncError)?;
        (def.body)(args)
    }

    /// Sample arguments of each declared type, awkward on purpose.
    fn samples(t: ferroflux_gotemplate::Type) -> Vec<Value> {
        use ferroflux_gotemplate::{Map, Type};
        let strings = ["", "é%\\{[(*|", "-1", "a,b", "0x1f", "2006-01-02"];
        match t {
            Type::Int | Type::Int64 => [-1i64, 0, 2, 7].iter().map(|&i| Value::Int(i)).collect(),
            Type::Float64 => vec![
                Value::Float(f64::NAN),
                Value::Float(-0.5),
                Value::Float(1e300),
            ],
            Type::Bool => vec![Value::Bool(true), Value::Bool(false)],
            Type::String => strings.iter().map(|&s| Value::from(s)).collect(),
            Type::List => vec![Value::Nil, list(&["a", "1"]), Value::list(vec![Value::Nil])],
            Type::Map => {
                let m = Map::new();
                m.insert("a", Value::Nil);
                m.insert("b", Value::list(vec![]));
                vec![Value::Nil, Value::Map(Map::new()), Value::Map(m)]
            }
            Type::Bytes => vec![
                Value::Nil,
                Value::Bytes(std::sync::Arc::from(&b"\xff\x00"[..])),
            ],
            Type::Object(_) | Type::Any => {
                let mut v: Vec<Value> = strings.iter().map(|&s| Value::from(s)).collect();
                v.extend([
                    Value::Nil,
                    Value::Int(-3),
                    Value::Int64(i64::MIN),
                    Value::Float(f64::INFINITY),
                    Value::Bool(false),
                    list(&["b", "a"]),
                    Value::list(vec![Value::Nil, Value::Map(Map::new())]),
                    Value::Map(Map::new()),
                    crate::conv::string_slice(vec!["x".into()]),
                    crate::GoTime::value(crate::gotime::Time::zero()),
                ]);
                v
            }
        }
    }

    /// Every function, every declared parameter varied over awkward values (the others at
    /// their first sample), with 0 to 3 variadic extras: errors are fine, panics are not.
    /// Key and certificate generation and the deliberately slow hashes are left out.
    #[test]
    fn no_function_panics_on_awkward_arguments() {
        const SLOW: &[&str] = &[
            "genCA",
            "genCAWithKey",
            "genSelfSignedCert",
            "genSelfSignedCertWithKey",
            "genSignedCert",
            "genSignedCertWithKey",
            "genPrivateKey",
            "bcrypt",
            "htpasswd",
            "derivePassword",
        ];
        let mut calls = 0;
        for def in super::funcs::all() {
            if SLOW.contains(&def.name) {
                continue;
            }
            for extra in 0..=if def.variadic.is_some() { 3 } else { 0 } {
                let mut types: Vec<_> = def.params.to_vec();
                types.extend(std::iter::repeat_n(
                    def.variadic.unwrap_or(ferroflux_gotemplate::Type::Any),
                    extra,
                ));
                let base: Vec<Value> = types.iter().map(|t| samples(*t)[0].clone()).collect();
                for (i, t) in types.iter().enumerate() {
                    for v in samples(*t) {
                        let mut args = base.clone();
                        args[i] = v;
                        let name = def.name;
                        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            (def.body)(&args)
                        }));
                        assert!(r.is_ok(), "{name} panicked on {args:?}");
                        calls += 1;
                    }
                }
            }
        }
        assert!(calls > 2000, "only {calls} calls");
    }

    #[test]
    fn helm_keeps_every_sprig_function_but_env_and_expandenv() {
        let m = super::funcs();
        // Sprig v3.3.0's genericMap, minus "hello" (not a function charts use) and Helm's deletions.
        let names = "ago date date_in_zone date_modify dateInZone dateModify duration durationRound htmlDate htmlDateInZone must_date_modify mustDateModify mustToDate now toDate unixEpoch abbrev abbrevboth trunc trim upper lower title untitle substr repeat trimall trimAll trimSuffix trimPrefix nospace initials randAlphaNum randAlpha randAscii randNumeric swapcase shuffle snakecase camelcase kebabcase wrap wrapWith contains hasPrefix hasSuffix quote squote cat indent nindent replace plural sha1sum sha256sum sha512sum adler32sum toString atoi int64 int float64 seq toDecimal split splitList splitn toStrings until untilStep add1 add sub div mod mul randInt add1f addf subf divf mulf biggest max min maxf minf ceil floor round join sortAlpha default empty coalesce all any compact mustCompact fromJson toJson toPrettyJson toRawJson mustFromJson mustToJson mustToPrettyJson mustToRawJson ternary deepCopy mustDeepCopy typeOf typeIs typeIsLike kindOf kindIs deepEqual getHostByName base dir clean ext isAbs osBase osClean osDir osExt osIsAbs b64enc b64dec b32enc b32dec tuple list dict get set unset hasKey pluck keys pick omit merge mergeOverwrite mustMerge mustMergeOverwrite values append push mustAppend mustPush prepend mustPrepend first mustFirst rest mustRest last mustLast initial mustInitial reverse mustReverse uniq mustUniq without mustWithout has mustHas slice mustSlice concat dig chunk mustChunk bcrypt htpasswd genPrivateKey derivePassword buildCustomCert genCA genCAWithKey genSelfSignedCert genSelfSignedCertWithKey genSignedCert genSignedCertWithKey encryptAES decryptAES randBytes uuidv4 semver semverCompare fail regexMatch mustRegexMatch regexFindAll mustRegexFindAll regexFind mustRegexFind regexReplaceAll mustRegexReplaceAll regexReplaceAllLiteral mustRegexReplaceAllLiteral regexSplit mustRegexSplit regexQuoteMeta urlParse urlJoin";
        let want: Vec<&str> = names.split_whitespace().collect();
        for name in &want {
            assert!(m.contains(name), "missing {name}");
        }
        assert!(!m.contains("env") && !m.contains("expandenv"));
        assert_eq!(m.names().count(), want.len(), "no extra functions");
    }
}
