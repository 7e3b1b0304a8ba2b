//! The storage file server: plain HTTP GET of the files under the storage root, the way
//! source-controller serves artifacts to the other controllers.

use std::path::{Component, Path, PathBuf};

use axum::body::Body;
use axum::extract::{Path as UrlPath, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

/// A router answering `GET /<relative path>` from `root`.
pub fn router(root: PathBuf) -> axum::Router {
    axum::Router::new()
        .route("/{*path}", axum::routing::get(get_file))
        .with_state(root)
}

/// Serves `root` on `listener` until the task is dropped or the listener fails.
pub async fn serve(root: PathBuf, listener: tokio::net::TcpListener) -> std::io::Result<()> {
    axum::serve(listener, router(root)).await
}

fn safe_join(root: &Path, rel: &str) -> Option<PathBuf> {
    let rel = Path::new(rel);
    if rel.components().any(|c| !matches!(c, Component::Normal(_))) {
        return None;
    }
    // Temporary files of in-progress writes are not artifacts.
    if rel
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with('.'))
    {
        return None;
    }
    Some(root.join(rel))
}

async fn get_file(State(root): State<PathBuf>, UrlPath(rel): UrlPath<String>) -> Response {
    let Some(path) = safe_join(&root, &rel) else {
        return (StatusCode::NOT_FOUND, "not found\n").into_response();
    };
    let file = match tokio::fs::File::open(&path).await {
        Ok(f) => f,
        Err(_) => return (StatusCode::NOT_FOUND, "not found\n").into_response(),
    };
    let len = match file.metadata().await {
        Ok(m) if m.is_file() => m.len(),
        _ => return (StatusCode::NOT_FOUND, "not found\n").into_response(),
    };
    let content_type = if rel.ends_with(".tar.gz") {
        "application/gzip"
    } else {
        "application/octet-stream"
    };
    (
        [
            (header::CONTENT_TYPE, content_type.to_string()),
            (header::CONTENT_LENGTH, len.to_string()),
        ],
        Body::from_stream(tokio_util::io::ReaderStream::new(file)),
    )
        .into_response()
}
