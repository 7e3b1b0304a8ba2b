//! A blocking client of the S3 API, the subset a Bucket source needs: does the bucket exist
//! (`HEAD`), list its objects (`ListObjectsV2`, every page), and get one object into a file.
//! Requests are signed with SigV4 when keys are given, anonymous otherwise. Path-style
//! addressing (`/bucket/key`), except on `*.amazonaws.com` where a DNS-compatible bucket name is
//! addressed virtual-hosted (`bucket.s3.amazonaws.com/key`), as minio-go's automatic lookup
//! does.

use std::io::Read;
use std::sync::Arc;
use std::time::Duration;

use ureq::tls::{Certificate, PemItem, RootCerts, TlsConfig};

use crate::sigv4::{self, Credentials, EMPTY_PAYLOAD_SHA256};
use crate::xml;

/// Why an S3 request failed. Messages never hold a credential.
#[derive(Debug, thiserror::Error)]
pub enum S3Error {
    /// No HTTP answer (DNS, connection, TLS, timeout), in Go's `Method "url": detail` form.
    #[error("{method} \"{url}\": {detail}")]
    Unreachable {
        /// `GET`, `HEAD`.
        method: &'static str,
        /// The URL.
        url: String,
        /// What the HTTP client said.
        detail: String,
    },
    /// The server answered with an S3 error: its message, as minio-go reports it.
    #[error("{message}")]
    Api {
        /// HTTP status.
        status: u16,
        /// S3's error code (`NoSuchBucket`, `AccessDenied`, `SignatureDoesNotMatch`…).
        code: String,
        /// S3's message.
        message: String,
    },
    /// The settings cannot make a client (bad endpoint, bad CA).
    #[error("{0}")]
    Invalid(String),
    /// Writing the object locally failed.
    #[error("{0}")]
    Io(String),
}

impl S3Error {
    /// The S3 error code, if the server gave one.
    pub fn code(&self) -> Option<&str> {
        match self {
            S3Error::Api { code, .. } => Some(code),
            _ => None,
        }
    }
}

/// How to reach the endpoint.
#[derive(Debug, Clone)]
pub struct Options {
    /// `host[:port]` (no scheme, as source-controller's minio client requires).
    pub endpoint: String,
    /// Plain HTTP instead of HTTPS.
    pub insecure: bool,
    /// The region requests are signed for; when empty, the bucket's location is asked once
    /// (`us-east-1` if the answer is refused), as minio-go does.
    pub region: String,
    /// Static keys; anonymous requests without.
    pub credentials: Option<Credentials>,
    /// Extra CA certificates (PEM) for HTTPS.
    pub ca_pem: Option<Vec<u8>>,
    /// Deadline of each request.
    pub timeout: Duration,
    /// An HTTP(S) proxy every request goes through (`proxySecretRef`), credentials in its user
    /// info.
    pub proxy: Option<String>,
}

/// An S3 client for one endpoint.
pub struct Client {
    opts: Options,
    agent: ureq::Agent,
    /// The bucket's region found by `GetBucketLocation` when `opts.region` is empty.
    location: std::sync::OnceLock<String>,
}

/// The region a `GetBucketLocation` answer names: S3 answers an empty constraint for
/// `us-east-1` and `EU` for the old name of `eu-west-1`, as minio-go maps them.
pub fn location_region(doc: &str) -> String {
    let text = doc
        .find("<LocationConstraint")
        .map(|start| &doc[start..])
        .and_then(|rest| {
            let open_end = rest.find('>')?;
            if rest[..open_end].ends_with('/') {
                return Some(String::new());
            }
            let body = &rest[open_end + 1..];
            let close = body.find("</LocationConstraint>")?;
            Some(xml::unescape(body[..close].trim()))
        })
        .unwrap_or_default();
    match text.as_str() {
        "" => "us-east-1".to_string(),
        "EU" => "eu-west-1".to_string(),
        other => other.to_string(),
    }
}

