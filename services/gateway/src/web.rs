//! The web client, served at `/`: the files of `web/app/`, embedded in the binary at
//! compile time by `build.rs`. `/` and the invite links (`/join/{code}`) answer the page;
//! `/app/{path}` answers a file. Every answer carries `Cache-Control: no-cache` and an
//! ETag (a hash of the content), so a browser revalidates and gets `304 Not Modified`
//! until the binary changes. Anything else (`/api/…` included) stays the API's JSON 404.

use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use frontier_protocol::ErrorCode;

use crate::http::ApiError;

/// One embedded file.
pub struct Asset {
    /// Its path under `web/app/`, with `/`.
    pub path: &'static str,
    /// Its bytes.
    pub body: &'static [u8],
    /// Its `Content-Type`.
    pub content_type: &'static str,
    /// Its strong ETag, quoted.
    pub etag: &'static str,
}

include!(concat!(env!("OUT_DIR"), "/web_assets.rs"));

/// The file at `path`, if the client has one.
pub fn asset(path: &str) -> Option<&'static Asset> {
    ASSETS.iter().find(|a| a.path == path)
}

/// Answers `asset`, or `304` when the request's `If-None-Match` names its ETag.
fn respond(asset: &'static Asset, request: &HeaderMap) -> Response {
    let fresh = request
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(',')
                .any(|t| t.trim() == asset.etag || t.trim() == "*")
        });
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        (StatusCode::OK, asset.body).into_response()
    };
    let headers = response.headers_mut();
    if !fresh {
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(asset.content_type),
        );
    }
    headers.insert(header::ETAG, HeaderValue::from_static(asset.etag));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

fn missing() -> Response {
    ApiError::new(StatusCode::NOT_FOUND, ErrorCode::NotFound, "no such file").into_response()
}

/// `GET /` and `GET /join/{code}`: the client's page.
pub async fn page(request: HeaderMap) -> Response {
    match asset("index.html") {
        Some(a) => respond(a, &request),
        None => missing(),
    }
}

/// `GET /join/{code}`: the page, which joins the board named in its address.
pub async fn join_page(Path(_code): Path<String>, request: HeaderMap) -> Response {
    page(request).await
}

/// `GET /app/{*path}`: one file of the client.
pub async fn file(Path(path): Path<String>, request: HeaderMap) -> Response {
    match asset(&path) {
        Some(a) => respond(a, &request),
        None => missing(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_and_its_modules_are_embedded_with_their_types() {
        let page = asset("index.html").expect("index.html is embedded");
        assert_eq!(page.content_type, "text/html; charset=utf-8");
        let main = asset("js/main.js").expect("the main module is embedded");
        assert_eq!(main.content_type, "text/javascript; charset=utf-8");
        assert!(asset("../Cargo.toml").is_none());
        // Distinct contents, distinct ETags.
        assert_ne!(page.etag, main.etag);
    }
}
