//! The bodies of a proxied request: the response body that keeps its request counted in
//! flight ([`Counted`]), the request's stream timer ([`Activity`]), the request body that can be
//! sent again after a refused connect ([`Replayable`]) and the response body under the stream
//! idle timer ([`IdleBody`]).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Response, StatusCode};
use hyper::body::Incoming;

use super::table::InFlight;
use super::{Body, BoxError, Policy, STREAM_TIMEOUT, TimeoutKind, UPSTREAM_TIMEOUT, text};

/// A response body that keeps its request counted in flight until the body is done.
pub(super) struct Counted {
    pub(super) inner: Body,
    pub(super) _in_flight: InFlight,
}

impl hyper::body::Body for Counted {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, BoxError>>> {
        Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

/// One request's stream timer: when it runs out ([`Activity::deadline`]) and whether the
/// request has been received whole (Envoy's `remoteDecodeComplete`: 504, else 408).
#[derive(Debug)]
pub(super) struct Activity {
    pub(super) kind: TimeoutKind,
    timeout: Duration,
    /// The arrival ([`TimeoutKind::Request`]) or the last byte either way ([`TimeoutKind::Idle`]).
    last: Mutex<tokio::time::Instant>,
    request_done: AtomicBool,
}

impl Activity {
    pub(super) fn new(policy: &Policy, request_done: bool) -> Arc<Activity> {
        Arc::new(Activity {
            kind: policy.timeout_kind,
            timeout: policy.timeout,
            last: Mutex::new(tokio::time::Instant::now()),
            request_done: AtomicBool::new(request_done),
        })
    }

    /// A byte moved: an idle timer starts again (a request timer does not).
    pub(super) fn touch(&self) {
        if self.kind == TimeoutKind::Idle
            && let Ok(mut l) = self.last.lock()
        {
            *l = tokio::time::Instant::now();
        }
    }

    fn deadline(&self) -> tokio::time::Instant {
        let last = self
            .last
            .lock()
            .map(|l| *l)
            .unwrap_or_else(|_| tokio::time::Instant::now());
        last + self.timeout
    }

    fn expired(&self) -> bool {
        tokio::time::Instant::now() >= self.deadline()
    }

    /// Resolves when the timer runs out (an idle timer touched meanwhile waits again).
    pub(super) async fn run_out(&self) {
        loop {
            tokio::time::sleep_until(self.deadline()).await;
            if self.expired() {
                return;
            }
        }
    }

    /// Envoy's local reply when the timer runs out before the response started.
    pub(super) fn reply(&self) -> Response<Body> {
        match self.kind {
            TimeoutKind::Request => text(StatusCode::GATEWAY_TIMEOUT, UPSTREAM_TIMEOUT),
            // `maybeRequestTimeoutCode`: 504 once the request was received whole, else 408.
            TimeoutKind::Idle if self.request_done.load(Ordering::SeqCst) => {
                text(StatusCode::GATEWAY_TIMEOUT, STREAM_TIMEOUT)
            }
            TimeoutKind::Idle => text(StatusCode::REQUEST_TIMEOUT, STREAM_TIMEOUT),
        }
    }
}

/// The request body as sent upstream: taken from a shared slot at its first poll, so a request
/// whose connect failed (its body never polled) can be sent again; every frame restarts an
/// idle timer, and its end marks the request received whole.
pub(super) struct Replayable {
    slot: Arc<Mutex<Option<Incoming>>>,
    taken: Option<Incoming>,
    activity: Arc<Activity>,
}

impl Replayable {
    pub(super) fn new(slot: &Arc<Mutex<Option<Incoming>>>, activity: &Arc<Activity>) -> Replayable {
        Replayable {
            slot: slot.clone(),
            taken: None,
            activity: activity.clone(),
        }
    }

    fn with<T>(&self, f: impl FnOnce(&Incoming) -> T, none: T) -> T {
        match &self.taken {
            Some(b) => f(b),
            None => match self.slot.lock() {
                Ok(s) => s.as_ref().map_or(none, f),
                Err(_) => none,
            },
        }
    }
}

impl hyper::body::Body for Replayable {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, hyper::Error>>> {
        let this = self.get_mut();
        if this.taken.is_none() {
            this.taken = this.slot.lock().ok().and_then(|mut s| s.take());
        }
        let Some(body) = this.taken.as_mut() else {
            return Poll::Ready(None);
        };
        let r = Pin::new(&mut *body).poll_frame(cx);
        match &r {
            Poll::Ready(Some(Ok(_))) => {
                this.activity.touch();
                if body.is_end_stream() {
                    this.activity.request_done.store(true, Ordering::SeqCst);
                }
            }
            Poll::Ready(None) => this.activity.request_done.store(true, Ordering::SeqCst),
            _ => {}
        }
        r
    }

    fn is_end_stream(&self) -> bool {
        self.with(|b| b.is_end_stream(), true)
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.with(|b| b.size_hint(), hyper::body::SizeHint::with_exact(0))
    }
}

/// Why a response was cut: its stream went quiet for the idle timeout (Envoy resets it).
#[derive(Debug, thiserror::Error)]
#[error("stream idle timeout: the response sent nothing for {0:?}")]
struct IdleReset(Duration);

/// An upstream response body under the stream idle timer: every frame restarts it, and a
/// stream quiet until it runs out ends in an error, which resets the client's stream (HTTP/1:
/// the connection is closed mid-body), as Envoy's stream reset does.
pub(super) struct IdleBody {
    inner: Incoming,
    activity: Arc<Activity>,
    sleep: Pin<Box<tokio::time::Sleep>>,
}

impl IdleBody {
    pub(super) fn new(inner: Incoming, activity: Arc<Activity>) -> IdleBody {
        let sleep = Box::pin(tokio::time::sleep_until(activity.deadline()));
        IdleBody {
            inner,
            activity,
            sleep,
        }
    }
}

impl hyper::body::Body for IdleBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(f))) => {
                this.activity.touch();
                return Poll::Ready(Some(Ok(f)));
            }
            Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e.into()))),
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Pending => {}
        }
        loop {
            let d = this.activity.deadline();
            if this.sleep.deadline() != d {
                this.sleep.as_mut().reset(d);
            }
            if this.sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            if this.activity.expired() {
                return Poll::Ready(Some(Err(IdleReset(this.activity.timeout).into())));
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}