/// Checks `host[:port]`: no scheme, no path, a port that is a number.
pub fn validate_endpoint(endpoint: &str) -> Result<(), S3Error> {
    let invalid = |why: &str| S3Error::Invalid(format!("invalid endpoint '{endpoint}': {why}"));
    if endpoint.is_empty() {
        return Err(invalid("empty"));
    }
    if endpoint.contains("://") {
        return Err(invalid(
            "the endpoint is host[:port] without a scheme (spec.insecure selects plain HTTP)",
        ));
    }
    if endpoint.contains('/') || endpoint.contains('?') || endpoint.contains('#') {
        return Err(invalid("the endpoint is host[:port] without a path"));
    }
    if !endpoint.starts_with('[')
        && let Some((_, port)) = endpoint.rsplit_once(':')
        && port.parse::<u16>().is_err()
    {
        return Err(invalid("the port is not a number"));
    }
    Ok(())
}

impl Client {
    /// A client of `opts.endpoint`.
    pub fn new(opts: Options) -> Result<Client, S3Error> {
        validate_endpoint(&opts.endpoint)?;
        let mut tls = TlsConfig::builder();
        if let Some(pem) = &opts.ca_pem {
            let certs: Vec<Certificate<'static>> = ureq::tls::parse_pem(pem)
                .filter_map(|i| match i {
                    Ok(PemItem::Certificate(c)) => Some(c.to_owned()),
                    _ => None,
                })
                .collect();
            if certs.is_empty() {
                return Err(S3Error::Invalid(
                    "the CA bundle holds no PEM certificate".into(),
                ));
            }
            tls = tls.root_certs(RootCerts::Specific(Arc::new(certs)));
        }
        let mut config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .tls_config(tls.build())
            .timeout_global(Some(opts.timeout))
            .user_agent(concat!("ferroflux/", env!("CARGO_PKG_VERSION")))
            .max_redirects(0);
        if let Some(proxy) = &opts.proxy {
            let proxy = ureq::Proxy::new(proxy)
                .map_err(|_| S3Error::Invalid("the proxy address is not a valid URL".into()))?;
            config = config.proxy(Some(proxy));
        }
        let agent = config.build().new_agent();
        Ok(Client {
            opts,
            agent,
            location: std::sync::OnceLock::new(),
        })
    }

    /// The region requests are signed for: `spec.region`, else the bucket's location asked
    /// once (`GET /bucket?location`, signed for `us-east-1` as S3 accepts it from anywhere), as
    /// minio-go does; `us-east-1` when the question itself is refused (S3 lets a policy deny
    /// `GetBucketLocation`), and the requests that follow then report the real refusal.
    fn region(&self, bucket: &str) -> &str {
        if !self.opts.region.is_empty() {
            return &self.opts.region;
        }
        self.location.get_or_init(|| {
            match self.send_signed("GET", bucket, "", &[("location", "")], "us-east-1") {
                Ok((_, resp)) if resp.status().is_success() => {
                    let mut body = String::new();
                    let read = resp
                        .into_body()
                        .into_reader()
                        .take(64 * 1024)
                        .read_to_string(&mut body);
                    match read {
                        Ok(_) => location_region(&body),
                        Err(_) => "us-east-1".to_string(),
                    }
                }
                _ => "us-east-1".to_string(),
            }
        })
    }

    /// `(host, path)` of `bucket`/`key`, path-style or virtual-hosted.
    fn address(&self, bucket: &str, key: &str) -> (String, String) {
        let endpoint = self.opts.endpoint.as_str();
        let host_only = endpoint.split(':').next().unwrap_or(endpoint);
        let dns_bucket = !bucket.contains('.')
            && bucket
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if host_only.ends_with(".amazonaws.com") && dns_bucket {
            (format!("{bucket}.{endpoint}"), format!("/{key}"))
        } else {
            (endpoint.to_string(), format!("/{bucket}/{key}"))
        }
    }

    /// Sends one signed request; `Ok` holds the status, headers and the body reader.
    fn send(
        &self,
        method: &'static str,
        bucket: &str,
        key: &str,
        query: &[(&str, &str)],
    ) -> Result<(String, http_response::Response), S3Error> {
        let region = if self.opts.credentials.is_some() {
            self.region(bucket).to_string()
        } else {
            String::new()
        };
        self.send_signed(method, bucket, key, query, &region)
    }

