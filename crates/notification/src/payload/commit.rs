//! The commit-status types: GitHub, GitLab, Gitea, Bitbucket, Bitbucket Server and Azure
//! DevOps. Each reads the commit from the event's revision (`main@sha1:<sha>`; an event without
//! one is refused as Flux refuses it), lists the commit's statuses and sets its own only when
//! its state or description changed. Flux's states: `info` is success (Gitea: pending while
//! `Progressing`; the others skip `Progressing` events), `error` is failure.
//!
//! GitHub's repository dispatch (`githubdispatch`), which shares GitHub's address and token,
//! lives here too.
//!
//! Beyond Flux: the status' context (or key) ends with the cluster's name when the event
//! carries it, so statuses from staging and production on one commit do not overwrite each
//! other.

use super::{Duplicate, PayloadError, Plan, ProviderConfig, Request, basic_auth, escape, redact};
use crate::event::{Event, SEVERITY_ERROR, SEVERITY_INFO};
use crate::sha1::sha1_hex;
use serde_json::json;

/// Flux's `splitCamelcase`, lower-cased and joined: `HealthCheckFailed` → `health check failed`.
pub fn describe_reason(reason: &str) -> String {
    let mut runs: Vec<Vec<char>> = Vec::new();
    let mut last = 0;
    for c in reason.chars() {
        let class = if c.is_lowercase() {
            1
        } else if c.is_uppercase() {
            2
        } else if c.is_ascii_digit() {
            3
        } else {
            4
        };
        match runs.last_mut() {
            Some(run) if class == last => run.push(c),
            _ => runs.push(vec![c]),
        }
        last = class;
    }
    // An upper-case run followed by a lower-case one gives its last letter to the word after
    // it: `HTTPServer` → `HTTP Server`.
    for i in 0..runs.len().saturating_sub(1) {
        let upper = runs[i].first().is_some_and(|c| c.is_uppercase());
        let lower_next = runs[i + 1].first().is_some_and(|c| c.is_lowercase());
        if upper
            && lower_next
            && let Some(moved) = runs[i].pop()
        {
            runs[i + 1].insert(0, moved);
        }
    }
    runs.iter()
        .filter(|r| !r.is_empty())
        .map(|r| r.iter().collect::<String>())
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// The commit hash of a Flux revision: `main@sha1:<hex>`, `sha1:<hex>`, legacy `main/<hex>`,
/// or a bare hash.
pub fn commit_of(revision: &str) -> Result<String, PayloadError> {
    let tail = revision.rsplit_once('@').map_or(revision, |(_, t)| t);
    let hash = match tail.split_once(':') {
        Some((algo, hash)) if algo == "sha1" || algo == "sha256" => hash,
        Some(_) => "",
        None => tail.rsplit_once('/').map_or(tail, |(_, h)| h),
    };
    let valid =
        (hash.len() == 40 || hash.len() == 64) && hash.chars().all(|c| c.is_ascii_hexdigit());
    if valid {
        Ok(hash.to_string())
    } else {
        Err(PayloadError::InvalidRevision(revision.to_string()))
    }
}

/// `https://host` and `owner/repo` of a Git address (`ssh://` becomes `https://`).
pub fn parse_git_address(address: &str) -> Result<(String, String), PayloadError> {
    let invalid = || PayloadError::InvalidAddress {
        what: "Git repository",
        url: redact(address),
    };
    // scp-like `git@host:owner/repo.git`.
    let (scheme, rest) = match address.split_once("://") {
        Some((s, r)) => (s, r.to_string()),
        None => match address.split_once(':') {
            Some((host, path)) if !host.contains('/') => ("ssh", format!("{host}/{path}")),
            _ => return Err(invalid()),
        },
    };
    let scheme = if scheme == "ssh" { "https" } else { scheme };
    let end = rest.find('/').ok_or_else(invalid)?;
    let authority = &rest[..end];
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let id = rest[end..].trim_start_matches('/').trim_end_matches(".git");
    if host.is_empty() || id.is_empty() {
        return Err(invalid());
    }
    Ok((format!("{scheme}://{host}"), id.to_string()))
}

/// The commit status context: what the Provider's `commitStatusExpr` gave, else
/// `<kind>/<name>/<cluster>` when the cluster is known, else Flux's
/// `<kind>/<name>/<first part of the provider's UID>`; lower case.
pub fn commit_status_context(provider: &ProviderConfig, event: &Event) -> String {
    if let Some(id) = &provider.commit_status_id {
        return id.clone();
    }
    let last = match event.cluster() {
        Some(cluster) => cluster.to_string(),
        None => provider
            .uid
            .split('-')
            .next()
            .unwrap_or_default()
            .to_string(),
    };
    format!(
        "{}/{}/{}",
        event.involved_object.kind, event.involved_object.name, last
    )
    .to_lowercase()
}

/// The commit a status goes on, and Flux's state for the event's severity (`success`/`failure`
/// in the service's words); `None` for a `Progressing` event, which sets no status.
fn commit_and_state<'a>(
    event: &Event,
    service: &str,
    success: &'a str,
    failure: &'a str,
) -> Result<Option<(String, &'a str)>, PayloadError> {
    if event.reason == "Progressing" {
        return Ok(None);
    }
    let revision = event.revision().ok_or(PayloadError::MissingRevision)?;
    let sha = commit_of(revision)?;
    let state = match event.severity.as_str() {
        SEVERITY_INFO => success,
        SEVERITY_ERROR => failure,
        _ => {
            return Err(PayloadError::Missing(format!(
                "can't convert to {service} state"
            )));
        }
    };
    Ok(Some((sha, state)))
}

