//! The control routes a test drives the proxy with (`/__fault/…`, never forwarded):
//! `POST /__fault/rules {"rules": [...]}` replaces the rules, `DELETE /__fault/rules` drops
//! them, `GET /__fault/requests` lists the requests seen (`{"requests": [{method, path,
//! fault}]}`), `DELETE /__fault/requests` forgets them.

use axum::body::Body;
use http::{Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use serde::Deserialize;

use crate::rules::{Faults, Rule};

#[derive(Deserialize)]
struct SetRules {
    rules: Vec<Rule>,
}

pub async fn handle(faults: &Faults, request: Request<Incoming>) -> Response<Body> {
    let route = (request.method().clone(), request.uri().path().to_string());
    match (route.0, route.1.as_str()) {
        (Method::POST, "/__fault/rules") => {
            let Ok(bytes) = axum::body::to_bytes(Body::new(request.into_body()), 1024 * 1024).await else {
                return json(StatusCode::BAD_REQUEST, serde_json::json!({"error": "unreadable body"}));
            };
            match serde_json::from_slice::<SetRules>(&bytes) {
                Ok(set) => {
                    let n = set.rules.len();
                    faults.set(set.rules);
                    json(StatusCode::OK, serde_json::json!({"rules": n}))
                }
                Err(e) => json(StatusCode::BAD_REQUEST, serde_json::json!({"error": e.to_string()})),
            }
        }
        (Method::DELETE, "/__fault/rules") => {
            faults.set(Vec::new());
            json(StatusCode::OK, serde_json::json!({"rules": 0}))
        }
        (Method::GET, "/__fault/requests") => json(StatusCode::OK, serde_json::json!({"requests": faults.seen()})),
        (Method::DELETE, "/__fault/requests") => {
            faults.forget_seen();
            json(StatusCode::OK, serde_json::json!({}))
        }
        _ => json(StatusCode::NOT_FOUND, serde_json::json!({"error": "no such control route"})),
    }
}

fn json(status: StatusCode, value: serde_json::Value) -> Response<Body> {
    let mut response = Response::new(Body::from(value.to_string()));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(http::header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
    response
}
