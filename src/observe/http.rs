//! Routing and handlers of the status page, `/metrics` and the REST API.
//!
//! GETs here; the writes (`POST`) are [`super::write_api`]'s. The router is sans-io: [`Server::route`] answers a [`Request`] (method,
//! percent-decoded path, query, headers) with a [`Response`], after an optional [`Authorize`]
//! hook (for example a bearer token). The connections themselves (HTTP/1.1 through hyper,
//! timeouts, size limits, TLS) are [`super::serve`]'s.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::watch;

use super::api::{FlowGroupsDoc, FlowsDoc, GroupsDoc};
use super::{process_rss, Observer};
use crate::replicate::status::FlowStatus;
use crate::replicate::store::now_ms;
use crate::Shutdown;

/// The cookie that carries the status page's token after a `?token=` visit.
pub const TOKEN_COOKIE: &str = "strait_token";

/// The status page.
pub const PAGE: &str = include_str!("page.html");

/// The OpenAPI document of the whole API, served at `/api/openapi.json`.
pub const OPENAPI: &str = include_str!("openapi.json");

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

    /// A request for `target` (`/path?query`, the path percent-encoded); `None` for a bad
    /// percent escape.
    pub fn new(method: &str, target: &str, headers: Vec<(String, String)>) -> Option<Request> {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        Some(Request {
            method: method.to_string(),
            path: percent_decode(path)?,
            query: query.to_string(),
            headers,
        })
    }
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
}

/// Decides whether a request may be served (for example by checking a bearer token); `Err`
/// carries the response to send instead.
pub type Authorize = Arc<dyn Fn(&Request) -> Result<(), Response> + Send + Sync>;