const PROGRESSING: &str = "progressing events set no commit status";

/// `owner` and `repo` of an `owner/repo` id.
pub(super) fn owner_repo<'a>(
    id: &'a str,
    address: &str,
    what: &'static str,
) -> Result<(&'a str, &'a str), PayloadError> {
    match id.split_once('/') {
        Some((owner, repo)) if !owner.is_empty() && !repo.is_empty() && !repo.contains('/') => {
            Ok((owner, repo))
        }
        _ => Err(PayloadError::InvalidAddress {
            what,
            url: redact(address),
        }),
    }
}

/// The token, or the password when only that is set (Flux's fallback for Git hosts).
pub(super) fn token_of(p: &ProviderConfig) -> &str {
    if p.token.is_empty() {
        &p.password
    } else {
        &p.token
    }
}

pub(super) fn github(p: &ProviderConfig, event: &Event) -> Result<Plan, PayloadError> {
    let Some((sha, state)) = commit_and_state(event, "github", "success", "failure")? else {
        return Ok(Plan::Skip(PROGRESSING));
    };
    let (host, id) = parse_git_address(&p.address)?;
    let (owner, repo) = owner_repo(&id, &p.address, "GitHub repository")?;
    let api = if host == "https://github.com" {
        "https://api.github.com/".to_string()
    } else {
        format!("{host}/api/v3/")
    };
    let description = describe_reason(&event.reason);
    let context = commit_status_context(p, event);
    let auth = format!("Bearer {}", token_of(p));
    let accept = "application/vnd.github.v3+json";
    let list = Request::get(format!(
        "{api}repos/{owner}/{repo}/commits/{sha}/statuses?per_page=50"
    ))
    .header("Authorization", auth.clone())
    .header("Accept", accept);
    let post = Request::json(
        format!("{api}repos/{owner}/{repo}/statuses/{sha}"),
        &json!({"state": state, "description": description, "context": context}),
    )
    .header("Authorization", auth)
    .header("Accept", accept);
    Ok(Plan::CommitStatus {
        list,
        post,
        duplicate: Duplicate {
            items: "",
            single: false,
            missing_is_none: false,
            key: vec![("/context", context)],
            same: vec![("/state", state.into()), ("/description", description)],
            first_decides: true,
        },
    })
}

/// GitLab's commit status API (`/api/v4`), authenticated by `PRIVATE-TOKEN`; the project is the
/// address' path (`group/subgroup/repo`).
pub(super) fn gitlab(p: &ProviderConfig, event: &Event) -> Result<Plan, PayloadError> {
    let Some((sha, state)) = commit_and_state(event, "gitlab", "success", "failed")? else {
        return Ok(Plan::Skip(PROGRESSING));
    };
    let (host, id) = parse_git_address(&p.address)?;
    // go-gitlab escapes the project path whole, dots included.
    let project = escape(&id, "").replace('.', "%2E");
    let name = commit_status_context(p, event);
    let description = describe_reason(&event.reason);
    let token = token_of(p).to_string();
    let list = Request::get(format!(
        "{host}/api/v4/projects/{project}/repository/commits/{sha}/statuses?name={}",
        escape(&name, "")
    ))
    .header("PRIVATE-TOKEN", token.clone());
    let post = Request::json(
        format!("{host}/api/v4/projects/{project}/statuses/{sha}"),
        &json!({"state": state, "name": name, "description": description}),
    )
    .header("PRIVATE-TOKEN", token);
    Ok(Plan::CommitStatus {
        list,
        post,
        duplicate: Duplicate {
            items: "",
            single: false,
            missing_is_none: false,
            key: vec![("/sha", sha), ("/name", name)],
            same: vec![("/status", state.into()), ("/description", description)],
            first_decides: false,
        },
    })
}