    /// [`Client::send`] signed for `region` (unsigned without credentials).
    fn send_signed(
        &self,
        method: &'static str,
        bucket: &str,
        key: &str,
        query: &[(&str, &str)],
        region: &str,
    ) -> Result<(String, http_response::Response), S3Error> {
        let (host, path) = self.address(bucket, key);
        let scheme = if self.opts.insecure { "http" } else { "https" };
        let query_string = sigv4::canonical_query(query);
        let mut url = format!("{scheme}://{host}{}", sigv4::uri_encode(&path, true));
        if !query_string.is_empty() {
            url.push('?');
            url.push_str(&query_string);
        }
        let mut headers: Vec<(String, String)> = Vec::new();
        if let Some(creds) = &self.opts.credentials {
            let amz_date = jiff::Timestamp::now()
                .strftime("%Y%m%dT%H%M%SZ")
                .to_string();
            let req = sigv4::Request {
                method,
                host: &host,
                path: &path,
                query,
                headers: &[],
                payload_sha256: EMPTY_PAYLOAD_SHA256,
            };
            headers = sigv4::sign(&req, creds, region, &amz_date);
        }
        let result = match method {
            "HEAD" => {
                let mut r = self.agent.head(&url);
                for (k, v) in &headers {
                    r = r.header(k.as_str(), v.as_str());
                }
                r.call()
            }
            _ => {
                let mut r = self.agent.get(&url);
                for (k, v) in &headers {
                    r = r.header(k.as_str(), v.as_str());
                }
                r.call()
            }
        };
        let resp = result.map_err(|e| S3Error::Unreachable {
            method: if method == "HEAD" { "Head" } else { "Get" },
            url: url.clone(),
            detail: e.to_string(),
        })?;
        Ok((url, resp))
    }

