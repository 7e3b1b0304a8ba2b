//! Sprig's crypto.go, semver.go, reflect.go, network.go and url.go, and the path functions of
//! its map (`base`, `dir`, `clean`, `ext`, `isAbs` and their `os*` forms, which are the same on
//! Linux).

use ferroflux_gotemplate::{CallContext, FuncError, Map, Object, Signature, Type, Value, fmt};
use ferroflux_semver::{Range, SemverError, Version};

use super::{Def, err, fixed, int, s, text};
use crate::crypto::{self, Certificate};
use crate::{paths, url};

use Type::{Any, Int, List, Map as MapT, String as Str};

/// Sprig's `certificate` struct as a parameter type.
const CERT: Type = Type::Object("sprig.certificate");

/// Sprig's `certificate` struct (`.Cert`, `.Key`).
pub struct CertObject(pub Certificate);

impl Object for CertObject {
    fn type_name(&self) -> String {
        "sprig.certificate".into()
    }
    fn kind_name(&self) -> String {
        "struct".into()
    }
    fn field(&self, name: &str) -> Option<Value> {
        match name {
            "Cert" => Some(Value::from(self.0.cert.clone())),
            "Key" => Some(Value::from(self.0.key.clone())),
            _ => None,
        }
    }
    fn format(&self) -> String {
        format!("{{{} {}}}", self.0.cert, self.0.key)
    }
    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({"Cert": self.0.cert, "Key": self.0.key})
    }
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}

fn cert_result(r: Result<Certificate, String>) -> Result<Value, FuncError> {
    r.map(|c| Value::object(CertObject(c))).map_err(err)
}

/// A `certificate` parameter (the executor has checked its type).
fn cert_param(v: &Value) -> Result<Certificate, FuncError> {
    match v {
        Value::Object(o) => o
            .as_any()
            .and_then(|a| a.downcast_ref::<CertObject>())
            .map(|c| c.0.clone())
            .ok_or_else(|| {
                err(format!(
                    "wrong type for value; expected sprig.certificate; got {}",
                    o.type_name()
                ))
            }),
        Value::Nil => Err(err("invalid value; expected sprig.certificate")),
        other => Err(err(format!(
            "wrong type for value; expected sprig.certificate; got {}",
            other.type_name()
        ))),
    }
}

/// A `[]interface{}` of IP addresses, with Sprig's messages for non-strings and bad IPs.
fn ips_param(v: &Value) -> Result<Vec<std::net::IpAddr>, FuncError> {
    let items = v.as_list().unwrap_or(&[]);
    let strs: Vec<Option<&str>> = items.iter().map(Value::as_str).collect();
    let shown: Vec<String> = items
        .iter()
        .map(|i| fmt::sprint(std::slice::from_ref(i)))
        .collect();
    crypto::parse_ips(&strs, &shown).map_err(err)
}

/// A `[]interface{}` of DNS names.
fn dns_param(v: &Value) -> Result<Vec<String>, FuncError> {
    v.as_list()
        .unwrap_or(&[])
        .iter()
        .map(|d| {
            d.as_str().map(str::to_string).ok_or_else(|| {
                err(format!(
                    "error processing alternate dns name: {} is not a string",
                    fmt::sprint(std::slice::from_ref(d))
                ))
            })
        })
        .collect()
}

/// Masterminds' `*semver.Version` (what `semver` returns), or a `semver.Version` value (what
/// `IncMajor`, `IncMinor`, `IncPatch`, `SetPrerelease` and `SetMetadata` return), which has only
/// the value-receiver methods.
pub struct SemverObject {
    /// The version.
    pub version: Version,
    /// A `*semver.Version` (every method), else a `semver.Version` value.
    pub pointer: bool,
}

impl SemverObject {
    fn from_value(v: &Value) -> Option<Version> {
        let Value::Object(o) = v else { return None };
        o.as_any()?
            .downcast_ref::<SemverObject>()
            .map(|s| s.version.clone())
    }

    /// A `semver.Version` value derived from this one (`original` keeps a leading `v`).
    fn derived(&self, mut next: Version) -> Value {
        let prefix = if self.version.original.starts_with('v') {
            "v"
        } else {
            ""
        };
        next.original = format!("{prefix}{next}");
        Value::object(SemverObject {
            version: next,
            pointer: false,
        })
    }
}

