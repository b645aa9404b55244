//! The HTTP/1.1 server of the status page, `/metrics` and the REST API.
//!
//! GET only, one request per connection, bounded request size. The request parser and the
//! router are sans-io ([`parse_request`], [`Server::route`]); [`Server::serve_connection`]
//! takes any `AsyncRead + AsyncWrite` stream (so TLS can wrap the TCP stream) and an optional
//! [`Authorize`] hook checks each request (for example a bearer token) before routing.

use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};

use super::api::{FlowGroupsDoc, FlowsDoc, GroupsDoc};
use super::series::SAMPLE_EVERY_MS;
use super::{process_rss, Observer};
use crate::replicate::status::FlowStatus;
use crate::replicate::store::now_ms;
use crate::Shutdown;

/// Largest request head (request line and headers) accepted.
pub const MAX_REQUEST_BYTES: usize = 16 * 1024;
/// Largest number of headers accepted.
pub const MAX_HEADERS: usize = 64;
/// Time allowed to send the request head (a slow or idle client is dropped after it).
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(2);
/// Time allowed to take the answer.
pub const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections served at once; a connection beyond them is answered 503 and closed at once.
pub const MAX_CONNECTIONS: usize = 64;
/// The cookie that carries the status page's token after a `?token=` visit.
pub const TOKEN_COOKIE: &str = "strait_token";

/// The status page.
pub const PAGE: &str = include_str!("page.html");

/// A parsed request head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// `GET`, `POST`, ...
    pub method: String,
    /// Percent-decoded path, e.g. `/api/flows/a->b`.
    pub path: String,
    /// Raw query string (after `?`), possibly empty.
    pub query: String,
    /// Headers, names lower-cased, in order.
    pub headers: Vec<(String, String)>,
}

impl Request {
    /// The first header named `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Why a request head was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// Larger than [`MAX_REQUEST_BYTES`] or with more than [`MAX_HEADERS`] headers.
    TooLarge,
    /// Not an HTTP/1.x request head.
    Malformed(&'static str),
}

/// Decodes `%XX` escapes; `None` for a bad escape or a result that is not UTF-8.
pub fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = b.get(i + 1..i + 3)?;
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Parses a request head from the start of `buf`: `Ok(None)` while the blank line ending the
/// head has not arrived yet.
pub fn parse_request(buf: &[u8]) -> Result<Option<Request>, ParseError> {
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n");
    let Some(end) = end else {
        if buf.len() >= MAX_REQUEST_BYTES {
            return Err(ParseError::TooLarge);
        }
        return Ok(None);
    };
    if end + 4 > MAX_REQUEST_BYTES {
        return Err(ParseError::TooLarge);
    }
    let head = std::str::from_utf8(&buf[..end]).map_err(|_| ParseError::Malformed("not UTF-8"))?;
    let mut lines = head.split("\r\n");
    let line = lines.next().unwrap_or_default();
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(ParseError::Malformed("bad request line"));
    };
    if method.is_empty() || !method.bytes().all(|c| c.is_ascii_uppercase()) {
        return Err(ParseError::Malformed("bad method"));
    }
    if version != "HTTP/1.1" && version != "HTTP/1.0" {
        return Err(ParseError::Malformed("bad HTTP version"));
    }
    if !target.starts_with('/') {
        return Err(ParseError::Malformed("bad request target"));
    }
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let path = percent_decode(path).ok_or(ParseError::Malformed("bad percent escape"))?;
    let mut headers = Vec::new();
    for l in lines {
        if headers.len() == MAX_HEADERS {
            return Err(ParseError::TooLarge);
        }
        let (k, v) = l
            .split_once(':')
            .ok_or(ParseError::Malformed("bad header line"))?;
        if k.is_empty() || k.contains(' ') {
            return Err(ParseError::Malformed("bad header name"));
        }
        headers.push((k.to_ascii_lowercase(), v.trim().to_string()));
    }
    Ok(Some(Request {
        method: method.to_string(),
        path,
        query: query.to_string(),
        headers,
    }))
}