    /// Turns a non-success answer into an [`S3Error::Api`]: S3's code and message, or, for
    /// a bodiless answer (`HEAD`) or one without a message, minio-go's words for the code.
    fn api_error(status: u16, body: &str, bucket_only: bool) -> S3Error {
        let code = xml::first(body, "Code").unwrap_or_else(|| {
            match (status, bucket_only) {
                (404, true) => "NoSuchBucket",
                (404, false) => "NoSuchKey",
                (403, _) => "AccessDenied",
                (301, _) => "PermanentRedirect",
                _ => "",
            }
            .to_string()
        });
        let message = xml::first(body, "Message")
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| match code.as_str() {
                "NoSuchBucket" => "The specified bucket does not exist.".to_string(),
                "NoSuchKey" => "The specified key does not exist.".to_string(),
                "AccessDenied" => "Access Denied.".to_string(),
                "SignatureDoesNotMatch" => "The request signature we calculated does not match the signature you provided. Check your key and signing method.".to_string(),
                "InvalidAccessKeyId" => "The Access Key Id you provided does not exist in our records.".to_string(),
                "PermanentRedirect" => "The bucket is in another region than the one requests are signed for: check spec.region.".to_string(),
                "" => format!("HTTP {status}"),
                other => format!("Error response code {other}."),
            });
        S3Error::Api {
            status,
            code,
            message,
        }
    }

    /// The ETag of object `key` (`HEAD`), unquoted; `None` when there is no such key.
    pub fn head_object(&self, bucket: &str, key: &str) -> Result<Option<String>, S3Error> {
        let (_, resp) = self.send("HEAD", bucket, key, &[])?;
        let status = resp.status().as_u16();
        match status {
            200..=299 => Ok(Some(
                resp.headers()
                    .get("etag")
                    .and_then(|v| v.to_str().ok())
                    .map(|e| xml::trim_etag(e).to_string())
                    .unwrap_or_default(),
            )),
            404 => Ok(None),
            _ => Err(Self::api_error(status, "", false)),
        }
    }

    /// Whether `bucket` exists (`HEAD /bucket`): `false` on 404, an error on any other refusal.
    pub fn bucket_exists(&self, bucket: &str) -> Result<bool, S3Error> {
        let (_, resp) = self.send("HEAD", bucket, "", &[])?;
        let status = resp.status().as_u16();
        match status {
            200..=299 => Ok(true),
            404 => Ok(false),
            _ => Err(Self::api_error(status, "", true)),
        }
    }

    /// Calls `visit(key, etag)` for every object under `prefix`, page after page.
    pub fn visit_objects(
        &self,
        bucket: &str,
        prefix: &str,
        visit: &mut dyn FnMut(&str, &str),
    ) -> Result<(), S3Error> {
        let mut token: Option<String> = None;
        loop {
            let mut query: Vec<(&str, &str)> = vec![("list-type", "2"), ("prefix", prefix)];
            if let Some(t) = &token {
                query.push(("continuation-token", t));
            }
            let (url, resp) = self.send("GET", bucket, "", &query)?;
            let status = resp.status().as_u16();
            let mut body = String::new();
            resp.into_body()
                .into_reader()
                .take(64 * 1024 * 1024)
                .read_to_string(&mut body)
                .map_err(|e| S3Error::Unreachable {
                    method: "Get",
                    url,
                    detail: e.to_string(),
                })?;
            if !(200..300).contains(&status) {
                return Err(Self::api_error(status, &body, true));
            }
            let page = xml::list_page(&body);
            for (key, etag) in &page.objects {
                visit(key, etag);
            }
            match (page.truncated, page.next_token) {
                (true, Some(next)) => token = Some(next),
                // A truncated page without a token would loop forever: stop, as minio-go does.
                _ => return Ok(()),
            }
        }
    }

    /// Writes object `key` to `out`; returns its ETag (unquoted), or `None` when there is no
    /// such key.
    pub fn get_object(
        &self,
        bucket: &str,
        key: &str,
        out: &mut dyn std::io::Write,
    ) -> Result<Option<String>, S3Error> {
        let (url, resp) = self.send("GET", bucket, key, &[])?;
        let status = resp.status().as_u16();
        let etag = resp
            .headers()
            .get("etag")
            .and_then(|v| v.to_str().ok())
            .map(|e| xml::trim_etag(e).to_string())
            .unwrap_or_default();
        let mut reader = resp.into_body().into_reader();
        if !(200..300).contains(&status) {
            let mut body = String::new();
            let _ = (&mut reader).take(64 * 1024).read_to_string(&mut body);
            let err = Self::api_error(status, &body, false);
            if err.code() == Some("NoSuchKey") {
                return Ok(None);
            }
            return Err(err);
        }
        std::io::copy(&mut reader, out).map_err(|e| S3Error::Unreachable {
            method: "Get",
            url,
            detail: e.to_string(),
        })?;
        Ok(Some(etag))
    }
}

/// ureq's response type, named once.
mod http_response {
    /// A response with its streaming body.
    pub type Response = ureq::http::Response<ureq::Body>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_bucket_location_as_minio_go_maps_it() {
        let ns = r#"xmlns="http://s3.amazonaws.com/doc/2006-03-01/""#;
        assert_eq!(
            location_region(&format!(
                "<?xml version=\"1.0\"?>\n<LocationConstraint {ns}>eu-central-1</LocationConstraint>"
            )),
            "eu-central-1"
        );
        assert_eq!(
            location_region(&format!("<LocationConstraint {ns}></LocationConstraint>")),
            "us-east-1"
        );
        assert_eq!(
            location_region(&format!("<LocationConstraint {ns}/>")),
            "us-east-1"
        );
        assert_eq!(
            location_region("<LocationConstraint>EU</LocationConstraint>"),
            "eu-west-1"
        );
        assert_eq!(location_region("not xml"), "us-east-1");
    }

    #[test]
    fn endpoints_are_host_and_port_only() {
        assert!(validate_endpoint("minio.minio.svc:9000").is_ok());
        assert!(validate_endpoint("s3.amazonaws.com").is_ok());
        assert!(validate_endpoint("[::1]:9000").is_ok());
        for bad in [
            "",
            "https://s3.amazonaws.com",
            "minio:9000/path",
            "minio:port",
        ] {
            assert!(validate_endpoint(bad).is_err(), "{bad}");
        }
    }
}
