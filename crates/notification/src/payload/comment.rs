//! The change request comment types: GitHub pull request, GitLab merge request and Gitea pull
//! request comments. The request is the event's `change_request` metadata (its number); the
//! comment is Flux's markdown status post behind a hidden marker naming the provider and the
//! object, so each object keeps one comment per provider, edited as its status changes.

use super::commit::{owner_repo, parse_git_address, token_of};
use super::{Comment, PayloadError, Plan, ProviderConfig, Request, escape, markdown_post};
use crate::event::Event;
use serde_json::json;

/// The change request number of the event.
fn request_number(event: &Event) -> Result<u64, PayloadError> {
    let value = event
        .metadata
        .get("change_request")
        .ok_or_else(|| PayloadError::Missing("missing \"change_request\" metadata key".into()))?;
    value.parse().map_err(|_| {
        PayloadError::Missing(format!(
            "invalid \"change_request\" metadata value {value:?}: not a number"
        ))
    })
}

/// `<!-- <prefix>:<provider uid>/<kind>/<namespace>/<name> -->`.
fn marker(prefix: &str, p: &ProviderConfig, event: &Event) -> String {
    let o = &event.involved_object;
    format!(
        "<!-- {prefix}:{}/{}/{}/{} -->",
        p.uid, o.kind, o.namespace, o.name
    )
}

fn with_method(mut r: Request, method: &'static str) -> Request {
    r.method = method;
    r
}

pub(super) fn github(p: &ProviderConfig, event: &Event) -> Result<Plan, PayloadError> {
    let number = request_number(event)?;
    let (host, id) = parse_git_address(&p.address)?;
    let (owner, repo) = owner_repo(&id, &p.address, "GitHub repository")?;
    let api = if host == "https://github.com" {
        "https://api.github.com/".to_string()
    } else {
        format!("{host}/api/v3/")
    };
    let marker = marker("flux-pr-comment-key", p, event);
    let body = json!({"body": format!("{marker}\n\n{}", markdown_post(event))});
    let auth = |r: Request| {
        r.header("Authorization", format!("Bearer {}", token_of(p)))
            .header("Accept", "application/vnd.github.v3+json")
    };
    let issues = format!("{api}repos/{owner}/{repo}/issues");
    Ok(Plan::Comment(Box::new(Comment {
        user: auth(Request::get(format!("{api}user"))),
        login: "/login",
        list: auth(Request::get(format!(
            "{issues}/{number}/comments?sort=created&direction=asc&per_page=100"
        ))),
        author: "/user/login",
        marker,
        create: auth(Request::json(format!("{issues}/{number}/comments"), &body)),
        edit: auth(with_method(
            Request::json(format!("{issues}/comments/"), &body),
            "PATCH",
        )),
    })))
}

pub(super) fn gitlab(p: &ProviderConfig, event: &Event) -> Result<Plan, PayloadError> {
    let number = request_number(event)?;
    let (host, id) = parse_git_address(&p.address)?;
    let project = escape(&id, "").replace('.', "%2E");
    let marker = marker("flux-mr-comment-key", p, event);
    let body = json!({"body": format!("{marker}\n\n{}", markdown_post(event))});
    let auth = |r: Request| r.header("PRIVATE-TOKEN", token_of(p));
    let notes = format!("{host}/api/v4/projects/{project}/merge_requests/{number}/notes");
    Ok(Plan::Comment(Box::new(Comment {
        user: auth(Request::get(format!("{host}/api/v4/user"))),
        login: "/username",
        list: auth(Request::get(format!(
            "{notes}?order_by=created_at&sort=asc&per_page=100"
        ))),
        author: "/author/username",
        marker,
        create: auth(Request::json(notes.clone(), &body)),
        edit: auth(with_method(
            Request::json(format!("{notes}/"), &body),
            "PUT",
        )),
    })))
}

pub(super) fn gitea(p: &ProviderConfig, event: &Event) -> Result<Plan, PayloadError> {
    let number = request_number(event)?;
    let (host, id) = parse_git_address(&p.address)?;
    let (owner, repo) = owner_repo(&id, &p.address, "Gitea repository")?;
    let marker = marker("flux-pr-comment-key", p, event);
    let body = json!({"body": format!("{marker}\n\n{}", markdown_post(event))});
    let auth = |r: Request| r.header("Authorization", format!("token {}", token_of(p)));
    let issues = format!("{host}/api/v1/repos/{owner}/{repo}/issues");
    Ok(Plan::Comment(Box::new(Comment {
        user: auth(Request::get(format!("{host}/api/v1/user"))),
        login: "/login",
        list: auth(Request::get(format!(
            "{issues}/{number}/comments?page=1&limit=100"
        ))),
        author: "/user/login",
        marker,
        create: auth(Request::json(format!("{issues}/{number}/comments"), &body)),
        edit: auth(with_method(
            Request::json(format!("{issues}/comments/"), &body),
            "PATCH",
        )),
    })))
}