/// A response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// `Content-Type`.
    pub content_type: &'static str,
    /// Extra headers.
    pub headers: Vec<(&'static str, String)>,
    /// Body.
    pub body: Vec<u8>,
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        303 => "See Other",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        413 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "",
    }
}

impl Response {
    /// A JSON response.
    pub fn json(status: u16, value: &impl serde::Serialize) -> Response {
        match serde_json::to_vec_pretty(value) {
            Ok(body) => Response {
                status,
                content_type: "application/json",
                headers: Vec::new(),
                body,
            },
            Err(e) => Response::error(500, &format!("cannot encode the answer: {e}")),
        }
    }

    /// A JSON error: `{"error": message}`.
    pub fn error(status: u16, message: &str) -> Response {
        Response {
            status,
            content_type: "application/json",
            headers: Vec::new(),
            body: serde_json::json!({ "error": message })
                .to_string()
                .into_bytes(),
        }
    }

    /// Status line, headers and body, ready to write.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut head = format!(
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n",
            self.status,
            reason(self.status),
            self.content_type,
            self.body.len()
        );
        for (k, v) in &self.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        let mut out = head.into_bytes();
        out.extend_from_slice(&self.body);
        out
    }
}

/// Decides whether a request may be served (for example by checking a bearer token); `Err`
/// carries the response to send instead.
pub type Authorize = Arc<dyn Fn(&Request) -> Result<(), Response> + Send + Sync>;

/// What the server shows: the observer and the flows' status channels.
pub struct Server {
    observer: Arc<Observer>,
    status: BTreeMap<String, watch::Receiver<FlowStatus>>,
    authorize: Option<Authorize>,
}

impl Server {
    /// A server over the engine's observer and flow statuses.
    pub fn new(
        observer: Arc<Observer>,
        status: BTreeMap<String, watch::Receiver<FlowStatus>>,
    ) -> Server {
        Server {
            observer,
            status,
            authorize: None,
        }
    }

    /// Checks every request with `authorize` before routing it.
    pub fn with_authorize(mut self, authorize: Authorize) -> Server {
        self.authorize = Some(authorize);
        self
    }

    fn statuses(&self) -> Vec<FlowStatus> {
        self.status.values().map(|r| r.borrow().clone()).collect()
    }

    /// Answers one request.
    pub fn route(&self, req: &Request) -> Response {
        if let Some(auth) = &self.authorize {
            if let Err(r) = auth(req) {
                return r;
            }
        }
        if req.method != "GET" {
            let mut r = Response::error(405, "only GET is supported");
            r.headers.push(("Allow", "GET".to_string()));
            return r;
        }
        let path = req.path.trim_end_matches('/');
        match path {
            "" | "/index.html" => Response {
                status: 200,
                content_type: "text/html; charset=utf-8",
                headers: Vec::new(),
                body: PAGE.as_bytes().to_vec(),
            },
            "/metrics" => Response {
                status: 200,
                content_type: "text/plain; version=0.0.4; charset=utf-8",
                headers: Vec::new(),
                body: self
                    .observer
                    .exposition(&self.statuses(), process_rss())
                    .into_bytes(),
            },
            "/health" => Response::json(200, &serde_json::json!({ "status": "up" })),
            "/ready" => {
                let doc = self.observer.status_doc(&self.statuses(), now_ms(), false);
                let flows: Vec<_> = doc
                    .flows
                    .iter()
                    .map(|f| {
                        let stopped_partitions: Vec<_> = f
                            .topics
                            .iter()
                            .flat_map(|t| {
                                t.partitions.iter().filter_map(|p| {
                                    p.failed.as_ref().map(|why| {
                                        serde_json::json!({
                                            "topic": t.source_topic,
                                            "partition": p.partition,
                                            "reason": why,
                                        })
                                    })
                                })
                            })
                            .collect();
                        serde_json::json!({
                            "name": f.name,
                            "source_connected": f.source_connected,
                            "source_problem": f.source_problem,
                            "target_problem": f.target_problem,
                            "target_connected": f.target_connected,
                            "stopped": f.stopped,
                            "stopped_partitions": stopped_partitions,
                        })
                    })
                    .collect();
                let status = if doc.ready { 200 } else { 503 };
                Response::json(
                    status,
                    &serde_json::json!({ "ready": doc.ready, "flows": flows }),
                )
            }
            "/api/status" => Response::json(
                200,
                &self.observer.status_doc(&self.statuses(), now_ms(), true),
            ),
            "/api/flows" => {
                let doc = self.observer.status_doc(&self.statuses(), now_ms(), false);
                Response::json(200, &FlowsDoc { flows: doc.flows })
            }
            "/api/groups" => {
                let doc = self.observer.status_doc(&self.statuses(), now_ms(), false);
                let flows = doc
                    .flows
                    .into_iter()
                    .map(|f| FlowGroupsDoc {
                        flow: f.name,
                        groups: f.groups,
                    })
                    .collect();
                Response::json(200, &GroupsDoc { flows })
            }
            p => match p.strip_prefix("/api/flows/") {
                Some(name) => {
                    let doc = self.observer.status_doc(&self.statuses(), now_ms(), false);
                    match doc.flows.into_iter().find(|f| f.name == name) {
                        Some(f) => Response::json(200, &f),
                        None => Response::error(404, &format!("no flow named {name:?}")),
                    }
                }
                None => Response::error(404, &format!("no such resource: {}", req.path)),
            },
        }
    }

