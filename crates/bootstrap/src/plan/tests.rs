//! The plan's URL rules: what the cluster's GitRepository is given and what is refused.

use super::*;

/// A request for `url` with the flags' defaults, the cluster folder `clusters/staging`.
pub(crate) fn request(url: &str) -> Request {
    Request {
        url: url.into(),
        branch: "main".into(),
        path: "./clusters/staging/".into(),
        interval: Duration::from_secs(60),
        private_key_file: None,
        known_hosts_file: None,
        username: "git".into(),
        password: None,
        token_auth: false,
        allow_insecure_http: false,
        ca_file: None,
        secret_name: None,
        namespace: "flux-system".into(),
    }
}

#[test]
fn https_with_a_password_gives_the_cluster_the_same_credentials_and_a_plain_url() {
    let mut req = request("https://bot@git.example.com/fleet.git");
    req.password = Some("t0ken".into());
    let plan = Plan::new(&req).unwrap();
    assert_eq!(plan.sync.url, "https://git.example.com/fleet.git");
    assert_eq!(plan.sync.target_path, "clusters/staging");
    assert_eq!(plan.sync.secret_name, "flux-system");
    assert_eq!(plan.manifests_dir(), "clusters/staging/flux-system");
    assert_eq!(plan.secret["username"], "git");
    assert_eq!(plan.secret["password"], "t0ken");
    assert!(matches!(plan.auth, Auth::Basic { .. }));
    assert_eq!(plan.warnings.len(), 1, "{:?}", plan.warnings);
    assert!(plan.warnings[0].contains("does not generate SSH deploy keys"));

    req.token_auth = true;
    assert!(Plan::new(&req).unwrap().warnings.is_empty());
}

#[test]
fn file_urls_need_nothing_and_refuse_credentials() {
    let mut req = request("file:///srv/fleet.git");
    req.path = String::new();
    let plan = Plan::new(&req).unwrap();
    assert!(matches!(plan.auth, Auth::None));
    assert!(plan.secret.is_empty());
    assert_eq!(plan.manifests_dir(), "flux-system");
    req.password = Some("x".into());
    let err = Plan::new(&req).unwrap_err().to_string();
    assert!(err.contains("file:// URLs take no credentials"), "{err}");
}

#[test]
fn bad_requests_name_the_flag() {
    let cases: Vec<(Request, &str)> = vec![
        (
            Request {
                interval: Duration::ZERO,
                ..request("file:///x.git")
            },
            "--interval must be more than zero",
        ),
        (
            Request {
                branch: "-f".into(),
                ..request("file:///x.git")
            },
            "invalid --branch \"-f\"",
        ),
        (
            request("git@example.com:fleet.git"),
            "is not a URL: use file://, https:// or ssh://",
        ),
        (
            request("ftp://example.com/x"),
            "scheme \"ftp\" is not supported",
        ),
        (
            request("https://u:p@example.com/x"),
            "--url must not hold a password",
        ),
        (
            Request {
                token_auth: true,
                ..request("ssh://git@example.com/x")
            },
            "--token-auth is for https:// URLs",
        ),
        (
            Request {
                path: "a/../../b".into(),
                ..request("file:///x.git")
            },
            "it must stay inside the repository",
        ),
    ];
    for (req, message) in cases {
        let err = Plan::new(&req).unwrap_err().to_string();
        assert!(err.contains(message), "{}: {err}", req.url);
    }
}

#[test]
fn a_missing_ca_file_is_named() {
    let mut req = request("https://example.com/x");
    req.ca_file = Some("/nonexistent/ca.pem".into());
    let err = Plan::new(&req).unwrap_err();
    assert_eq!(
        err.to_string(),
        "unable to read TLS CA file /nonexistent/ca.pem"
    );
    assert!(std::error::Error::source(&err).is_some());
}

#[test]
fn known_hosts_names_are_sshs() {
    assert_eq!(known_hosts_name("example.com"), "example.com");
    assert_eq!(known_hosts_name("example.com:22"), "example.com");
    assert_eq!(known_hosts_name("127.0.0.1:2222"), "[127.0.0.1]:2222");
    assert_eq!(known_hosts_name("[::1]:2222"), "[::1]:2222");
}