/// Gitea's (and Forgejo's) commit status API (`/api/v1`), authenticated by `token`. Unlike
/// the others, a `Progressing` event sets a `pending` status.
pub(super) fn gitea(p: &ProviderConfig, event: &Event) -> Result<Plan, PayloadError> {
    let revision = event.revision().ok_or(PayloadError::MissingRevision)?;
    let sha = commit_of(revision)?;
    let state = if event.reason == "Progressing" {
        "pending"
    } else {
        match event.severity.as_str() {
            SEVERITY_INFO => "success",
            SEVERITY_ERROR => "failure",
            _ => return Err(PayloadError::Missing("can't convert to gitea state".into())),
        }
    };
    let (host, id) = parse_git_address(&p.address)?;
    let (owner, repo) = owner_repo(&id, &p.address, "Gitea repository")?;
    let context = commit_status_context(p, event);
    let description = describe_reason(&event.reason);
    let auth = format!("token {}", token_of(p));
    let api = format!("{host}/api/v1/repos/{owner}/{repo}");
    let list = Request::get(format!("{api}/commits/{sha}/statuses?page=1&limit=50"))
        .header("Authorization", auth.clone());
    let post = Request::json(
        format!("{api}/statuses/{sha}"),
        &json!({"state": state, "target_url": "", "description": description, "context": context}),
    )
    .header("Authorization", auth);
    Ok(Plan::CommitStatus {
        list,
        post,
        duplicate: Duplicate {
            items: "",
            single: false,
            missing_is_none: false,
            key: vec![("/context", context)],
            same: vec![("/state", state.into()), ("/description", description)],
            first_decides: true,
        },
    })
}

/// The status' display name: Flux's `kind/name`, with the cluster when known (the key already
/// keeps clusters apart; the name lets a reader tell them apart too).
fn display_name(event: &Event) -> String {
    let o = &event.involved_object;
    let name = format!("{}/{}", o.kind, o.name).to_lowercase();
    match event.cluster() {
        Some(cluster) => format!("{name}/{cluster}"),
        None => name,
    }
}

/// Bitbucket Cloud's build status API at api.bitbucket.org; the token is `<user>:<app
/// password>`; the status key is the SHA-1 of the context.
pub(super) fn bitbucket(p: &ProviderConfig, event: &Event) -> Result<Plan, PayloadError> {
    let Some((user, password)) = p.token.split_once(':').filter(|(_, pw)| !pw.contains(':')) else {
        return Err(PayloadError::Missing(
            "invalid token format, expected to be <user>:<password>".into(),
        ));
    };
    let Some((sha, state)) = commit_and_state(event, "bitbucket", "SUCCESSFUL", "FAILED")? else {
        return Ok(Plan::Skip(PROGRESSING));
    };
    let (_, id) = parse_git_address(&p.address)?;
    let (owner, repo) = owner_repo(&id, &p.address, "Bitbucket repository")?;
    let key = sha1_hex(commit_status_context(p, event).as_bytes());
    let name = display_name(event);
    let description = describe_reason(&event.reason);
    let auth = basic_auth(user, password);
    let statuses = format!(
        "https://api.bitbucket.org/2.0/repositories/{owner}/{repo}/commit/{sha}/statuses/build"
    );
    let list = Request::get(format!("{statuses}/{key}")).header("Authorization", auth.clone());
    let post = Request::json(
        statuses,
        &json!({"key": key, "url": "https://bitbucket.org", "state": state, "name": name,
                "description": description}),
    )
    .header("Authorization", auth);
    Ok(Plan::CommitStatus {
        list,
        post,
        duplicate: Duplicate {
            items: "",
            single: true,
            missing_is_none: true,
            key: Vec::new(),
            same: vec![("/state", state.into()), ("/description", description)],
            first_decides: true,
        },
    })
}

/// Bitbucket Server's (Data Center's) build status API; the address is the repository's HTTP
/// clone URL (`https://host[/context]/scm/<project>/<repo>.git`); a token (Bearer) or username
/// and password (Basic).
pub(super) fn bitbucketserver(p: &ProviderConfig, event: &Event) -> Result<Plan, PayloadError> {
    let (base, project, repo) = parse_bitbucket_server_address(&p.address)?;
    let Some((sha, state)) = commit_and_state(event, "bitbucket server", "SUCCESSFUL", "FAILED")?
    else {
        return Ok(Plan::Skip(PROGRESSING));
    };
    let description = describe_reason(&event.reason);
    // Bitbucket Server shows the name only: Flux puts the description in it.
    let name = format!("{} [{description}]", display_name(event));
    let key = sha1_hex(commit_status_context(p, event).as_bytes());
    let auth = if p.token.is_empty() {
        basic_auth(&p.username, &p.password)
    } else {
        format!("Bearer {}", p.token)
    };
    let builds =
        format!("{base}/rest/api/latest/projects/{project}/repos/{repo}/commits/{sha}/builds");
    let common = |r: Request| {
        r.header("Authorization", auth.clone())
            .header("x-atlassian-token", "no-check")
            .header("x-requested-with", "XMLHttpRequest")
    };
    let list = common(Request::get(format!("{builds}?key={key}")));
    let post = common(Request::json(
        builds,
        &json!({"description": description, "key": key, "name": name, "state": state,
                "url": p.address}),
    ));
    Ok(Plan::CommitStatus {
        list,
        post,
        duplicate: Duplicate {
            items: "",
            single: true,
            missing_is_none: true,
            key: Vec::new(),
            same: vec![
                ("/key", key),
                ("/state", state.into()),
                ("/description", description),
                ("/name", name),
            ],
            first_decides: true,
        },
    })
}