    /// Serves one request on `stream` and closes it. A malformed or oversized request gets
    /// 400/413; a client that does not send its request head within [`HEAD_TIMEOUT`], or does
    /// not take the answer within [`READ_TIMEOUT`], is dropped.
    pub async fn serve_connection<S: AsyncRead + AsyncWrite + Unpin>(&self, mut stream: S) {
        let mut buf = Vec::with_capacity(1024);
        let mut chunk = [0u8; 4096];
        let read = async {
            loop {
                let n = match stream.read(&mut chunk).await {
                    Ok(0) | Err(_) => return None,
                    Ok(n) => n,
                };
                buf.extend_from_slice(&chunk[..n]);
                match parse_request(&buf) {
                    Ok(None) => continue,
                    Ok(Some(req)) => return Some(self.route(&req)),
                    Err(ParseError::TooLarge) => {
                        return Some(Response::error(413, "request head too large"))
                    }
                    Err(ParseError::Malformed(why)) => {
                        return Some(Response::error(400, &format!("malformed request: {why}")))
                    }
                }
            }
        };
        let Ok(Some(response)) = tokio::time::timeout(HEAD_TIMEOUT, read).await else {
            return;
        };
        let write = async {
            let _ = stream.write_all(&response.to_bytes()).await;
            let _ = stream.shutdown().await;
        };
        let _ = tokio::time::timeout(READ_TIMEOUT, write).await;
    }

    /// Accepts connections on `listener` and samples the flows' series every few seconds,
    /// until `shutdown` turns true.
    pub async fn run(self: Arc<Self>, listener: TcpListener, shutdown: impl Into<Shutdown>) {
        self.run_with(listener, shutdown, |s| async move { Ok(s) })
            .await
    }

