//! Spans of the requests we send to Nextcloud: method, path template, status.
//!
//! The path of a Nextcloud URL names the user and their files (`/remote.php/dav/files/alice/
//! Salary review.docx`), so it is never exported as is: only the segments of Nextcloud's own
//! API (`remote.php`, `dav`, `calendars`, `boards`, …) are kept; the uid becomes `{user}`,
//! numbers `{id}`, anything else `{name}` (a run of them one `{path}`). Headers are never
//! recorded, so the caller's bearer cannot reach a span.

use reqwest::Response;
use url::Url;

use crate::error::Error;

/// Segments of Nextcloud's APIs that we call; they name endpoints, not user data.
const API_SEGMENTS: &[&str] = &[
    "remote.php",
    "dav",
    "files",
    "calendars",
    "addressbooks",
    "users",
    "principals",
    "ocs",
    "v1.php",
    "v2.php",
    "cloud",
    "user",
    "index.php",
    "apps",
    "deck",
    "api",
    "v1.0",
    "v1.1",
    "boards",
    "stacks",
    "cards",
    "labels",
    "assignUser",
    "unassignUser",
    "reorder",
    "archive",
    "unarchive",
];

/// `url`'s path below `base`, with everything that is not an API segment replaced.
pub fn path_template(base: &Url, url: &Url, uid: Option<&str>) -> String {
    let path = url.path();
    let below = path.strip_prefix(base.path().trim_end_matches('/')).unwrap_or(path);
    let mut out: Vec<&str> = Vec::new();
    for segment in below.split('/').skip(1) {
        let decoded = percent_encoding::percent_decode_str(segment).decode_utf8_lossy();
        let part = if segment.is_empty() {
            ""
        } else if API_SEGMENTS.contains(&segment) {
            segment
        } else if uid.is_some_and(|u| u == decoded) {
            "{user}"
        } else if segment.bytes().all(|b| b.is_ascii_digit()) {
            "{id}"
        } else {
            "{name}"
        };
        match (out.last_mut(), part) {
            (Some(last), "{name}") if *last == "{name}" || *last == "{path}" => *last = "{path}",
            _ => out.push(part),
        }
    }
    format!("/{}", out.join("/"))
}

/// The span of one request to Nextcloud (a no-op span when nothing is exported).
pub fn request_span(method: &http::Method, base: &Url, url: &Url, uid: Option<&str>) -> tracing::Span {
    if !telemetry_otlp::exporting() {
        return tracing::Span::none();
    }
    let template = path_template(base, url, uid);
    tracing::info_span!(
        "nextcloud.request",
        otel.name = %format!("{method} {template}"),
        otel.kind = "client",
        http.request.method = %method,
        url.template = %template,
        server.address = url.host_str().unwrap_or(""),
        http.response.status_code = tracing::field::Empty,
        error.type = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
    )
}

/// Records how the request ended on its span.
pub fn record_outcome(span: &tracing::Span, outcome: &Result<Response, reqwest::Error>) {
    if span.is_none() {
        return;
    }
    match outcome {
        Ok(response) => {
            let status = response.status().as_u16();
            span.record("http.response.status_code", i64::from(status));
            if status >= 400 {
                span.record("error.type", status.to_string());
            }
            if status >= 500 {
                span.record("otel.status_code", "ERROR");
            }
        }
        Err(e) => {
            span.record("error.type", if e.is_timeout() { "timeout" } else { "transport" });
            span.record("otel.status_code", "ERROR");
        }
    }
}

/// Sends a built request inside its span.
pub async fn send(client: &reqwest::Client, request: reqwest::Request, base: &Url, uid: Option<&str>) -> Result<Response, reqwest::Error> {
    let span = request_span(request.method(), base, request.url(), uid);
    let outcome = tracing::Instrument::instrument(client.execute(request), span.clone()).await;
    record_outcome(&span, &outcome);
    outcome
}

/// Builds `request` and sends it inside its span; a request that cannot be built is an error
/// like a transport failure.
pub async fn send_builder(request: reqwest::RequestBuilder, base: &Url, uid: Option<&str>, what: &str) -> Result<Response, Error> {
    let (client, request) = request.build_split();
    let request = request.map_err(|e| Error::from_transport(&e, what))?;
    send(&client, request, base, uid).await.map_err(|e| Error::from_transport(&e, what))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(base: &str, url: &str, uid: Option<&str>) -> String {
        path_template(&Url::parse(base).unwrap(), &Url::parse(url).unwrap(), uid)
    }

    #[test]
    fn user_data_never_reaches_the_template() {
        let b = "https://cloud.example.com/nextcloud";
        assert_eq!(
            template(
                b,
                "https://cloud.example.com/nextcloud/remote.php/dav/files/alice/Salary%20review/2026.docx",
                Some("alice")
            ),
            "/remote.php/dav/files/{user}/{path}"
        );
        assert_eq!(
            template(
                b,
                "https://cloud.example.com/nextcloud/remote.php/dav/calendars/alice/personal/",
                Some("alice")
            ),
            "/remote.php/dav/calendars/{user}/{name}/"
        );
        assert_eq!(
            template(
                b,
                "https://cloud.example.com/nextcloud/index.php/apps/deck/api/v1.0/boards/12/stacks/3/cards/99",
                Some("bob")
            ),
            "/index.php/apps/deck/api/v1.0/boards/{id}/stacks/{id}/cards/{id}"
        );
        assert_eq!(
            template("http://nc", "http://nc/ocs/v2.php/cloud/user", None),
            "/ocs/v2.php/cloud/user"
        );
        assert_eq!(
            template(
                "http://nc",
                "http://nc/remote.php/dav/addressbooks/users/al%20ice/contacts/x.vcf",
                Some("al ice")
            ),
            "/remote.php/dav/addressbooks/users/{user}/{path}"
        );
    }
}
