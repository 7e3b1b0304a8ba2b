//! AWS Signature Version 4 for the S3 requests this crate makes (header-based, `s3` service):
//! the canonical request, the string to sign, the derived key and the `Authorization` header.
//! Written from AWS's published algorithm; checked against its published examples.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// The SHA-256 of an empty payload: what every GET and HEAD signs.
pub const EMPTY_PAYLOAD_SHA256: &str =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// A static access key and its secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The access key id (not secret; it appears in the `Authorization` header).
    pub access_key: String,
    /// The secret key (never logged, never in an error).
    pub secret_key: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key", &self.access_key)
            .field("secret_key", &"<redacted>")
            .finish()
    }
}

/// One request to sign. `path` and the query pairs are raw (not yet encoded); `headers` are
/// the extra headers to sign besides `host`, `x-amz-content-sha256` and `x-amz-date`.
pub struct Request<'a> {
    /// `GET`, `HEAD`.
    pub method: &'a str,
    /// The `Host` header: `host[:port]` as in the URL.
    pub host: &'a str,
    /// The absolute path, unencoded (`/bucket/key with space`).
    pub path: &'a str,
    /// The query parameters, unencoded.
    pub query: &'a [(&'a str, &'a str)],
    /// Other headers to sign (lowercase names).
    pub headers: &'a [(&'a str, &'a str)],
    /// Hex SHA-256 of the payload.
    pub payload_sha256: &'a str,
}

/// Percent-encodes `s` as SigV4 asks: everything but `A-Za-z0-9-_.~` (and `/` when
/// `keep_slash`, for paths).
pub fn uri_encode(s: &str, keep_slash: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b'/' if keep_slash => out.push('/'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// The encoded query string, sorted by name then value: both what is signed and what is sent.
pub fn canonical_query(query: &[(&str, &str)]) -> String {
    let mut pairs: Vec<(String, String)> = query
        .iter()
        .map(|(k, v)| (uri_encode(k, false), uri_encode(v, false)))
        .collect();
    pairs.sort();
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    // HMAC takes a key of any length: new_from_slice cannot fail for it.
    let mut mac = match Hmac::<Sha256>::new_from_slice(key) {
        Ok(m) => m,
        Err(_) => unreachable!("HMAC-SHA256 accepts keys of any length"),
    };
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

/// The headers to add to `req` (`x-amz-date`, `x-amz-content-sha256`, `authorization`), signed
/// for `region` at `amz_date` (`YYYYMMDDTHHMMSSZ`).
pub fn sign(
    req: &Request<'_>,
    creds: &Credentials,
    region: &str,
    amz_date: &str,
) -> Vec<(String, String)> {
    let date = &amz_date[..amz_date.len().min(8)];
    let mut headers: Vec<(String, String)> = vec![
        ("host".into(), req.host.to_string()),
        (
            "x-amz-content-sha256".into(),
            req.payload_sha256.to_string(),
        ),
        ("x-amz-date".into(), amz_date.to_string()),
    ];
    headers.extend(
        req.headers
            .iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v.trim().to_string())),
    );
    headers.sort();
    let signed_headers = headers
        .iter()
        .map(|(k, _)| k.as_str())
        .collect::<Vec<_>>()
        .join(";");
    let canonical_headers: String = headers.iter().map(|(k, v)| format!("{k}:{v}\n")).collect();
    let canonical_request = format!(
        "{}\n{}\n{}\n{}\n{}\n{}",
        req.method,
        uri_encode(req.path, true),
        canonical_query(req.query),
        canonical_headers,
        signed_headers,
        req.payload_sha256
    );
    let scope = format!("{date}/{region}/s3/aws4_request");
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
        hex(&Sha256::digest(canonical_request.as_bytes()))
    );
    let key = hmac(
        &hmac(
            &hmac(
                &hmac(
                    format!("AWS4{}", creds.secret_key).as_bytes(),
                    date.as_bytes(),
                ),
                region.as_bytes(),
            ),
            b"s3",
        ),
        b"aws4_request",
    );
    let signature = hex(&hmac(&key, string_to_sign.as_bytes()));
    vec![
        ("x-amz-date".into(), amz_date.to_string()),
        (
            "x-amz-content-sha256".into(),
            req.payload_sha256.to_string(),
        ),
        (
            "authorization".into(),
            format!(
                "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed_headers}, Signature={signature}",
                creds.access_key
            ),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example_creds() -> Credentials {
        Credentials {
            access_key: "AKIAIOSFODNN7EXAMPLE".into(),
            secret_key: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY".into(),
        }
    }

    fn signature(headers: &[(String, String)]) -> String {
        let auth = &headers
            .iter()
            .find(|(k, _)| k == "authorization")
            .unwrap()
            .1;
        auth.rsplit_once("Signature=").unwrap().1.to_string()
    }

    /// AWS's published example "GET Object" (a Range header signed beside the usual three).
    #[test]
    fn signs_aws_get_object_example() {
        let req = Request {
            method: "GET",
            host: "examplebucket.s3.amazonaws.com",
            path: "/test.txt",
            query: &[],
            headers: &[("range", "bytes=0-9")],
            payload_sha256: EMPTY_PAYLOAD_SHA256,
        };
        let h = sign(&req, &example_creds(), "us-east-1", "20130524T000000Z");
        assert_eq!(
            signature(&h),
            "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        );
        let auth = &h.iter().find(|(k, _)| k == "authorization").unwrap().1;
        assert!(auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "), "{auth}");
    }

    /// AWS's published example "GET Bucket (List Objects)": query parameters are sorted.
    #[test]
    fn signs_aws_list_objects_example() {
        let req = Request {
            method: "GET",
            host: "examplebucket.s3.amazonaws.com",
            path: "/",
            query: &[("prefix", "J"), ("max-keys", "2")],
            headers: &[],
            payload_sha256: EMPTY_PAYLOAD_SHA256,
        };
        let h = sign(&req, &example_creds(), "us-east-1", "20130524T000000Z");
        assert_eq!(
            signature(&h),
            "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7"
        );
    }

    #[test]
    fn encodes_paths_and_queries() {
        assert_eq!(uri_encode("/b/a b/ü+x~", true), "/b/a%20b/%C3%BC%2Bx~");
        assert_eq!(
            canonical_query(&[("prefix", "a/b"), ("list-type", "2")]),
            "list-type=2&prefix=a%2Fb"
        );
        assert!(!format!("{:?}", example_creds()).contains("EXAMPLEKEY"));
    }
}