    /// [`Server::run`], passing each accepted TCP stream through `wrap` first (for example a
    /// TLS handshake); a stream `wrap` fails on, or does not finish within [`READ_TIMEOUT`],
    /// is dropped.
    pub async fn run_with<W, Fut, S>(
        self: Arc<Self>,
        listener: TcpListener,
        shutdown: impl Into<Shutdown>,
        wrap: W,
    ) where
        W: Fn(TcpStream) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::io::Result<S>> + Send + 'static,
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let shutdown: Shutdown = shutdown.into();
        let wrap = Arc::new(wrap);
        let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
        // The charts' samples are taken by a task of their own: a busy or stalled server never
        // delays them.
        let sampler = {
            let me = self.clone();
            let shutdown = shutdown.clone();
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(Duration::from_millis(SAMPLE_EVERY_MS as u64));
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    tokio::select! {
                        _ = tick.tick() => me.observer.sample(&me.statuses(), now_ms()),
                        _ = shutdown.stopped() => return,
                    }
                }
            })
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
                    // Accepting never waits for a slot: past the limit, a short 503 is
                    // written if the socket takes it, and the connection closed.
                    let Ok(permit) = slots.clone().try_acquire_owned() else {
                        tracing::debug!(%peer, "status server: {MAX_CONNECTIONS} connections busy; refused");
                        let _ = stream.try_write(BUSY);
                        continue;
                    };
                    let me = self.clone();
                    let wrap = wrap.clone();
                    tokio::spawn(async move {
                        tracing::trace!(%peer, "status server: connection");
                        match tokio::time::timeout(HEAD_TIMEOUT, wrap(stream)).await {
                            Ok(Ok(s)) => me.serve_connection(s).await,
                            Ok(Err(e)) => tracing::debug!(%peer, "status server: {e}"),
                            Err(_) => tracing::debug!(%peer, "status server: stream setup timed out"),
                        }
                        drop(permit);
                    });
                }
                _ = shutdown.stopped() => break,
            }
        }
        sampler.abort();
    }
}

/// The answer to a connection beyond [`MAX_CONNECTIONS`].
const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\nRetry-After: 1\r\n\r\n";

/// A gate for every request but `/health` (the liveness probe): the token as
/// `Authorization: Bearer TOKEN`, or in the [`TOKEN_COOKIE`] cookie. A browser opens the page
/// once as `/?token=TOKEN`: the answer sets the cookie (HttpOnly, SameSite=Strict) and
/// redirects to `/`, so the page's own requests carry it.
pub fn token_gate(token: crate::secret::Secret) -> Authorize {
    Arc::new(move |req: &Request| {
        if req.path == "/health" {
            return Ok(());
        }
        if crate::tls::bearer_token_matches(req.header("authorization"), &token) {
            return Ok(());
        }
        let cookie = req.header("cookie").and_then(|c| {
            c.split(';')
                .filter_map(|kv| kv.trim().split_once('='))
                .find(|(k, _)| *k == TOKEN_COOKIE)
                .map(|(_, v)| v.to_string())
        });
        if cookie.is_some_and(|v| crate::tls::token_matches(&v, &token)) {
            return Ok(());
        }
        let from_query = req
            .query
            .split('&')
            .filter_map(|kv| kv.split_once('='))
            .find(|(k, _)| *k == "token")
            .and_then(|(_, v)| percent_decode(v));
        if let Some(v) = from_query {
            if crate::tls::token_matches(&v, &token) {
                let mut r = Response::error(303, "token accepted");
                // Only a path of this server: never `//host` or `/\\host` (an open redirect).
                let p = req.path.as_bytes();
                let local = p.first() == Some(&b'/')
                    && !matches!(p.get(1), Some(b'/') | Some(b'\\'))
                    && p.iter().all(|c| c.is_ascii_graphic());
                let location = if local {
                    req.path.clone()
                } else {
                    "/".to_string()
                };
                r.headers.push(("Location", location));
                r.headers.push((
                    "Set-Cookie",
                    format!("{TOKEN_COOKIE}={v}; Path=/; HttpOnly; SameSite=Strict"),
                ));
                return Err(r);
            }
        }
        Err(Response::error(
            401,
            "a token is required: Authorization: Bearer TOKEN, or open the page once as /?token=TOKEN",
        ))
    })
}

