//! The connections of the status server: HTTP/1.1 through hyper, optionally over TLS.
//!
//! Every accepted connection gets a task of its own; none is refused for the number of others.
//! A client that does not complete its TLS handshake or its request head within
//! [`HEADER_TIMEOUT`] (also the idle time allowed between two requests of a kept-alive
//! connection) is dropped, so idle and half-sent connections cost a task each for a few seconds
//! and never delay `/health`. Request heads are bounded ([`MAX_HEAD_BYTES`], [`MAX_HEADERS`]:
//! hyper answers 431 past them, 400 to a malformed head); a request with a body is answered 413
//! and the connection closed, except a `POST` on a write route of
//! [`super::write_api`], whose body (JSON, at most [`MAX_BODY_BYTES`]) is read once its token
//! was accepted. Routing is [`Server::route`]'s and [`Server::write`]'s.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::Shutdown;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CACHE_CONTROL, CONNECTION, CONTENT_LENGTH, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use super::http::{Request, Response, Server};
use super::write_api::{is_write_path, MAX_BODY_BYTES};

/// Time allowed for the TLS handshake, for the request head, and between two requests on a
/// kept-alive connection; a client slower than this is dropped.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest request head (request line and headers) accepted.
pub const MAX_HEAD_BYTES: usize = 16 * 1024;
/// Largest number of request headers accepted.
pub const MAX_HEADERS: usize = 64;
/// Longest life of a connection: then it is closed after the answer in progress (bounds a
/// client that keeps a connection busy or does not take its answer).
pub const MAX_CONNECTION_AGE: Duration = Duration::from_secs(60);
/// Time a connection closing (shutdown or age) gets to finish its answer.
pub const CLOSE_GRACE: Duration = Duration::from_secs(5);

