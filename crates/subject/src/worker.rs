//! Queue-worker mode (`APP_MODE=queue-worker`): the process is one event-driven job replica. It
//! takes one item from the queue at `QUEUE_URL` (`POST {QUEUE_URL}/queue/take`, see
//! [`crate::queue`]), prints `QUEUE_ITEM_TAKEN` with the item's id, works `WORK_MS` (a sleep),
//! prints `QUEUE_ITEM_DONE` and exits 0. An empty queue: `QUEUE_EMPTY`, exit 0. A queue that
//! cannot be reached after a few tries, or SIGTERM during the work: exit 1 (the item taken is
//! lost, as the queue never hands an item out twice). No port is bound.

use std::future::Future;
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use logline::line::SubjectEvent;
use tokio::time::Instant;

use crate::Exit;
use crate::dependency_client::error_chain;
use crate::state::AppState;

/// Tries of `POST /queue/take` before the worker gives up (one every [`RETRY_DELAY`]).
pub const TAKE_ATTEMPTS: u32 = 5;
pub const RETRY_DELAY: Duration = Duration::from_millis(300);
/// One take's timeout.
pub const TAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// Why one `POST /queue/take` gave no answer the worker can use.
#[derive(Debug, thiserror::Error)]
pub enum TakeError {
    #[error("bad request")]
    Request(#[source] axum::http::Error),
    #[error("the queue did not answer")]
    Send(#[source] hyper_util::client::legacy::Error),
    #[error("the answer's body broke off")]
    Body(#[source] hyper::Error),
    #[error("timeout after {} ms", TAKE_TIMEOUT.as_millis())]
    Timeout,
    #[error("status {0}")]
    Status(u16),
    #[error("the answer is not JSON")]
    NotJson(#[source] serde_json::Error),
    #[error("no id in {0}")]
    NoId(String),
}

/// What one `POST /queue/take` gave.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Take {
    Item(String),
    Empty,
}

/// Runs the worker: take, work, exit.
pub async fn run(
    state: &AppState,
    term: impl Future<Output = &'static str> + Send + 'static,
) -> Exit {
    let base = state.cfg().queue_url().unwrap_or_default();
    let url = format!("{}/queue/take", base.trim_end_matches('/'));
    let item = match take_with_retries(&url).await {
        Ok(Take::Item(id)) => id,
        Ok(Take::Empty) => {
            logline::log::emit(logline::line::SubjectLine {
                target: Some(url),
                ..state.line(SubjectEvent::QueueEmpty)
            });
            return Exit { code: 0 };
        }
        Err(e) => {
            let chain = error_chain(&e);
            tracing::error!(target_url = %url, attempts = TAKE_ATTEMPTS, error = %chain, "cannot take an item");
            return Exit { code: 1 };
        }
    };
    logline::log::emit(logline::line::SubjectLine {
        item: Some(item.clone()),
        target: Some(url),
        ..state.line(SubjectEvent::QueueItemTaken)
    });
    let start = Instant::now();
    let work = Duration::from_millis(state.cfg().work_ms);
    tokio::select! {
        () = tokio::time::sleep(work) => {}
        signal = term => {
            logline::log::emit(logline::line::SubjectLine {
                item: Some(item),
                detail: Some(format!("{signal} during the work: the item is lost")),
                ..state.line(SubjectEvent::SigtermReceived)
            });
            return Exit { code: 1 };
        }
    }
    logline::log::emit(logline::line::SubjectLine {
        item: Some(item),
        dur_ms: Some((start.elapsed().as_secs_f64() * 1e6).round() / 1000.0),
        ..state.line(SubjectEvent::QueueItemDone)
    });
    Exit { code: 0 }
}

/// Up to [`TAKE_ATTEMPTS`] takes; the last error when none answered.
async fn take_with_retries(url: &str) -> Result<Take, TakeError> {
    let client: Client<_, Empty<Bytes>> =
        Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let mut attempt = 1;
    loop {
        let e = match tokio::time::timeout(TAKE_TIMEOUT, take(&client, url)).await {
            Ok(Ok(t)) => return Ok(t),
            Ok(Err(e)) => e,
            Err(_) => TakeError::Timeout,
        };
        if attempt >= TAKE_ATTEMPTS {
            return Err(e);
        }
        attempt += 1;
        tokio::time::sleep(RETRY_DELAY).await;
    }
}

async fn take(
    client: &Client<hyper_util::client::legacy::connect::HttpConnector, Empty<Bytes>>,
    url: &str,
) -> Result<Take, TakeError> {
    let req = Request::builder()
        .method(Method::POST)
        .uri(url)
        .body(Empty::<Bytes>::new())
        .map_err(TakeError::Request)?;
    let resp = client.request(req).await.map_err(TakeError::Send)?;
    let status = resp.status();
    let body = resp
        .into_body()
        .collect()
        .await
        .map_err(TakeError::Body)?
        .to_bytes();
    match status {
        StatusCode::NO_CONTENT => Ok(Take::Empty),
        StatusCode::OK => {
            let v: serde_json::Value = serde_json::from_slice(&body).map_err(TakeError::NotJson)?;
            v.get("id")
                .and_then(serde_json::Value::as_str)
                .map(|id| Take::Item(id.to_owned()))
                .ok_or_else(|| TakeError::NoId(v.to_string()))
        }
        other => Err(TakeError::Status(other.as_u16())),
    }
}