/// Masterminds' identifier rule for `SetPrerelease`/`SetMetadata`: dot-separated non-empty
/// `[0-9A-Za-z-]` parts (and no leading zero in a numeric pre-release part).
fn valid_identifiers(s: &str, pre: bool) -> Result<(), FuncError> {
    for part in s.split('.') {
        let numeric = !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
        if pre && numeric && part.len() > 1 && part.starts_with('0') {
            return Err(err("version segment starts with 0"));
        }
        if part.is_empty() || !part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            return Err(err(if pre {
                "invalid prerelease string"
            } else {
                "invalid metadata string"
            }));
        }
    }
    Ok(())
}

impl Object for SemverObject {
    fn type_name(&self) -> String {
        if self.pointer {
            "*semver.Version".into()
        } else {
            "semver.Version".into()
        }
    }
    fn kind_name(&self) -> String {
        if self.pointer { "ptr" } else { "struct" }.into()
    }
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
    fn method(&self, name: &str) -> Option<Signature> {
        Some(match name {
            "Major" | "Minor" | "Patch" | "Prerelease" | "Metadata" | "String" | "IncMajor"
            | "IncMinor" | "IncPatch" => Signature::fixed(&[]),
            "SetPrerelease" | "SetMetadata" => Signature::fixed(&[Str]),
            "Original" if self.pointer => Signature::fixed(&[]),
            "Compare" | "LessThan" | "GreaterThan" | "Equal" | "LessThanEqual"
            | "GreaterThanEqual"
                if self.pointer =>
            {
                Signature::fixed(&[Type::Object("*semver.Version")])
            }
            _ => return None,
        })
    }
    fn call_method(
        &self,
        name: &str,
        _ctx: &mut CallContext<'_>,
        args: &[Value],
    ) -> Result<Value, FuncError> {
        let v = &self.version;
        let other = || {
            SemverObject::from_value(&args[0]).ok_or_else(|| {
                err(format!(
                    "wrong type for value; expected *semver.Version; got {}",
                    args[0].type_name()
                ))
            })
        };
        use std::cmp::Ordering::*;
        let bare = |mut n: Version| {
            n.pre.clear();
            n.metadata.clear();
            n
        };
        Ok(match name {
            "Major" => Value::Int64(v.major as i64),
            "Minor" => Value::Int64(v.minor as i64),
            "Patch" => Value::Int64(v.patch as i64),
            "Prerelease" => Value::from(v.pre.clone()),
            "Metadata" => Value::from(v.metadata.clone()),
            "Original" => Value::from(v.original.clone()),
            "String" => Value::from(v.to_string()),
            "IncPatch" => {
                let mut n = bare(v.clone());
                if v.pre.is_empty() {
                    n.patch = v
                        .patch
                        .checked_add(1)
                        .ok_or_else(|| err("patch version increment would overflow uint64"))?;
                }
                self.derived(n)
            }
            "IncMinor" => {
                let mut n = bare(v.clone());
                n.patch = 0;
                n.minor = v
                    .minor
                    .checked_add(1)
                    .ok_or_else(|| err("minor version increment would overflow uint64"))?;
                self.derived(n)
            }
            "IncMajor" => {
                let mut n = bare(v.clone());
                n.patch = 0;
                n.minor = 0;
                n.major = v
                    .major
                    .checked_add(1)
                    .ok_or_else(|| err("major version increment would overflow uint64"))?;
                self.derived(n)
            }
            "SetPrerelease" | "SetMetadata" => {
                let text = s(&args[0]);
                let pre = name == "SetPrerelease";
                if !text.is_empty() {
                    valid_identifiers(text, pre)?;
                }
                let mut n = v.clone();
                if pre {
                    n.pre = text.to_string();
                } else {
                    n.metadata = text.to_string();
                }
                self.derived(n)
            }
            "Compare" => Value::Int(match v.compare(&other()?) {
                Less => -1,
                Equal => 0,
                Greater => 1,
            }),
            "LessThan" => Value::Bool(v.compare(&other()?) == Less),
            "GreaterThan" => Value::Bool(v.compare(&other()?) == Greater),
            "Equal" => Value::Bool(v.compare(&other()?) == Equal),
            "LessThanEqual" => Value::Bool(v.compare(&other()?) != Greater),
            "GreaterThanEqual" => Value::Bool(v.compare(&other()?) != Less),
            _ => return Err(err(format!("no method {name}"))),
        })
    }
    fn format(&self) -> String {
        self.version.to_string()
    }
    fn to_json(&self) -> serde_json::Value {
        serde_json::Value::String(self.version.to_string())
    }
}