impl Server {
    /// Accepts connections on `listener` (through TLS with `tls`) and samples the flows'
    /// series every few seconds, until `shutdown` turns true.
    pub async fn run(
        self: Arc<Self>,
        listener: TcpListener,
        tls: Option<TlsAcceptor>,
        shutdown: impl Into<Shutdown>,
    ) {
        let shutdown: Shutdown = shutdown.into();
        // The charts' samples are taken by a task of their own: a busy server never delays them.
        let sampler = {
            let me = self.clone();
            let shutdown = shutdown.clone();
            tokio::spawn(async move { me.sample(shutdown).await })
        };
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let (stream, peer) = match accepted {
                        Ok(a) => a,
                        Err(e) => {
                            tracing::warn!("status server: accept failed: {e}");
                            tokio::time::sleep(Duration::from_millis(100)).await;
                            continue;
                        }
                    };
                    let _ = stream.set_nodelay(true);
                    let me = self.clone();
                    let tls = tls.clone();
                    let shutdown = shutdown.clone();
                    tokio::spawn(async move {
                        tracing::trace!(%peer, "status server: connection");
                        let Some(tls) = tls else {
                            return me.connection_from(stream, Some(peer), shutdown).await;
                        };
                        match tokio::time::timeout(HEADER_TIMEOUT, tls.accept(stream)).await {
                            Ok(Ok(s)) => me.connection_from(s, Some(peer), shutdown).await,
                            Ok(Err(e)) => tracing::debug!(%peer, "status server: TLS: {e}"),
                            Err(_) => tracing::debug!(%peer, "status server: TLS handshake timed out"),
                        }
                    });
                }
                _ = shutdown.stopped() => break,
            }
        }
        sampler.abort();
    }

    /// Serves HTTP/1.1 on one connection until the client closes it, times out, or the
    /// connection's age or `shutdown` ends it (after the answer in progress).
    pub async fn connection<S>(self: Arc<Self>, stream: S, shutdown: Shutdown)
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        self.connection_from(stream, None, shutdown).await
    }

    /// [`Server::connection`] for a client at `peer` (named in the write API's audit lines).
    pub async fn connection_from<S>(
        self: Arc<Self>,
        stream: S,
        peer: Option<SocketAddr>,
        shutdown: Shutdown,
    ) where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let service = service_fn(move |req: hyper::Request<Incoming>| {
            let me = self.clone();
            async move { Ok::<_, Infallible>(me.answer(req, peer).await) }
        });
        let conn = http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(HEADER_TIMEOUT)
            .max_buf_size(MAX_HEAD_BYTES)
            .max_headers(MAX_HEADERS)
            .serve_connection(TokioIo::new(stream), service);
        tokio::pin!(conn);
        tokio::select! {
            done = conn.as_mut() => {
                if let Err(e) = done {
                    tracing::debug!("status server: {e}");
                }
                return;
            }
            _ = tokio::time::sleep(MAX_CONNECTION_AGE) => {}
            _ = shutdown.stopped() => {}
        }
        conn.as_mut().graceful_shutdown();
        let _ = tokio::time::timeout(CLOSE_GRACE, conn).await;
    }

    /// The answer to one request. A body is read only for a write whose token was accepted.
    async fn answer(
        &self,
        req: hyper::Request<Incoming>,
        peer: Option<SocketAddr>,
    ) -> hyper::Response<Full<Bytes>> {
        let (parts, body) = req.into_parts();
        let headers = parts
            .headers
            .iter()
            .filter_map(|(k, v)| Some((k.as_str().to_string(), v.to_str().ok()?.to_string())))
            .collect();
        let target = parts.uri.path_and_query().map_or("/", |pq| pq.as_str());
        let length = parts
            .headers
            .get(CONTENT_LENGTH)
            .and_then(|n| n.to_str().ok())
            .and_then(|n| n.trim().parse::<u64>().ok());
        let has_body = parts.headers.contains_key(hyper::header::TRANSFER_ENCODING)
            || parts
                .headers
                .get(CONTENT_LENGTH)
                .is_some_and(|n| n.as_bytes() != b"0");
        // An answer sent without reading the request's body ends the connection.
        let unread = |r: Response| {
            let mut answer = to_hyper(r);
            if has_body {
                answer
                    .headers_mut()
                    .insert(CONNECTION, HeaderValue::from_static("close"));
            }
            answer
        };
        let r = match Request::new(parts.method.as_str(), target, headers) {
            None => {
                return unread(Response::error(
                    400,
                    "malformed request: bad percent escape",
                ))
            }
            Some(r) => r,
        };
        if r.method != "POST" || !is_write_path(&r.path) {
            if has_body {
                return unread(Response::error(
                    413,
                    "requests with a body are not accepted",
                ));
            }
            return to_hyper(self.route(&r));
        }
        if let Err(refused) = self.write_gate(&r) {
            return unread(refused);
        }
        if length.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
            return unread(Response::error(
                413,
                &format!("the body is over {MAX_BODY_BYTES} bytes"),
            ));
        }
        let bytes = if has_body {
            let read = Limited::new(body, MAX_BODY_BYTES).collect();
            match tokio::time::timeout(HEADER_TIMEOUT, read).await {
                Ok(Ok(c)) => c.to_bytes(),
                Ok(Err(e)) => {
                    return unread(Response::error(413, &format!("cannot read the body: {e}")))
                }
                Err(_) => return unread(Response::error(408, "the body did not arrive in time")),
            }
        } else {
            Bytes::new()
        };
        to_hyper(self.write(&r, &bytes, peer).await)
    }
}