/// What the server shows: the observer and the flows' status channels.
pub struct Server {
    observer: Arc<Observer>,
    status: BTreeMap<String, watch::Receiver<FlowStatus>>,
    authorize: Option<Authorize>,
    write: Option<super::write_api::WriteApi>,
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
            write: None,
        }
    }

    /// Turns the write API on (see [`super::write_api`]).
    pub fn with_write_api(mut self, write: super::write_api::WriteApi) -> Server {
        self.write = Some(write);
        self
    }

    /// The answer to a `POST` on a write path, `body` read: 404 while the write API is off,
    /// else the write token's check, then the write.
    pub async fn write(&self, req: &Request, body: &[u8], peer: Option<SocketAddr>) -> Response {
        match self.write_gate(req) {
            Err(r) => r,
            Ok(w) => w.handle(req, body, peer).await,
        }
    }

    /// The write API when on and `req` carries its token; else the answer to send instead.
    pub fn write_gate(&self, req: &Request) -> Result<&super::write_api::WriteApi, Response> {
        let Some(w) = &self.write else {
            return Err(Response::error(
                404,
                "the write API is off: set [http] write_token to turn it on",
            ));
        };
        w.authorize(req)?;
        Ok(w)
    }

    /// Checks every request with `authorize` before routing it.
    pub fn with_authorize(mut self, authorize: Authorize) -> Server {
        self.authorize = Some(authorize);
        self
    }

    fn statuses(&self) -> Vec<FlowStatus> {
        self.status.values().map(|r| r.borrow().clone()).collect()
    }

    /// Answers one request (a `POST` on a write path goes to [`Server::write`] instead).
    pub fn route(&self, req: &Request) -> Response {
        if super::write_api::is_write_path(&req.path) {
            let mut r = Response::error(405, "a write: only POST is supported");
            r.headers.push(("Allow", "POST".to_string()));
            return r;
        }
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
            "/api/openapi.json" => Response {
                status: 200,
                content_type: "application/json",
                headers: Vec::new(),
                body: OPENAPI.as_bytes().to_vec(),
            },
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
                            "paused": f.paused,
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

    /// Takes the flows' chart samples every few seconds until `shutdown` turns true.
    pub(super) async fn sample(&self, shutdown: Shutdown) {
        let every = std::time::Duration::from_millis(super::series::SAMPLE_EVERY_MS as u64);
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => self.observer.sample(&self.statuses(), now_ms()),
                _ = shutdown.stopped() => return,
            }
        }
    }
}

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

    #[test]
    fn requests_decode_their_target() {
        let r = Request::new(
            "GET",
            "/api/flows/a-%3Eb?x=1",
            vec![("authorization".into(), "Bearer t".into())],
        )
        .unwrap();
        assert_eq!(r.path, "/api/flows/a->b");
        assert_eq!(r.query, "x=1");
        assert_eq!(r.header("authorization"), Some("Bearer t"));
        assert_eq!(Request::new("GET", "/", Vec::new()).unwrap().query, "");
        assert!(Request::new("GET", "/%zz", Vec::new()).is_none());
        assert!(Request::new("GET", "/%ff", Vec::new()).is_none());
        assert!(Request::new("GET", "/%4", Vec::new()).is_none());
    }

    fn server() -> (Server, watch::Sender<FlowStatus>) {
        let o = Arc::new(Observer::new());
        o.register_flow("a->b", "a", "b");
        let (tx, rx) = watch::channel(FlowStatus {
            name: "a->b".into(),
            mirrors: Vec::new(),
            members: Vec::new(),
            paused: None,
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

    #[test]
    fn a_paused_flow_is_ready_and_says_so_everywhere() {
        let (s, tx) = server();
        s.observer
            .connected("a->b", super::super::Side::Source, true);
        s.observer
            .connected("a->b", super::super::Side::Target, true);
        let gauge =
            |v: u8| format!("strait_flow_paused{{flow=\"a->b\",source=\"a\",target=\"b\"}} {v}\n");
        assert!(get(&s, "/metrics").1.contains(&gauge(0)));
        tx.send_modify(|st| {
            st.paused = Some(crate::replicate::pause::PauseRecord {
                paused: true,
                changed_ms: 7,
                reason: Some("upgrade".into()),
            })
        });
        // The operator's intent, not a fault: ready, and every document says paused.
        let (code, body) = get(&s, "/ready");
        assert_eq!(code, 200, "{body}");
        assert!(body.contains("\"reason\": \"upgrade\""), "{body}");
        let v: FlowsDoc = serde_json::from_str(&get(&s, "/api/flows").1).unwrap();
        assert_eq!(v.flows[0].paused.as_ref().map(|p| p.changed_ms), Some(7));
        assert!(get(&s, "/metrics").1.contains(&gauge(1)));
        tx.send_modify(|st| st.paused = None);
        assert!(get(&s, "/metrics").1.contains(&gauge(0)));
        assert!(get(&s, "/api/flows").1.contains("\"paused\": null"));
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

    /// Every GET of the OpenAPI document is routed; every POST is a write path, answered 404
    /// while the write API is off.
    #[tokio::test]
    async fn the_openapi_document_matches_the_router() {
        let (s, _tx) = server();
        let doc: serde_json::Value = serde_json::from_str(OPENAPI).unwrap();
        let (code, body) = get(&s, "/api/openapi.json");
        assert_eq!(
            (
                code,
                serde_json::from_str::<serde_json::Value>(&body).unwrap()
            ),
            (200, doc.clone())
        );
        for (path, ops) in doc["paths"].as_object().unwrap() {
            let concrete = path.replace("{flow}", "a->b");
            for method in ops.as_object().unwrap().keys() {
                match method.as_str() {
                    "get" => {
                        assert!(!super::super::write_api::is_write_path(&concrete), "{path}");
                        let code = get(&s, &concrete).0.to_string();
                        let documented = &ops["get"]["responses"];
                        assert!(documented.get(&code).is_some(), "{path}: {code}");
                        assert!(code == "200" || code == "503", "{path}: {code}");
                    }
                    "post" => {
                        assert!(super::super::write_api::is_write_path(&concrete), "{path}");
                        assert_eq!(get(&s, &concrete).0, 405, "{path}");
                        let req = Request {
                            method: "POST".into(),
                            path: concrete.clone(),
                            query: String::new(),
                            headers: Vec::new(),
                        };
                        let r = s.write(&req, b"{}", None).await;
                        assert_eq!(r.status, 404, "{path}");
                    }
                    m => panic!("{m}"),
                }
            }
        }
    }
}
