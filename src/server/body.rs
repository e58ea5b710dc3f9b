//! The body of every answer: ready chunks with a known length (sent with a
//! Content-Length), holding what the answer keeps busy until it is sent in
//! full or dropped: its bytes in the endpoint's budget and its place among
//! the connection's answers being sent.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper::body::{Bytes, Frame, SizeHint};

use super::activity::Sending;
use super::limits::Held;

/// An answer's body.
#[derive(Debug, Default)]
pub struct Body {
    chunks: VecDeque<Bytes>,
    size: u64,
    held: Option<Held>,
    sending: Option<Sending>,
}

impl Body {
    /// A body of one buffer.
    pub fn full(bytes: impl Into<Bytes>) -> Self {
        Self::chunks(vec![bytes.into()])
    }

    /// A body of chunks, sent in order.
    pub fn chunks(chunks: Vec<Bytes>) -> Self {
        let size = chunks.iter().map(|c| c.len() as u64).sum();
        Self {
            chunks: chunks.into_iter().filter(|c| !c.is_empty()).collect(),
            size,
            held: None,
            sending: None,
        }
    }

    /// Keeps `held` (the answer's bytes in the budget) until the body is
    /// sent or dropped.
    pub fn holding(mut self, held: Held) -> Self {
        self.held = Some(held);
        self
    }

    /// Counts the body as being sent on its connection until it is done.
    pub fn sent_as(mut self, sending: Sending) -> Self {
        self.sending = Some(sending);
        self
    }

    fn finish(&mut self) {
        self.held = None;
        self.sending = None;
    }
}

impl hyper::body::Body for Body {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let this = self.get_mut();
        match this.chunks.pop_front() {
            Some(chunk) => Poll::Ready(Some(Ok(Frame::data(chunk)))),
            None => {
                this.finish();
                Poll::Ready(None)
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.chunks.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.size)
    }
}