/// Masterminds v3's error texts.
fn semver_error(e: SemverError) -> FuncError {
    match e {
        SemverError::InvalidVersion(_) => err("invalid semantic version"),
        SemverError::ImproperConstraint(c) => {
            err(format!("improper constraint: {}", fmt::quote(&c)))
        }
        other => err(other.to_string()),
    }
}

pub(crate) fn defs() -> Vec<Def> {
    vec![
        // Hashes and passwords.
        fixed("sha1sum", &[Str], |a| text(crypto::sha1sum(s(&a[0])))),
        fixed("sha256sum", &[Str], |a| text(crypto::sha256sum(s(&a[0])))),
        fixed("sha512sum", &[Str], |a| text(crypto::sha512sum(s(&a[0])))),
        fixed("adler32sum", &[Str], |a| text(crypto::adler32sum(s(&a[0])))),
        fixed("bcrypt", &[Str], |a| text(crypto::bcrypt(s(&a[0])))),
        fixed("htpasswd", &[Str, Str], |a| {
            text(crypto::htpasswd(s(&a[0]), s(&a[1])))
        }),
        fixed("derivePassword", &[Int, Str, Str, Str, Str], |a| {
            // Go's parameter is uint32; a constant outside it fails conversion in Go.
            let counter = u32::try_from(int(&a[0]))
                .map_err(|_| err(format!("cannot convert {} to uint32", int(&a[0]))))?;
            text(crypto::derive_password(
                counter,
                s(&a[1]),
                s(&a[2]),
                s(&a[3]),
                s(&a[4]),
            ))
        }),
        fixed("randBytes", &[Int], |a| {
            crypto::rand_bytes(int(&a[0])).map(Value::from).map_err(err)
        }),
        fixed("uuidv4", &[], |_| text(crypto::uuidv4())),
        fixed("encryptAES", &[Str, Str], |a| {
            text(crypto::encrypt_aes(s(&a[0]), s(&a[1])))
        }),
        fixed("decryptAES", &[Str, Str], |a| {
            crypto::decrypt_aes(s(&a[0]), s(&a[1]))
                .map(Value::from)
                .map_err(err)
        }),
        // Keys and certificates.
        fixed("genPrivateKey", &[Str], |a| {
            text(crypto::gen_private_key(s(&a[0])))
        }),
        fixed("buildCustomCert", &[Str, Str], |a| {
            cert_result(crypto::build_custom_cert(s(&a[0]), s(&a[1])))
        }),
        fixed("genCA", &[Str, Int], |a| {
            cert_result(crypto::gen_ca(s(&a[0]), int(&a[1]), None))
        }),
        fixed("genCAWithKey", &[Str, Int, Str], |a| {
            cert_result(crypto::gen_ca(s(&a[0]), int(&a[1]), Some(s(&a[2]))))
        }),
        fixed("genSelfSignedCert", &[Str, List, List, Int], |a| {
            cert_result(crypto::gen_self_signed(
                s(&a[0]),
                ips_param(&a[1])?,
                dns_param(&a[2])?,
                int(&a[3]),
                None,
            ))
        }),
        fixed(
            "genSelfSignedCertWithKey",
            &[Str, List, List, Int, Str],
            |a| {
                cert_result(crypto::gen_self_signed(
                    s(&a[0]),
                    ips_param(&a[1])?,
                    dns_param(&a[2])?,
                    int(&a[3]),
                    Some(s(&a[4])),
                ))
            },
        ),
        fixed("genSignedCert", &[Str, List, List, Int, CERT], |a| {
            let ca = cert_param(&a[4])?;
            cert_result(crypto::gen_signed(
                s(&a[0]),
                ips_param(&a[1])?,
                dns_param(&a[2])?,
                int(&a[3]),
                &ca,
                None,
            ))
        }),
        fixed(
            "genSignedCertWithKey",
            &[Str, List, List, Int, Any, Str],
            |a| {
                let ca = cert_param(&a[4])?;
                cert_result(crypto::gen_signed(
                    s(&a[0]),
                    ips_param(&a[1])?,
                    dns_param(&a[2])?,
                    int(&a[3]),
                    &ca,
                    Some(s(&a[5])),
                ))
            },
        ),
        // Semantic versions.
        fixed("semver", &[Str], |a| {
            Version::parse_loose(s(&a[0]))
                .map(|version| {
                    Value::object(SemverObject {
                        version,
                        pointer: true,
                    })
                })
                .map_err(semver_error)
        }),
        fixed("semverCompare", &[Str, Str], |a| {
            let range = Range::parse(s(&a[0])).map_err(semver_error)?;
            let v = Version::parse_loose(s(&a[1])).map_err(semver_error)?;
            Ok(Value::Bool(range.matches(&v)))
        }),
        // Reflection.
        fixed("typeOf", &[Any], |a| text(a[0].type_name())),
        fixed("typeIs", &[Str, Any], |a| {
            Ok(Value::Bool(s(&a[0]) == a[1].type_name()))
        }),
        fixed("typeIsLike", &[Str, Any], |a| {
            let t = a[1].type_name();
            Ok(Value::Bool(s(&a[0]) == t || format!("*{}", s(&a[0])) == t))
        }),
        fixed("kindOf", &[Any], |a| text(a[0].kind_name())),
        fixed("kindIs", &[Str, Any], |a| {
            Ok(Value::Bool(s(&a[0]) == a[1].kind_name()))
        }),
        fixed("deepEqual", &[Any, Any], |a| {
            Ok(Value::Bool(crate::conv::deep_equal(&a[0], &a[1])))
        }),
        // Network: Helm replaces Sprig's lookup with one that returns "" unless DNS is enabled
        // (`--enable-dns`, off by default). A render here never touches the network, so this is
        // Helm's default behaviour, always.
        fixed("getHostByName", &[Str], |_| text("")),
        // Paths (Go's path and, on Linux, path/filepath).
        fixed("base", &[Str], |a| text(paths::base(s(&a[0])))),
        fixed("dir", &[Str], |a| text(paths::dir(s(&a[0])))),
        fixed("clean", &[Str], |a| text(paths::clean(s(&a[0])))),
        fixed("ext", &[Str], |a| text(paths::ext(s(&a[0])))),
        fixed("isAbs", &[Str], |a| {
            Ok(Value::Bool(s(&a[0]).starts_with('/')))
        }),
        fixed("osBase", &[Str], |a| text(paths::base(s(&a[0])))),
        fixed("osDir", &[Str], |a| text(paths::dir(s(&a[0])))),
        fixed("osClean", &[Str], |a| text(paths::clean(s(&a[0])))),
        fixed("osExt", &[Str], |a| text(paths::ext(s(&a[0])))),
        fixed("osIsAbs", &[Str], |a| {
            Ok(Value::Bool(s(&a[0]).starts_with('/')))
        }),
        // URLs.
        fixed("urlParse", &[Str], |a| {
            let u = url::parse(s(&a[0])).map_err(|e| err(format!("unable to parse url: {e}")))?;
            let m = Map::new();
            m.insert("scheme", u.scheme.clone());
            m.insert("host", u.host.clone());
            m.insert("hostname", u.hostname());
            m.insert("path", u.path.clone());
            m.insert("query", u.raw_query.clone());
            m.insert("opaque", u.opaque.clone());
            m.insert("fragment", u.fragment.clone());
            m.insert("userinfo", u.userinfo.clone().unwrap_or_default());
            Ok(Value::Map(m))
        }),
        fixed("urlJoin", &[MapT], |a| {
            let get = |key: &str| -> Result<String, FuncError> {
                match a[0].as_map().and_then(|m| m.get(key)).as_ref() {
                    None => Ok(String::new()),
                    Some(Value::String(v)) => Ok(v.to_string()),
                    Some(Value::Nil) => Err(err(crate::conv::NIL_DEREF)),
                    Some(other) => Err(err(format!(
                        "unable to parse {key} key, must be of type string, but {} found",
                        other.kind_name()
                    ))),
                }
            };
            // Sprig re-reads the user info through a whole URL to escape it.
            let userinfo = get("userinfo")?;
            let userinfo = if userinfo.is_empty() {
                None
            } else {
                url::parse(&format!("proto://{userinfo}@host"))
                    .map_err(|e| err(format!("unable to parse userinfo in dict: {e}")))?
                    .userinfo
            };
            let u = url::Url {
                scheme: get("scheme")?,
                host: get("host")?,
                path: get("path")?,
                raw_query: get("query")?,
                opaque: get("opaque")?,
                fragment: get("fragment")?,
                userinfo,
            };
            text(u.to_string())
        }),
    ]
}