/// Binds the listen address `addr` (`host:port`) for the status server.
pub fn bind(addr: &str) -> std::io::Result<(TcpListener, SocketAddr)> {
    let std = std::net::TcpListener::bind(addr)?;
    std.set_nonblocking(true)?;
    let local = std.local_addr()?;
    Ok((TcpListener::from_std(std)?, local))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replicate::status::PartitionStatus;

    fn req(s: &str) -> Result<Option<Request>, ParseError> {
        parse_request(s.as_bytes())
    }

    #[test]
    fn parses_request_heads() {
        let r =
            req("GET /api/flows/a-%3Eb?x=1 HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer t\r\n\r\n")
                .unwrap()
                .unwrap();
        assert_eq!(r.method, "GET");
        assert_eq!(r.path, "/api/flows/a->b");
        assert_eq!(r.query, "x=1");
        assert_eq!(r.header("authorization"), Some("Bearer t"));
        assert_eq!(req("GET / HTTP/1.1\r\nHost: h\r\n").unwrap(), None);
        assert_eq!(req("").unwrap(), None);
    }

    #[test]
    fn refuses_malformed_and_oversized_heads() {
        for bad in [
            "GET /\r\n\r\n",
            "GET / HTTP/2\r\n\r\n",
            "get / HTTP/1.1\r\n\r\n",
            "GET x HTTP/1.1\r\n\r\n",
            "GET /%zz HTTP/1.1\r\n\r\n",
            "GET /%ff HTTP/1.1\r\n\r\n",
            "GET / HTTP/1.1\r\nno colon\r\n\r\n",
            "GET  / HTTP/1.1\r\n\r\n",
            "\r\n\r\n",
        ] {
            assert!(
                matches!(req(bad), Err(ParseError::Malformed(_))),
                "{bad:?}: {:?}",
                req(bad)
            );
        }
        let big = format!(
            "GET / HTTP/1.1\r\nX: {}\r\n\r\n",
            "a".repeat(MAX_REQUEST_BYTES)
        );
        assert_eq!(req(&big), Err(ParseError::TooLarge));
        let endless = "a".repeat(MAX_REQUEST_BYTES);
        assert_eq!(req(&endless), Err(ParseError::TooLarge));
        let many: String = (0..=MAX_HEADERS).map(|i| format!("h{i}: v\r\n")).collect();
        assert_eq!(
            req(&format!("GET / HTTP/1.1\r\n{many}\r\n")),
            Err(ParseError::TooLarge)
        );
        // Arbitrary bytes never panic.
        for n in 0..300u32 {
            let junk: Vec<u8> = (0..n)
                .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
                .collect();
            let _ = parse_request(&junk);
        }
    }

    fn server() -> (Server, watch::Sender<FlowStatus>) {
        let o = Arc::new(Observer::new());
        o.register_flow("a->b", "a", "b");
        let (tx, rx) = watch::channel(FlowStatus {
            name: "a->b".into(),
            mirrors: Vec::new(),
            members: Vec::new(),
            partitions: vec![PartitionStatus {
                source_topic: "orders".into(),
                target_topic: "a.orders".into(),
                partition: 0,
                source_next: 5,
                target_next: 5,
                source_end: 9,
                records: 5,
                bytes: 500,
                lost_records: 0,
                failed: None,
            }],
        });
        (
            Server::new(o, BTreeMap::from([("a->b".to_string(), rx)])),
            tx,
        )
    }

    fn get(s: &Server, path: &str) -> (u16, String) {
        let r = s.route(&Request {
            method: "GET".into(),
            path: path.into(),
            query: String::new(),
            headers: Vec::new(),
        });
        (r.status, String::from_utf8(r.body).unwrap())
    }

    #[test]
    fn routes() {
        let (s, _tx) = server();
        let (code, body) = get(&s, "/");
        assert_eq!(code, 200);
        assert!(body.contains("<canvas") || body.contains("canvas"));
        assert!(!body.contains("http://") && !body.contains("https://"));
        assert_eq!(get(&s, "/health").0, 200);
        let (code, body) = get(&s, "/ready");
        assert_eq!(code, 503, "{body}");
        s.observer
            .connected("a->b", super::super::Side::Source, true);
        s.observer
            .connected("a->b", super::super::Side::Target, true);
        assert_eq!(get(&s, "/ready").0, 200);
        let (code, body) = get(&s, "/metrics");
        assert_eq!(code, 200);
        assert!(body.contains("strait_partition_lag_records{flow=\"a->b\",source=\"a\",target=\"b\",topic=\"orders\",partition=\"0\"} 4\n"), "{body}");
        let (code, body) = get(&s, "/api/flows");
        assert_eq!(code, 200);
        let v: FlowsDoc = serde_json::from_str(&body).unwrap();
        assert_eq!(v.flows[0].name, "a->b");
        assert_eq!(v.flows[0].topics[0].lag, 4);
        assert_eq!(get(&s, "/api/flows/a->b").0, 200);
        assert_eq!(get(&s, "/api/flows/b->a").0, 404);
        let (code, body) = get(&s, "/api/groups");
        assert_eq!(code, 200);
        assert!(body.contains("\"flow\": \"a->b\""), "{body}");
        let (code, body) = get(&s, "/api/status");
        assert_eq!(code, 200);
        assert!(body.contains("\"ready\": true"));
        let (code, body) = get(&s, "/nope");
        assert_eq!(code, 404);
        assert!(body.contains("\"error\""));
        let r = s.route(&Request {
            method: "POST".into(),
            path: "/metrics".into(),
            query: String::new(),
            headers: Vec::new(),
        });
        assert_eq!(r.status, 405);
    }

    #[test]
    fn authorize_hook_runs_first() {
        let (s, _tx) = server();
        let s = s.with_authorize(Arc::new(|r: &Request| {
            if r.header("authorization") == Some("Bearer ok") {
                Ok(())
            } else {
                Err(Response::error(401, "token needed"))
            }
        }));
        assert_eq!(get(&s, "/health").0, 401);
        let r = s.route(&Request {
            method: "GET".into(),
            path: "/health".into(),
            query: String::new(),
            headers: vec![("authorization".into(), "Bearer ok".into())],
        });
        assert_eq!(r.status, 200);
    }

    #[tokio::test]
    async fn serves_tcp_through_the_wrap_hook_until_shutdown() {
        let (s, _tx) = server();
        let (listener, addr) = bind("127.0.0.1:0").unwrap();
        let wrapped = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = wrapped.clone();
        let (stop, shutdown) = watch::channel(false);
        let task = tokio::spawn(Arc::new(s).run_with(listener, shutdown, move |stream| {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async move { Ok(stream) }
        }));
        let addr = addr.to_string();
        let (code, body) = super::super::client::get(&addr, "/health", Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(
            (code, String::from_utf8(body).unwrap().contains("up")),
            (200, true)
        );
        let (code, _) = super::super::client::get(&addr, "/nope", Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(code, 404);
        assert_eq!(wrapped.load(std::sync::atomic::Ordering::SeqCst), 2);
        stop.send(true).unwrap();
        task.await.unwrap();
    }

    #[tokio::test]
    async fn serves_over_a_stream() {
        let (s, _tx) = server();
        let (mut client, server_end) = tokio::io::duplex(64 * 1024);
        let task = tokio::spawn(async move { s.serve_connection(server_end).await });
        client
            .write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut out = Vec::new();
        client.read_to_end(&mut out).await.unwrap();
        task.await.unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        assert!(text.ends_with("{\n  \"status\": \"up\"\n}"), "{text}");

        let (s, _tx) = server();
        let (mut client, server_end) = tokio::io::duplex(64 * 1024);
        let task = tokio::spawn(async move { s.serve_connection(server_end).await });
        client.write_all(b"BLAH\r\n\r\n").await.unwrap();
        let mut out = Vec::new();
        client.read_to_end(&mut out).await.unwrap();
        task.await.unwrap();
        assert!(String::from_utf8(out).unwrap().starts_with("HTTP/1.1 400 "));
    }

    #[test]
    fn a_stopped_partition_is_not_ready() {
        let (s, tx) = server();
        s.observer
            .connected("a->b", super::super::Side::Source, true);
        s.observer
            .connected("a->b", super::super::Side::Target, true);
        assert_eq!(get(&s, "/ready").0, 200);
        tx.send_modify(|st| st.partitions[0].failed = Some("foreign write at 10".into()));
        let (code, body) = get(&s, "/ready");
        assert_eq!(code, 503, "{body}");
        assert!(body.contains("\"stopped_partitions\""), "{body}");
        assert!(body.contains("foreign write at 10"), "{body}");
        assert!(get(&s, "/api/status").1.contains("\"ready\": false"));
    }

    fn req_with(path: &str, query: &str, headers: &[(&str, &str)]) -> Request {
        Request {
            method: "GET".into(),
            path: path.into(),
            query: query.into(),
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    #[test]
    fn the_token_gate_lets_probes_and_browsers_in() {
        let (s, _tx) = server();
        let s = s.with_authorize(token_gate(crate::secret::Secret::literal("s3cret")));
        assert_eq!(s.route(&req_with("/health", "", &[])).status, 200);
        assert_eq!(s.route(&req_with("/", "", &[])).status, 401);
        assert_eq!(s.route(&req_with("/api/status", "", &[])).status, 401);
        assert_eq!(
            s.route(&req_with(
                "/api/status",
                "",
                &[("authorization", "Bearer s3cret")]
            ))
            .status,
            200
        );
        assert_eq!(s.route(&req_with("/", "token=wrong", &[])).status, 401);
        let r = s.route(&req_with("/", "token=s3cret", &[]));
        assert_eq!(r.status, 303);
        let cookie = r
            .headers
            .iter()
            .find(|(k, _)| *k == "Set-Cookie")
            .map(|(_, v)| v.clone())
            .unwrap();
        assert!(cookie.starts_with("strait_token=s3cret;"), "{cookie}");
        assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"));
        assert!(r.headers.iter().any(|(k, v)| *k == "Location" && v == "/"));
        let r = s.route(&req_with("//evil.example", "token=s3cret", &[]));
        assert!(r.headers.iter().any(|(k, v)| *k == "Location" && v == "/"));
        let with_cookie = [("cookie", "a=b; strait_token=s3cret")];
        assert_eq!(
            s.route(&req_with("/api/status", "", &with_cookie)).status,
            200
        );
        assert_eq!(
            s.route(&req_with(
                "/api/status",
                "",
                &[("cookie", "strait_token=nope")]
            ))
            .status,
            401
        );
    }

    /// Idle and half-sent connections beyond the limit neither delay `/health` nor stop the
    /// chart samples.
    #[tokio::test]
    async fn idle_connections_cannot_starve_the_server() {
        let (s, _tx) = server();
        let observer = s.observer.clone();
        let (listener, addr) = bind("127.0.0.1:0").unwrap();
        let (stop, shutdown) = watch::channel(false);
        let task = tokio::spawn(Arc::new(s).run(listener, shutdown));
        let mut idle = Vec::new();
        for i in 0..(MAX_CONNECTIONS * 3) {
            let mut c = tokio::net::TcpStream::connect(addr).await.unwrap();
            if i % 2 == 0 {
                c.write_all(b"GET /health HTTP/1.1\r\nHost:").await.unwrap();
            }
            idle.push(c);
        }
        let addr_s = addr.to_string();
        let started = std::time::Instant::now();
        let (code, _) = loop {
            match super::super::client::get(&addr_s, "/health", Duration::from_secs(5)).await {
                Ok(r) => break r,
                // Refused while the slots are full: a quick answer, try again.
                Err(_) if started.elapsed() < Duration::from_secs(4) => {
                    tokio::time::sleep(Duration::from_millis(50)).await
                }
                Err(e) => panic!("no answer: {e}"),
            }
        };
        assert!(code == 200 || code == 503, "answered {code}");
        assert!(
            started.elapsed() < HEAD_TIMEOUT + Duration::from_secs(2),
            "took {:?}",
            started.elapsed()
        );
        // After the idle ones were dropped for their head timeout, it answers 200.
        tokio::time::sleep(HEAD_TIMEOUT + Duration::from_millis(500)).await;
        let (code, _) = super::super::client::get(&addr_s, "/health", Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(code, 200);
        let before = observer.series_len("a->b");
        tokio::time::sleep(Duration::from_millis(SAMPLE_EVERY_MS as u64 + 500)).await;
        assert!(observer.series_len("a->b") > before, "samples go on");
        drop(idle);
        stop.send(true).unwrap();
        task.await.unwrap();
    }
}
