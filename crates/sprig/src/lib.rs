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
//!   character) shows U+FFFD per bad byte, as Helm's JSON-encoded output does; `len` of it counts
//!   the replacement characters' bytes, not Go's.

pub mod conv;
pub mod crypto;
pub mod encoding;
mod funcs;
pub mod gore;
pub mod gotime;
pub mod json;
pub mod paths;
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
