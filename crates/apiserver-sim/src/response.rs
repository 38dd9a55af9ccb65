//! HTTP responses as the simulator sends them: a whole JSON body, a failure `Status` body, or a
//! stream of watch lines fed from a channel.
//!
//! Layer: wire encoding for the shell. It builds `http::Response`s from values it is given; it
//! must not decide which answer a request gets, and performs no I/O itself.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Frame};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::status::ApiError;

/// The response body type: a whole body or a stream of watch lines.
pub(crate) type SimBody = BoxBody<Bytes, StreamBroken>;

/// The error a watch body yields to make hyper abort the connection mid-stream.
#[derive(Debug)]
pub(crate) struct StreamBroken;

impl std::fmt::Display for StreamBroken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("watch stream broken by the simulator")
    }
}

impl std::error::Error for StreamBroken {}

/// A JSON response with `Content-Type: application/json`.
pub(crate) fn json_response(status: StatusCode, body: &Value) -> Response<SimBody> {
    let bytes = Bytes::from(body.to_string());
    let mut r = Response::new(
        Full::new(bytes)
            .map_err(|never: Infallible| match never {})
            .boxed(),
    );
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// A failure `Status` response.
pub(crate) fn error_response(e: &ApiError) -> Response<SimBody> {
    json_response(
        StatusCode::from_u16(e.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        &e.body,
    )
}

/// A streaming body fed line by line from a channel; it ends when the sender is dropped.
/// A chunk that fails makes hyper abort the connection.
pub(crate) struct ChannelBody {
    rx: mpsc::Receiver<Result<Bytes, StreamBroken>>,
}

impl ChannelBody {
    pub(crate) fn new(rx: mpsc::Receiver<Result<Bytes, StreamBroken>>) -> ChannelBody {
        ChannelBody { rx }
    }
}

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = StreamBroken;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, StreamBroken>>> {
        self.rx
            .poll_recv(cx)
            .map(|o| o.map(|chunk| chunk.map(Frame::data)))
    }
}
