//! The load benchmark's client: RunFunction over one HTTP/2 connection
//! with `h2` alone, the request framed once and sent as it is, the answer
//! kept as bytes.
//!
//! The client shares the machine's two cores with the server it loads, so
//! every microsecond it spends is one the server cannot use. tonic's client
//! (a tower buffer, a codec that copies the message into a frame, a body
//! stream per call) cost about as much per call as the no-op server it
//! called, 19-23 µs at 16 calls at once.

use bytes::{BufMut, Bytes, BytesMut};
use h2::client::SendRequest;
use tokio::net::TcpStream;
use tonic::codegen::http;

use super::METHOD;

/// One connection; clones share it, as the calls of a gRPC channel do.
#[derive(Clone)]
pub struct Client {
    send: SendRequest<Bytes>,
    uri: http::Uri,
}

/// A request ready to send: the message behind gRPC's 5-byte prefix.
#[derive(Clone)]
pub struct Framed(Bytes);

impl Framed {
    /// `message` (an encoded RunFunctionRequest), uncompressed.
    pub fn new(message: &[u8]) -> Self {
        let mut frame = BytesMut::with_capacity(5 + message.len());
        frame.put_u8(0);
        frame.put_u32(u32::try_from(message.len()).expect("a request under 4 GiB"));
        frame.put_slice(message);
        Framed(frame.freeze())
    }
}

/// Connects to `address` (`host:port`), with windows large enough that a
/// 1 MB request or answer is not held back by flow control.
pub async fn connect(address: &str) -> Result<Client, String> {
    let tcp = TcpStream::connect(address)
        .await
        .map_err(|e| e.to_string())?;
    tcp.set_nodelay(true).map_err(|e| e.to_string())?;
    let (send, connection) = h2::client::Builder::new()
        .initial_window_size(8 << 20)
        .initial_connection_window_size(16 << 20)
        .handshake(tcp)
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let uri = format!("http://{address}{METHOD}")
        .parse()
        .map_err(|e: http::uri::InvalidUri| e.to_string())?;
    Ok(Client { send, uri })
}

impl Client {
    /// Calls RunFunction with `request`; the answer's message (without its
    /// prefix), or what went wrong, the gRPC status included.
    pub async fn call(&self, request: &Framed) -> Result<Bytes, String> {
        let mut send = self.send.clone().ready().await.map_err(|e| e.to_string())?;
        let head = http::Request::post(self.uri.clone())
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(())
            .map_err(|e| e.to_string())?;
        let (answer, mut stream) = send.send_request(head, false).map_err(|e| e.to_string())?;
        stream
            .send_data(request.0.clone(), true)
            .map_err(|e| e.to_string())?;
        let answer = answer.await.map_err(|e| e.to_string())?;
        // A trailers-only answer (an error) has its status in the headers.
        if let Some(status) = answer.headers().get("grpc-status") {
            return Err(format!("grpc-status {status:?}"));
        }
        let mut body = answer.into_body();
        let mut first: Option<Bytes> = None;
        let mut rest = BytesMut::new();
        while let Some(chunk) = body.data().await {
            let chunk = chunk.map_err(|e| e.to_string())?;
            let _ = body.flow_control().release_capacity(chunk.len());
            match &first {
                None => first = Some(chunk),
                Some(f) => {
                    if rest.is_empty() {
                        rest.extend_from_slice(f);
                    }
                    rest.extend_from_slice(&chunk);
                }
            }
        }
        let trailers = body.trailers().await.map_err(|e| e.to_string())?;
        match trailers.as_ref().and_then(|t| t.get("grpc-status")) {
            Some(status) if status == "0" => {}
            status => return Err(format!("grpc-status {status:?}")),
        }
        let message = if rest.is_empty() {
            first.unwrap_or_default()
        } else {
            rest.freeze()
        };
        if message.len() < 5 {
            return Err(format!("an answer of {} bytes", message.len()));
        }
        Ok(message.slice(5..))
    }
}
