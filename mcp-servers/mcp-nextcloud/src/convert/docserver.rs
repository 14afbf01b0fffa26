//! The client of OnlyOffice Document Server's conversion API (ConvertService).
//!
//! One synchronous request per conversion: `POST <MCP_DOCSERVER_URL>/converter` with the JSON
//! parameters (`async: false`, `filetype`, `outputtype`, `key`, `title`, `url`), signed as the
//! server requires when JWT is on: an HS256 token over the same parameters, in the body's
//! `token` and in `Authorization: Bearer` (the inbox header of the server's default config).
//! The answer is `{fileUrl, fileType, percent, endConvert}` or `{error: -N}`; each documented
//! code becomes a clear tool error. The result is fetched from `fileUrl`, which must be on the
//! document server's own origin, and carries no credential either way.
//!
//! This module must never: send anything of the user's but the lent file's URL and its title,
//! or follow a result URL elsewhere.

use std::time::Duration;

use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use serde::Deserialize;
use serde_json::json;
use sha2::Sha256;
use url::Url;

use crate::error::Error;

/// How long one conversion may take, the document server's download of the loan included.
const CONVERT_TIMEOUT: Duration = Duration::from_secs(150);
/// The largest converted file fetched back.
pub const MAX_RESULT_BYTES: usize = 100 * 1024 * 1024;

/// The document server: where it is and its JWT secret.
pub struct DocServer {
    http: reqwest::Client,
    url: Url,
    secret: String,
}

/// One conversion request.
pub struct Request<'a> {
    /// The source's format (its extension, lowercase).
    pub filetype: &'a str,
    pub outputtype: &'a str,
    /// A key used once: the server caches results by key.
    pub key: &'a str,
    /// The source's file name (the server names the result after it).
    pub title: &'a str,
    /// The lent file's URL.
    pub url: &'a str,
}

/// The server's answer, either shape.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Answer {
    error: Option<i64>,
    end_convert: Option<bool>,
    file_url: Option<String>,
}

impl DocServer {
    pub fn new(url: Url, secret: String) -> Result<DocServer, Error> {
        let http = reqwest::Client::builder()
            .timeout(CONVERT_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| Error::Config(format!("cannot build the document server client: {e}")))?;
        Ok(DocServer { http, url, secret })
    }

    /// Asks for the conversion; returns where the result is.
    pub async fn convert(&self, req: &Request<'_>) -> Result<Url, Error> {
        let params = json!({
            "async": false,
            "filetype": req.filetype,
            "outputtype": req.outputtype,
            "key": req.key,
            "title": req.title,
            "url": req.url,
        });
        let token = sign(&params, &self.secret)?;
        let mut body = params;
        body["token"] = token.clone().into();
        let endpoint = self
            .url
            .join("converter")
            .map_err(|e| Error::Retryable(format!("document server URL: {e}")))?;
        let response = self
            .http
            .post(endpoint)
            .header(http::header::ACCEPT, "application/json")
            .bearer_auth(&token)
            .json(&body)
            .send()
            .await
            .map_err(|e| Error::Retryable(format!("the document server could not be reached ({})", short(&e))))?;
        if !response.status().is_success() {
            return Err(Error::Retryable(format!("the document server answered {}", response.status())));
        }
        let answer: Answer = response
            .json()
            .await
            .map_err(|_| Error::Retryable("the document server's answer was not the conversion API's JSON".into()))?;
        if let Some(code) = answer.error {
            return Err(error_of(code));
        }
        if answer.end_convert != Some(true) {
            return Err(Error::Retryable(
                "the document server did not finish the conversion in time; try again".into(),
            ));
        }
        let file_url = answer
            .file_url
            .ok_or_else(|| Error::Retryable("the document server finished without a result URL".into()))?;
        self.own_url(&file_url)
    }

    /// The result URL, refused unless it is on the document server's own origin.
    fn own_url(&self, raw: &str) -> Result<Url, Error> {
        let url = Url::parse(raw).map_err(|_| Error::Retryable("the document server's result URL is not a URL".into()))?;
        if url.origin() != self.url.origin() {
            return Err(Error::Retryable(
                "the document server named a result outside itself; it was not fetched".into(),
            ));
        }
        Ok(url)
    }