#[cfg(test)]
mod tests {
    use crate::tests::{call, call_err, list, render};
    use ferroflux_gotemplate::{Map, Value};

    #[test]
    fn semver_functions() {
        assert_eq!(
            render("semverCompare", &[">=1.2.3".into(), "1.2.4".into()]),
            "true"
        );
        assert_eq!(
            render("semverCompare", &["^1.2.0".into(), "2.0.0".into()]),
            "false"
        );
        assert_eq!(
            render(
                "semverCompare",
                &[">=1.21-0".into(), "v1.31.0-gke.100".into()]
            ),
            "true"
        );
        assert_eq!(
            render(
                "semverCompare",
                &[">=1.21".into(), "v1.31.0-gke.100".into()]
            ),
            "false"
        );
        assert_eq!(
            call_err("semverCompare", &[">=1.2.3".into(), "x".into()]),
            "invalid semantic version"
        );
        assert!(
            call_err("semverCompare", &["abc".into(), "1.0.0".into()])
                .starts_with("improper constraint: ")
        );
        let v = call("semver", &["v1.2.3-rc.1+b5".into()]);
        assert_eq!(v.to_string(), "1.2.3-rc.1+b5");
        assert_eq!(v.type_name(), "*semver.Version");
        assert_eq!(
            call_err("semver", &["1.x".into()]),
            "invalid semantic version"
        );
    }