/// `r` as a hyper response: its status, `Content-Type`, `Cache-Control: no-store` and extra
/// headers (hyper adds `Content-Length`).
fn to_hyper(r: Response) -> hyper::Response<Full<Bytes>> {
    let mut b = hyper::Response::builder()
        .status(r.status)
        .header(CONTENT_TYPE, r.content_type)
        .header(CACHE_CONTROL, "no-store");
    for (k, v) in r.headers {
        b = b.header(k, v);
    }
    b.body(Full::new(Bytes::from(r.body))).unwrap_or_else(|e| {
        tracing::warn!("status server: cannot build an answer: {e}");
        let mut r = hyper::Response::new(Full::new(Bytes::from_static(
            b"{\"error\": \"cannot build the answer\"}",
        )));
        *r.status_mut() = hyper::StatusCode::INTERNAL_SERVER_ERROR;
        r
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use tokio::sync::watch;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::super::client;
    use super::super::http::bind;
    use super::super::Observer;
    use super::*;
    use crate::replicate::status::FlowStatus;

    async fn start_with(tls: Option<TlsAcceptor>) -> Running {
        let observer = Arc::new(Observer::new());
        observer.register_flow("a->b", "a", "b");
        let (status, rx) = watch::channel(FlowStatus {
            name: "a->b".into(),
            mirrors: Vec::new(),
            members: Vec::new(),
            paused: None,
            partitions: Vec::new(),
        });
        let flows = BTreeMap::from([("a->b".to_string(), rx)]);
        let server = Arc::new(Server::new(observer.clone(), flows));
        let (listener, addr) = bind("127.0.0.1:0").unwrap();
        let (stop, shutdown) = watch::channel(false);
        let task = tokio::spawn(server.run(listener, tls, shutdown));
        Running {
            addr: addr.to_string(),
            observer,
            stop,
            task,
            _status: status,
        }
    }

    struct Running {
        addr: String,
        observer: Arc<Observer>,
        stop: watch::Sender<bool>,
        task: tokio::task::JoinHandle<()>,
        _status: watch::Sender<FlowStatus>,
    }

    async fn start() -> Running {
        start_with(None).await
    }

    async fn raw(addr: &str, request: &[u8]) -> String {
        let mut c = tokio::net::TcpStream::connect(addr).await.unwrap();
        c.write_all(request).await.unwrap();
        let mut out = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(10), c.read_to_end(&mut out)).await;
        String::from_utf8_lossy(&out).into_owned()
    }

    #[tokio::test]
    async fn answers_with_the_routers_headers_and_limits() {
        let Running {
            addr, stop, task, ..
        } = start().await;
        let text = raw(
            &addr,
            b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        )
        .await;
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        let lower = text.to_ascii_lowercase();
        assert!(
            lower.contains("content-type: application/json\r\n"),
            "{text}"
        );
        assert!(lower.contains("cache-control: no-store\r\n"), "{text}");
        assert!(text.ends_with("{\n  \"status\": \"up\"\n}"), "{text}");
        assert!(raw(&addr, b"BLAH\r\n\r\n")
            .await
            .starts_with("HTTP/1.1 400 "));
        let text = raw(&addr, b"GET /%zz HTTP/1.1\r\nHost: x\r\n\r\n").await;
        assert!(text.starts_with("HTTP/1.1 400 "), "{text}");
        let big = format!(
            "GET / HTTP/1.1\r\nX: {}\r\n\r\n",
            "a".repeat(MAX_HEAD_BYTES)
        );
        let text = raw(&addr, big.as_bytes()).await;
        assert!(text.starts_with("HTTP/1.1 431 "), "{text}");
        let many: String = (0..=MAX_HEADERS).map(|i| format!("h{i}: v\r\n")).collect();
        let text = raw(&addr, format!("GET / HTTP/1.1\r\n{many}\r\n").as_bytes()).await;
        assert!(text.starts_with("HTTP/1.1 431 "), "{text}");
        let text = raw(
            &addr,
            b"GET /health HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
        )
        .await;
        assert!(text.starts_with("HTTP/1.1 413 "), "{text}");
        let text = raw(
            &addr,
            b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        )
        .await;
        assert!(text.starts_with("HTTP/1.1 405 "), "{text}");
        // Two requests on one kept-alive connection.
        let text = raw(
            &addr,
            b"GET /health HTTP/1.1\r\nHost: x\r\n\r\nGET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        )
        .await;
        assert!(text.contains("HTTP/1.1 404 "), "{text}");
        let (code, _) = client::get(&addr, "/nope", Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(code, 404);
        stop.send(true).unwrap();
        task.await.unwrap();
        assert!(
            tokio::net::TcpStream::connect(&addr).await.is_err(),
            "listener closed"
        );
    }

    /// Idle and half-sent connections, many more than the old server's limit, neither delay
    /// `/health` nor outlive [`HEADER_TIMEOUT`].
    #[tokio::test]
    async fn idle_connections_neither_delay_health_nor_stay() {
        let Running {
            addr,
            observer,
            stop,
            task,
            ..
        } = start().await;
        let before = observer.series_len("a->b");
        let mut idle = Vec::new();
        for i in 0..300 {
            let mut c = tokio::net::TcpStream::connect(&addr).await.unwrap();
            if i % 2 == 0 {
                c.write_all(b"GET /health HTTP/1.1\r\nHost:").await.unwrap();
            }
            idle.push(c);
        }
        for _ in 0..10 {
            let started = std::time::Instant::now();
            let (code, _) = client::get(&addr, "/health", Duration::from_secs(5))
                .await
                .unwrap();
            assert_eq!(code, 200);
            assert!(
                started.elapsed() < Duration::from_millis(500),
                "{:?}",
                started.elapsed()
            );
        }
        // Each idle one is closed by the server once its head timed out.
        tokio::time::sleep(HEADER_TIMEOUT + Duration::from_secs(1)).await;
        for c in &mut idle {
            let mut rest = Vec::new();
            let closed =
                tokio::time::timeout(Duration::from_secs(2), c.read_to_end(&mut rest)).await;
            assert!(closed.is_ok(), "still open");
        }
        assert!(observer.series_len("a->b") > before, "samples go on");
        stop.send(true).unwrap();
        task.await.unwrap();
    }

    /// Over TLS: connections that never finish their handshake neither delay `/health` nor
    /// stay past [`HEADER_TIMEOUT`].
    #[tokio::test]
    async fn tls_handshakes_left_unfinished_neither_delay_health_nor_stay() {
        let c = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        let dir = std::env::temp_dir().join(format!("strait-serve-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (cert, key) = (dir.join("srv.crt"), dir.join("srv.key"));
        std::fs::write(&cert, c.cert.pem()).unwrap();
        std::fs::write(&key, c.signing_key.serialize_pem()).unwrap();
        let config = crate::tls::server_config(&cert, &key).unwrap();
        let Running {
            addr, stop, task, ..
        } = start_with(Some(TlsAcceptor::from(config))).await;
        let mut idle = Vec::new();
        for i in 0..200 {
            let mut c = tokio::net::TcpStream::connect(&addr).await.unwrap();
            if i % 2 == 0 {
                // The start of a ClientHello record.
                c.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01])
                    .await
                    .unwrap();
            }
            idle.push(c);
        }
        let mut roots = rustls::RootCertStore::empty();
        roots.add(c.cert.der().clone()).unwrap();
        let client = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
        let connector = tokio_rustls::TlsConnector::from(Arc::new(client));
        for _ in 0..5 {
            let started = std::time::Instant::now();
            let tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
            let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
            let mut tls = connector.connect(name, tcp).await.unwrap();
            tls.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .await
                .unwrap();
            let mut out = Vec::new();
            let _ = tls.read_to_end(&mut out).await;
            let text = String::from_utf8_lossy(&out);
            assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
            assert!(
                started.elapsed() < Duration::from_millis(500),
                "{:?}",
                started.elapsed()
            );
        }
        tokio::time::sleep(HEADER_TIMEOUT + Duration::from_secs(1)).await;
        for c in &mut idle {
            let mut rest = Vec::new();
            let closed =
                tokio::time::timeout(Duration::from_secs(2), c.read_to_end(&mut rest)).await;
            assert!(closed.is_ok(), "still open");
        }
        stop.send(true).unwrap();
        task.await.unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A write's body is read only with the write token, and only up to [`MAX_BODY_BYTES`].
    #[tokio::test]
    async fn write_bodies_are_bounded_and_read_only_with_the_write_token() {
        let observer = Arc::new(Observer::new());
        let (_status, rx) = watch::channel(FlowStatus {
            name: "a->b".into(),
            mirrors: Vec::new(),
            members: Vec::new(),
            paused: None,
            partitions: Vec::new(),
        });
        let config = Arc::new(crate::config::Config::new("test"));
        let server = Arc::new(
            Server::new(observer, BTreeMap::from([("a->b".to_string(), rx)])).with_write_api(
                super::super::write_api::WriteApi::new(crate::secret::Secret::literal("w"), config),
            ),
        );
        let (listener, addr) = bind("127.0.0.1:0").unwrap();
        let (stop, shutdown) = watch::channel(false);
        let task = tokio::spawn(server.run(listener, None, shutdown));
        let addr = addr.to_string();
        let post = |auth: &str, len: usize| {
            format!(
                "POST /api/flows/a-%3Eb/topics HTTP/1.1\r\nHost: x\r\n{auth}Content-Length: {len}\r\nConnection: close\r\n\r\n"
            )
        };
        let text = raw(&addr, post("", 2).as_bytes()).await;
        assert!(text.starts_with("HTTP/1.1 401 "), "{text}");
        let text = raw(&addr, post("Authorization: Bearer r\r\n", 2).as_bytes()).await;
        assert!(text.starts_with("HTTP/1.1 403 "), "{text}");
        let text = raw(
            &addr,
            post("Authorization: Bearer w\r\n", MAX_BODY_BYTES + 1).as_bytes(),
        )
        .await;
        assert!(text.starts_with("HTTP/1.1 413 "), "{text}");
        // Read and answered: no such flow in this configuration.
        let mut req = post("Authorization: Bearer w\r\n", 2);
        req.push_str("{}");
        let text = raw(&addr, req.as_bytes()).await;
        assert!(text.starts_with("HTTP/1.1 404 "), "{text}");
        assert!(text.contains("no flow named"), "{text}");
        stop.send(true).unwrap();
        task.await.unwrap();
    }
}