/// `scheme://host[/context]`, project key and repository slug of a Bitbucket Server clone URL.
pub fn parse_bitbucket_server_address(
    address: &str,
) -> Result<(String, String, String), PayloadError> {
    let invalid = |why: &str| {
        PayloadError::Missing(format!(
            "could not parse git address {:?}: {why}",
            redact(address)
        ))
    };
    let (scheme, rest) = address
        .split_once("://")
        .filter(|(s, _)| *s == "http" || *s == "https")
        .ok_or_else(|| invalid("unsupported scheme, must be http or https"))?;
    let end = rest.find('/').unwrap_or(rest.len());
    let authority = &rest[..end];
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let path = rest[end..].trim_end_matches(".git");
    let at = path
        .rfind("/scm/")
        .ok_or_else(|| invalid("not an http(s) clone URL (no /scm/ in its path)"))?;
    let id = &path[at + "/scm/".len()..];
    match id.split('/').collect::<Vec<_>>()[..] {
        [project, repo] if !project.is_empty() && !repo.is_empty() => Ok((
            format!("{scheme}://{host}{}", &path[..at]),
            project.to_string(),
            repo.to_string(),
        )),
        _ => Err(invalid(&format!("invalid repository id {id:?}"))),
    }
}

/// Azure DevOps' Git status API; the address is the repository's URL
/// (`https://dev.azure.com/<org>/<project>/_git/<repo>`) and the token a personal access token
/// (Basic, empty user). Flux's workload identity (no token) needs Azure's network and is not
/// supported by ferroflux.
pub(super) fn azuredevops(p: &ProviderConfig, event: &Event) -> Result<Plan, PayloadError> {
    let (host, id) = parse_git_address(&p.address)?;
    let (org, project, repo) = match id.split('/').collect::<Vec<_>>()[..] {
        [org, project, _, repo] => (org, project, repo),
        _ => {
            return Err(PayloadError::Missing(format!(
                "invalid repository id {id:?}: expected <organisation>/<project>/_git/<repository>"
            )));
        }
    };
    let Some((sha, state)) = commit_and_state(event, "azure devops", "succeeded", "error")? else {
        return Ok(Plan::Skip(PROGRESSING));
    };
    let genre = match event.metadata.get("summary") {
        Some(summary) => format!("fluxcd:{summary}"),
        None => "fluxcd".to_string(),
    };
    let name = commit_status_context(p, event);
    let description = describe_reason(&event.reason);
    let auth = basic_auth("", &p.token);
    let url = format!(
        "{host}/{org}/{project}/_apis/git/repositories/{repo}/commits/{sha}/statuses?api-version=6.0"
    );
    let list = Request::get(url.clone()).header("Authorization", auth.clone());
    let post = Request::json(
        url,
        &json!({"context": {"genre": genre, "name": name}, "description": description,
                "state": state}),
    )
    .header("Authorization", auth);
    Ok(Plan::CommitStatus {
        list,
        post,
        duplicate: Duplicate {
            items: "/value",
            single: false,
            missing_is_none: false,
            key: vec![("/context/name", name), ("/context/genre", genre)],
            same: vec![("/state", state.into()), ("/description", description)],
            first_decides: true,
        },
    })
}

/// GitHub's repository dispatch: the event JSON as `client_payload`, `Kind/name.namespace` as
/// `event_type`, so a workflow `on: repository_dispatch` can act on it.
pub(super) fn githubdispatch(p: &ProviderConfig, event: &Event) -> Result<Plan, PayloadError> {
    let (host, id) = parse_git_address(&p.address)?;
    let (owner, repo) = owner_repo(&id, &p.address, "GitHub repository")?;
    let api = if host == "https://github.com" {
        "https://api.github.com/".to_string()
    } else {
        format!("{host}/api/v3/")
    };
    let o = &event.involved_object;
    let body = json!({
        "event_type": format!("{}/{}.{}", o.kind, o.name, o.namespace),
        "client_payload": event,
    });
    Ok(Plan::Post(
        Request::json(format!("{api}repos/{owner}/{repo}/dispatches"), &body)
            .header("Authorization", format!("Bearer {}", token_of(p)))
            .header("Accept", "application/vnd.github.v3+json"),
    ))
}