    #[test]
    fn reflection() {
        assert_eq!(render("typeOf", &[Value::Int64(1)]), "int64");
        assert_eq!(render("typeOf", &[Value::Nil]), "<nil>");
        assert_eq!(render("kindOf", &[list(&["a"])]), "slice");
        assert_eq!(
            render("kindIs", &["map".into(), Value::Map(Map::new())]),
            "true"
        );
        assert_eq!(
            render("typeIs", &["float64".into(), Value::Float(1.0)]),
            "true"
        );
        assert_eq!(
            render(
                "typeIsLike",
                &["semver.Version".into(), call("semver", &["1.0.0".into()])]
            ),
            "true"
        );
        assert_eq!(render("deepEqual", &[list(&["a"]), list(&["a"])]), "true");
        assert_eq!(
            render("deepEqual", &[Value::Int(1), Value::Int64(1)]),
            "false"
        );
    }

    #[test]
    fn paths_and_urls() {
        assert_eq!(render("base", &["/a/b.txt".into()]), "b.txt");
        assert_eq!(render("dir", &["/a/b.txt".into()]), "/a");
        assert_eq!(render("clean", &["a//b/../c/".into()]), "a/c");
        assert_eq!(render("ext", &["x.tar.gz".into()]), ".gz");
        assert_eq!(render("isAbs", &["/x".into()]), "true");
        let u = call(
            "urlParse",
            &["https://user:pw@example.com:8443/a%20b/c?x=1&y=2#frag".into()],
        );
        assert_eq!(
            u.to_string(),
            "map[fragment:frag host:example.com:8443 hostname:example.com opaque: path:/a b/c query:x=1&y=2 scheme:https userinfo:user:pw]"
        );
        assert_eq!(
            render("urlJoin", &[u]),
            "https://user:pw@example.com:8443/a%20b/c?x=1&y=2#frag"
        );
        let m = Map::new();
        m.insert("host", "example.com");
        m.insert("scheme", "http");
        m.insert("path", "p");
        assert_eq!(
            render("urlJoin", &[Value::Map(m.clone())]),
            "http://example.com/p"
        );
        m.insert("query", Value::Int(1));
        assert_eq!(
            call_err("urlJoin", &[Value::Map(m)]),
            "unable to parse query key, must be of type string, but int found"
        );
        assert_eq!(render("getHostByName", &["example.com".into()]), "");
    }

    #[test]
    fn certificates_through_the_table() {
        let ca = call("genCA", &["ca".into(), Value::Int(10)]);
        assert_eq!(ca.type_name(), "sprig.certificate");
        let cert = call(
            "genSignedCert",
            &[
                "svc".into(),
                list(&["10.1.2.3"]),
                list(&["svc.local"]),
                Value::Int(5),
                ca.clone(),
            ],
        );
        let Value::Object(o) = &cert else {
            panic!("not an object")
        };
        assert!(
            o.field("Cert")
                .unwrap()
                .as_str()
                .unwrap()
                .starts_with("-----BEGIN CERTIFICATE-----\n")
        );
        assert_eq!(
            call_err(
                "genSelfSignedCert",
                &["x".into(), list(&["nope"]), Value::Nil, Value::Int(1)]
            ),
            "error parsing ip: nope"
        );
        assert_eq!(
            call_err(
                "genSignedCert",
                &[
                    "x".into(),
                    Value::Nil,
                    Value::Nil,
                    Value::Int(1),
                    "ca".into()
                ]
            ),
            "wrong type for value; expected sprig.certificate; got string"
        );
        assert_eq!(
            render("sha256sum", &["".into()]),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
