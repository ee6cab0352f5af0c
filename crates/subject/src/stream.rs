//! `GET /stream?seconds=N&interval=M`: a response that streams. The headers go out at once, then
//! one byte (`.`) every `interval` seconds, and the body ends at `seconds`: so a client behind an
//! ingress learns whether a long response that keeps sending survives an idle timeout (an
//! interval under it) and whether one that goes quiet longer is cut (an interval over it).
//!
//! The request's `REQUEST_END` line is printed when the body ends rather than when the headers
//! go out: `dur_ms` is the whole stream, `detail` says how many bytes went out and whether the
//! stream was completed or cut (the client or a proxy went away first). `LOG_REQUESTS=errors`
//! prints the cut ones only.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{RawQuery, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use hyper::body::Frame;
use logline::line::SubjectEvent;
use tokio::time::{Instant, Sleep};

use crate::config::LogRequests;
use crate::http::{error_response, query_param};
use crate::state::AppState;

/// The path, which the request log middleware leaves to the body's own line.
pub const PATH: &str = "/stream";

/// `/stream`'s query, validated: the length and the interval between bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plan {
    pub seconds: Duration,
    pub interval: Duration,
}

/// A `/stream` query the endpoint refuses; the message of the 400.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PlanError {
    #[error("query parameter {0} is required, e.g. ?seconds=300&interval=60")]
    Missing(&'static str),
    #[error("seconds must be a number between 0 and {max} (MAX_REQUEST_SECONDS), got {raw:?}")]
    Seconds { raw: String, max: f64 },
    #[error(
        "interval must be a number above 0 and at most {max} (MAX_REQUEST_SECONDS), got {raw:?}"
    )]
    Interval { raw: String, max: f64 },
}

impl Plan {
    /// Parses `seconds` (`0..=max`) and `interval` (`(0, max]`, seconds, fractions allowed).
    pub fn parse(query: Option<&str>, max: f64) -> Result<Plan, PlanError> {
        let num = |key: &'static str| -> Result<(String, Option<f64>), PlanError> {
            let raw = query_param(query, key).ok_or(PlanError::Missing(key))?;
            let v = raw
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && (0.0..=max).contains(v));
            Ok((raw, v))
        };
        let seconds = match num("seconds")? {
            (_, Some(v)) => micros(v),
            (raw, None) => return Err(PlanError::Seconds { raw, max }),
        };
        let interval = match num("interval")? {
            (_, Some(v)) if micros(v) > Duration::ZERO => micros(v),
            (raw, _) => return Err(PlanError::Interval { raw, max }),
        };
        Ok(Plan { seconds, interval })
    }

    /// How many bytes the stream sends: one per whole interval within `seconds`.
    pub fn bytes(&self) -> u64 {
        let interval = self.interval.as_micros().max(1);
        u64::try_from(self.seconds.as_micros() / interval).unwrap_or(u64::MAX)
    }

    /// When byte `k` (from 1) is due, from the start.
    fn due(&self, k: u64) -> Duration {
        let us = self.interval.as_micros().saturating_mul(u128::from(k));
        Duration::from_micros(u64::try_from(us).unwrap_or(u64::MAX))
    }
}

/// Seconds as whole microseconds (so 0.3 s holds three 0.1 s intervals exactly).
fn micros(secs: f64) -> Duration {
    Duration::from_micros((secs * 1e6).round() as u64)
}

/// `GET /stream?seconds=N&interval=M`.
pub async fn stream(State(state): State<AppState>, RawQuery(q): RawQuery) -> Response {
    let plan = match Plan::parse(q.as_deref(), state.cfg().max_request_seconds) {
        Ok(p) => p,
        Err(e) => return error_response(StatusCode::BAD_REQUEST, &e.to_string()),
    };
    let start = Instant::now();
    let body = Trickle {
        state,
        plan,
        start,
        total: plan.bytes(),
        sent: 0,
        done: false,
        sleep: Box::pin(tokio::time::sleep_until(
            start + plan.interval.min(plan.seconds),
        )),
    };
    let mut resp = Body::new(body).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}

/// The streaming body: a byte at each `start + k·interval` (k = 1..=total), the end at
/// `start + seconds`; its drop prints the request's `REQUEST_END`.
struct Trickle {
    state: AppState,
    plan: Plan,
    start: Instant,
    total: u64,
    sent: u64,
    done: bool,
    sleep: Pin<Box<Sleep>>,
}

impl Trickle {
    /// When the next byte (or the end) is due.
    fn next_due(&self) -> Instant {
        if self.sent < self.total {
            self.start + self.plan.due(self.sent + 1)
        } else {
            self.start + self.plan.seconds
        }
    }
}

impl hyper::body::Body for Trickle {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        if this.sleep.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        if this.sent < this.total {
            this.sent += 1;
            let due = this.next_due();
            this.sleep.as_mut().reset(due);
            return Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b".")))));
        }
        this.done = true;
        Poll::Ready(None)
    }

    fn is_end_stream(&self) -> bool {
        self.done
    }
}

impl Drop for Trickle {
    fn drop(&mut self) {
        let mode = self.state.cfg().log_requests;
        if mode == LogRequests::None || (mode == LogRequests::Errors && self.done) {
            return;
        }
        let dur_ms = (self.start.elapsed().as_secs_f64() * 1e6).round() / 1000.0;
        let detail = if self.done {
            format!("stream completed: {} of {} bytes", self.sent, self.total)
        } else {
            format!("stream cut: {} of {} bytes sent", self.sent, self.total)
        };
        logline::log::emit(logline::line::SubjectLine {
            method: Some("GET".into()),
            path: Some(PATH.into()),
            status: Some(200),
            dur_ms: Some(dur_ms),
            inflight: Some(self.state.inflight()),
            detail: Some(detail),
            ..self.state.line(SubjectEvent::RequestEnd)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_query_is_checked() {
        let p = Plan::parse(Some("seconds=300&interval=60"), 3600.0).unwrap();
        assert_eq!(p.seconds, Duration::from_secs(300));
        assert_eq!(p.bytes(), 5);
        assert_eq!(
            Plan::parse(Some("seconds=300&interval=241"), 3600.0)
                .unwrap()
                .bytes(),
            1
        );
        assert_eq!(
            Plan::parse(Some("seconds=0&interval=1"), 3600.0)
                .unwrap()
                .bytes(),
            0
        );
        for bad in [
            None,
            Some("seconds=300"),
            Some("interval=60"),
            Some("seconds=300&interval=0"),
            Some("seconds=300&interval=0.0000001"),
            Some("seconds=-1&interval=1"),
            Some("seconds=4000&interval=1"),
            Some("seconds=10&interval=nan"),
        ] {
            assert!(Plan::parse(bad, 3600.0).is_err(), "{bad:?}");
        }
    }
}