    /// Fetches the converted file (no credential: the URL is signed by the server).
    pub async fn fetch(&self, url: Url) -> Result<Vec<u8>, Error> {
        let mut response = self
            .http
            .get(url)
            .send()
            .await
            .map_err(|e| Error::Retryable(format!("the converted file could not be fetched ({})", short(&e))))?;
        if !response.status().is_success() {
            return Err(Error::Retryable(format!(
                "fetching the converted file answered {}",
                response.status()
            )));
        }
        if response.content_length().is_some_and(|n| n > MAX_RESULT_BYTES as u64) {
            return Err(Error::invalid(format!(
                "the converted file is larger than {} MB",
                MAX_RESULT_BYTES >> 20
            )));
        }
        let mut out = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| Error::Retryable(format!("the converted file could not be fetched ({})", short(&e))))?
        {
            if out.len() + chunk.len() > MAX_RESULT_BYTES {
                return Err(Error::invalid(format!(
                    "the converted file is larger than {} MB",
                    MAX_RESULT_BYTES >> 20
                )));
            }
            out.extend_from_slice(&chunk);
        }
        if out.is_empty() {
            return Err(Error::Retryable("the document server's result is empty".into()));
        }
        Ok(out)
    }
}

/// A compact HS256 JWT over `claims` (header `{"alg":"HS256","typ":"JWT"}`).
fn sign(claims: &serde_json::Value, secret: &str) -> Result<String, Error> {
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let header = b64.encode(br#"{"alg":"HS256","typ":"JWT"}"#);
    let payload = b64.encode(claims.to_string());
    let input = format!("{header}.{payload}");
    // HMAC takes keys of any length; the error cannot happen, but is not unwrapped.
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(secret.as_bytes())
        .map_err(|_| Error::Config("MCP_DOCSERVER_JWT_SECRET cannot key HMAC-SHA256".into()))?;
    mac.update(input.as_bytes());
    Ok(format!("{input}.{}", b64.encode(mac.finalize().into_bytes())))
}

/// The conversion API's error codes, as the person asking should read them.
fn error_of(code: i64) -> Error {
    match code {
        -2 => Error::Retryable("the document server timed out converting the file; try again, or a smaller file".into()),
        -3 => Error::invalid("the document server could not convert this file (it may be damaged or not what its name says)"),
        -4 => Error::Retryable("the document server could not download the file to convert; try again".into()),
        -5 => Error::invalid("the file is password-protected; it cannot be converted"),
        -6 => Error::Retryable("the document server's result store failed; try again".into()),
        -7 => Error::invalid("the document server refused the request as invalid input"),
        -8 => Error::Retryable(
            "the document server refused the request's signature: MCP_DOCSERVER_JWT_SECRET does not match its secret (an administrator must fix this)"
                .into(),
        ),
        -9 => Error::invalid("the document server could not tell which kind of document this is"),
        -10 => Error::invalid("the file is larger than the document server accepts"),
        n => Error::Retryable(format!("the document server failed (error {n})")),
    }
}

/// A reqwest error without its URL (which would carry the loan's token).
fn short(e: &reqwest::Error) -> &'static str {
    if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "connection failed"
    } else {
        "request failed"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_hs256_over_the_parameters() {
        let claims = json!({"key": "k", "url": "http://loan/x"});
        let token = sign(&claims, "secret").unwrap();
        let parts: Vec<&str> = token.split('.').collect();
        assert_eq!(parts.len(), 3);
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        assert_eq!(b64.decode(parts[0]).unwrap(), br#"{"alg":"HS256","typ":"JWT"}"#);
        let back: serde_json::Value = serde_json::from_slice(&b64.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(back, claims);
        // RFC 7515's HS256 over the same input with another key differs.
        assert_ne!(sign(&claims, "other").unwrap(), token);
    }

    #[test]
    fn every_documented_code_is_a_clear_error() {
        for code in -10..=-1 {
            let e = error_of(code);
            assert!(!e.to_string().is_empty());
        }
        assert!(error_of(-8).to_string().contains("MCP_DOCSERVER_JWT_SECRET"));
        assert!(matches!(error_of(-3), Error::InvalidArgument(_)));
    }

    #[test]
    fn results_only_from_the_server_itself() {
        let ds = DocServer::new(Url::parse("http://ds:8080/").unwrap(), "s".into()).unwrap();
        assert!(ds.own_url("http://ds:8080/cache/files/x/output.pdf?md5=1").is_ok());
        for bad in [
            "http://nextcloud/remote.php/dav/files/alice/x",
            "http://ds:8081/x",
            "https://ds:8080/x",
            "nope",
        ] {
            assert!(ds.own_url(bad).is_err(), "{bad}");
        }
    }
}
