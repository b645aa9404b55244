//! The write API: the CLI's changes for automation, through the same records (so every instance
//! of a scale-out group applies them).
//!
//! - `POST /api/flows/{flow}/topics`, `POST /api/flows/{flow}/groups`: change the allow/deny
//!   lists (`strait topics|groups`); body `{"add":[..],"remove":[..],"add_exclude":[..],
//!   "remove_exclude":[..]}` (every field optional).
//! - `POST /api/flows/{flow}/pause`, `POST /api/flows/{flow}/resume`: pause or resume the
//!   whole flow on every instance (`strait pause|resume`); pause body `{"reason":".."}`
//!   (optional), resume body empty or `{}`; 200 (`changed: false` when it already was).
//! - `POST /api/flows/{flow}/failover`: commit a group's translated offsets on the target
//!   (`strait failover`); body `{"group":"..","dry_run":true}`.
//! - `POST /api/mirrors/{link}/topics/{topic}/pause|resume|promote|failover|reverse-and-start|
//!   reverse-and-pause`: store a mirror command (`strait mirror pause|...`) for a running
//!   instance to carry out; 202, or 409 once the mirror ended (and for a reversal with no mirror
//!   flow in the other direction selecting the topic). Body empty or `{}`.
//! - `POST /api/mirrors/{link}/configure`: a link's consumer offset sync (`strait mirror
//!   configure`); body `{"consumer_offset_group_filters":{..},"consumer_offset_sync_ms":N,
//!   "consumer_offset_sync_enable":true}` (at least one); 202.
//!
//! Off (404) unless `[http] write_token` is set; a write carries that token as
//! `Authorization: Bearer TOKEN` (none: 401, another: 403). Each authorized write logs one
//! audit line (target `strait::audit`: endpoint, flow, change, caller address, status; never a
//! token). Bad input: 400 `{"error":..,"field":..}`; unknown flow or group: 404; a conflict with
//! the current state: 409; a refused change stores nothing.

use std::net::SocketAddr;
use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::http::{Request, Response};
use crate::config::Config;
use crate::mirror::MirrorAction;
use crate::replicate::admin::{self, AdminError, LinkChange, ListChange};
use crate::replicate::lists::ListKind;
use crate::secret::Secret;

/// Largest request body a write accepts.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// What the write API needs: its token and the configuration (to reach the clusters).
pub struct WriteApi {
    token: Secret,
    config: Arc<Config>,
}

/// Which write a path names.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Write {
    Lists(String, ListKind),
    Pause(String, bool),
    Failover(String),
    Mirror(String, String, MirrorAction),
    Configure(String),
}

/// The write a path names, if any (`/api/flows/{flow}/topics|groups|failover`).
fn parse(path: &str) -> Option<Write> {
    let path = path.trim_end_matches('/');
    if let Some(rest) = path.strip_prefix("/api/mirrors/") {
        if let Some(link) = rest.strip_suffix("/configure") {
            if link.is_empty() || link.contains('/') {
                return None;
            }
            return Some(Write::Configure(link.to_string()));
        }
        let (rest, verb) = rest.rsplit_once('/')?;
        let (link, topic) = rest.rsplit_once("/topics/")?;
        let action = match verb {
            "pause" => MirrorAction::Pause,
            "resume" => MirrorAction::Resume,
            "promote" => MirrorAction::Promote,
            "failover" => MirrorAction::Failover,
            "reverse-and-start" => MirrorAction::ReverseAndStart,
            "reverse-and-pause" => MirrorAction::ReverseAndPause,
            _ => return None,
        };
        if link.is_empty() || topic.is_empty() || topic.contains('/') {
            return None;
        }
        return Some(Write::Mirror(link.to_string(), topic.to_string(), action));
    }
    let rest = path.strip_prefix("/api/flows/")?;
    let (flow, verb) = rest.rsplit_once('/')?;
    if flow.is_empty() {
        return None;
    }
    let flow = flow.to_string();
    match verb {
        "topics" => Some(Write::Lists(flow, ListKind::Topics)),
        "groups" => Some(Write::Lists(flow, ListKind::Groups)),
        "failover" => Some(Write::Failover(flow)),
        "pause" => Some(Write::Pause(flow, true)),
        "resume" => Some(Write::Pause(flow, false)),
        _ => None,
    }
}

/// Whether `path` is a write route (answered only to `POST`).
pub fn is_write_path(path: &str) -> bool {
    parse(path).is_some()
}

/// A 400 naming `field`.
fn bad(field: &str, message: &str) -> Response {
    Response::json(400, &json!({ "error": message, "field": field }))
}

fn admin_error(e: AdminError) -> Response {
    match e {
        AdminError::BadInput { field, message } => bad(field, &message),
        AdminError::NotFound(m) => Response::error(404, &m),
        AdminError::Conflict(m) => Response::error(409, &m),
        AdminError::Failed(e) => Response::error(502, &e.to_string()),
    }
}

/// The JSON object of a body (`{}` when empty), or a 400.
fn object(body: &[u8]) -> Result<Map<String, Value>, Response> {
    if body.iter().all(|b| b.is_ascii_whitespace()) {
        return Ok(Map::new());
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(bad("body", "the body must be a JSON object")),
        Err(e) => Err(bad("body", &format!("not JSON: {e}"))),
    }
}

/// Rejects fields other than `known`.
fn only(m: &Map<String, Value>, known: &[&str]) -> Result<(), Response> {
    match m.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => Err(bad(
            k,
            &format!("unknown field (known: {})", known.join(", ")),
        )),
        None => Ok(()),
    }
}

fn strings(m: &Map<String, Value>, field: &str) -> Result<Vec<String>, Response> {
    match m.get(field) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| match v {
                Value::String(s) if !s.is_empty() => Ok(s.clone()),
                _ => Err(bad(
                    field,
                    "every entry must be a non-empty string (a regex)",
                )),
            })
            .collect(),
        Some(_) => Err(bad(field, "must be an array of strings")),
    }
}

/// The list change of a body.
fn list_change(body: &[u8]) -> Result<ListChange, Response> {
    let m = object(body)?;
    only(&m, &["add", "remove", "add_exclude", "remove_exclude"])?;
    Ok(ListChange {
        add: strings(&m, "add")?,
        remove: strings(&m, "remove")?,
        add_exclude: strings(&m, "add_exclude")?,
        remove_exclude: strings(&m, "remove_exclude")?,
    })
}

/// The link settings change of a configure body.
fn link_change(body: &[u8]) -> Result<LinkChange, Response> {
    const FILTERS: &str = "consumer_offset_group_filters";
    const MS: &str = "consumer_offset_sync_ms";
    const ENABLE: &str = "consumer_offset_sync_enable";
    let m = object(body)?;
    only(&m, &[FILTERS, MS, ENABLE])?;
    let group_filters = match m.get(FILTERS) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(v @ Value::Object(_)) => Some(v.to_string()),
        Some(_) => return Err(bad(FILTERS, "must be a JSON object or its text")),
    };
    let sync_ms = match m.get(MS) {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_u64()
                .ok_or_else(|| bad(MS, "must be a whole number of milliseconds"))?,
        ),
    };
    let enable = match m.get(ENABLE) {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return Err(bad(ENABLE, "must be true or false")),
    };
    Ok(LinkChange {
        group_filters,
        sync_ms,
        enable,
    })
}

/// The reason of a pause body (`resume` takes no field).
fn pause_input(body: &[u8], paused: bool) -> Result<Option<String>, Response> {
    let m = object(body)?;
    if !paused {
        only(&m, &[])?;
        return Ok(None);
    }
    only(&m, &["reason"])?;
    match m.get("reason") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(r)) => Ok(Some(r.clone())),
        Some(_) => Err(bad("reason", "must be a string")),
    }
}

/// The group and dry-run flag of a failover body.
fn failover_input(body: &[u8]) -> Result<(String, bool), Response> {
    let m = object(body)?;
    only(&m, &["group", "dry_run"])?;
    let group = match m.get("group") {
        Some(Value::String(g)) if !g.is_empty() => g.clone(),
        Some(_) => return Err(bad("group", "must be a non-empty string")),
        None => return Err(bad("group", "required: the consumer group to fail over")),
    };
    let dry_run = match m.get("dry_run") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(bad("dry_run", "must be true or false")),
    };
    Ok((group, dry_run))
}

impl WriteApi {
    /// A write API over `config`, open to requests carrying `token`.
    pub fn new(token: Secret, config: Arc<Config>) -> WriteApi {
        WriteApi { token, config }
    }

    /// Checks the write token: `Err` carries the 401 or 403 to send.
    pub fn authorize(&self, req: &Request) -> Result<(), Response> {
        match req.header("authorization") {
            None => Err(Response::error(
                401,
                "the write API needs its token: Authorization: Bearer WRITE_TOKEN",
            )),
            Some(h) if crate::tls::bearer_token_matches(Some(h), &self.token) => Ok(()),
            Some(_) => Err(Response::error(
                403,
                "this token may not write: the write API takes [http] write_token",
            )),
        }
    }

    /// The flow `source->target` named `flow`.
    fn flow<'a>(&self, flow: &'a str) -> Result<(&'a str, &'a str), Response> {
        flow.split_once("->")
            .filter(|_| self.config.flows.iter().any(|f| f.name() == flow))
            .ok_or_else(|| {
                let known: Vec<String> = self.config.flows.iter().map(|f| f.name()).collect();
                Response::error(
                    404,
                    &format!("no flow named {flow:?} (flows: {})", known.join(", ")),
                )
            })
    }

    /// Carries out an authorized write (`req` is a `POST` to a write path) and logs its audit
    /// line.
    pub async fn handle(&self, req: &Request, body: &[u8], peer: Option<SocketAddr>) -> Response {
        let Some(write) = parse(&req.path) else {
            return Response::error(404, &format!("no such resource: {}", req.path));
        };
        let (flow, change, response) = match &write {
            Write::Lists(flow, kind) => {
                let r = self.lists(flow, *kind, body).await;
                (flow.clone(), r.0, r.1)
            }
            Write::Pause(flow, paused) => {
                let r = self.pause(flow, *paused, body).await;
                (flow.clone(), r.0, r.1)
            }
            Write::Failover(flow) => {
                let r = self.failover(flow, body).await;
                (flow.clone(), r.0, r.1)
            }
            Write::Configure(link) => {
                let r = self.configure(link, body).await;
                (link.clone(), r.0, r.1)
            }
            Write::Mirror(link, topic, action) => {
                let r = self.mirror(link, topic, *action, body).await;
                (link.clone(), r.0, r.1)
            }
        };
        let peer = peer.map_or_else(|| "-".to_string(), |p| p.to_string());
        tracing::info!(
            target: "strait::audit",
            endpoint = %format!("POST {}", req.path),
            flow = %flow,
            change = %change,
            caller = %peer,
            status = response.status,
            "write API"
        );
        response
    }

    async fn lists(&self, flow: &str, kind: ListKind, body: &[u8]) -> (String, Response) {
        let change = match list_change(body) {
            Ok(c) => c,
            Err(r) => return ("-".into(), r),
        };
        let text = serde_json::to_string(&change).unwrap_or_default();
        let (source, target) = match self.flow(flow) {
            Ok(st) => st,
            Err(r) => return (text, r),
        };
        let answer = match admin::change_lists(&self.config, kind, source, target, &change).await {
            Ok(out) => Response::json(
                200,
                &json!({
                    "flow": flow,
                    "list": match kind { ListKind::Topics => "topics", ListKind::Groups => "groups" },
                    "changed": out.changed,
                    "include": out.lists.include,
                    "exclude": out.lists.exclude,
                }),
            ),
            Err(e) => admin_error(e),
        };
        (text, answer)
    }

    async fn pause(&self, flow: &str, paused: bool, body: &[u8]) -> (String, Response) {
        let reason = match pause_input(body, paused) {
            Ok(r) => r,
            Err(r) => return ("-".into(), r),
        };
        let text = json!({ "paused": paused, "reason": reason }).to_string();
        let (source, target) = match self.flow(flow) {
            Ok(st) => st,
            Err(r) => return (text, r),
        };
        let answer = match admin::pause_flow(&self.config, source, target, paused, reason).await {
            Ok(out) => Response::json(
                200,
                &json!({
                    "flow": flow,
                    "paused": out.record.paused,
                    "changed": out.changed,
                    "changed_ms": out.record.changed_ms,
                    "reason": out.record.reason,
                }),
            ),
            Err(e) => admin_error(e),
        };
        (text, answer)
    }

    async fn mirror(
        &self,
        link: &str,
        topic: &str,
        action: MirrorAction,
        body: &[u8],
    ) -> (String, Response) {
        let text = json!({ "topic": topic, "action": action.as_str() }).to_string();
        if let Err(r) = object(body).and_then(|m| only(&m, &[])) {
            return (text, r);
        }
        let answer = match admin::mirror_command(&self.config, Some(link), topic, action).await {
            Ok(sent) => Response::json(
                202,
                &json!({
                    "link": sent.flow.link_name(),
                    "topic": topic,
                    "action": action.as_str(),
                    "state": sent.record.state.as_str(),
                    "command_at_ms": sent.command.at_ms,
                }),
            ),
            Err(e) => admin_error(e),
        };
        (text, answer)
    }

    async fn configure(&self, link: &str, body: &[u8]) -> (String, Response) {
        let change = match link_change(body) {
            Ok(c) => c,
            Err(r) => return ("-".into(), r),
        };
        let text = json!({
            "consumer_offset_group_filters": change.group_filters,
            "consumer_offset_sync_ms": change.sync_ms,
            "consumer_offset_sync_enable": change.enable,
        })
        .to_string();
        let answer = match admin::configure_link(&self.config, Some(link), &change).await {
            Ok(sent) => {
                let (enable, every, filters) =
                    crate::replicate::mirrors::effective(sent.flow, Some(&sent.settings));
                Response::json(
                    202,
                    &json!({
                        "link": sent.flow.link_name(),
                        "version": sent.settings.version,
                        "consumer_offset_sync_enable": enable,
                        "consumer_offset_sync_ms": every.as_millis() as u64,
                        "consumer_offset_group_filters": serde_json::from_str::<Value>(&filters.to_json()).unwrap_or(Value::Null),
                    }),
                )
            }
            Err(e) => admin_error(e),
        };
        (text, answer)
    }

    async fn failover(&self, flow: &str, body: &[u8]) -> (String, Response) {
        let (group, dry_run) = match failover_input(body) {
            Ok(x) => x,
            Err(r) => return ("-".into(), r),
        };
        let text = json!({ "group": group, "dry_run": dry_run }).to_string();
        let (source, target) = match self.flow(flow) {
            Ok(st) => st,
            Err(r) => return (text, r),
        };
        let answer =
            match admin::failover_group(&self.config, source, target, &group, dry_run).await {
                Ok(offsets) => Response::json(
                    200,
                    &json!({
                        "flow": flow,
                        "group": group,
                        "dry_run": dry_run,
                        "committed": !dry_run,
                        "offsets": offsets,
                    }),
                ),
                Err(e) => admin_error(e),
            };
        (text, answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_bodies() {
        assert_eq!(
            parse("/api/flows/a->b/topics"),
            Some(Write::Lists("a->b".into(), ListKind::Topics))
        );
        assert_eq!(
            parse("/api/flows/a->b/failover/"),
            Some(Write::Failover("a->b".into()))
        );
        assert_eq!(parse("/api/flows/a->b"), None);
        assert_eq!(
            parse("/api/flows/a->b/pause"),
            Some(Write::Pause("a->b".into(), true))
        );
        assert_eq!(
            parse("/api/flows/a->b/resume"),
            Some(Write::Pause("a->b".into(), false))
        );
        assert_eq!(
            parse("/api/mirrors/west-link/topics/orders/promote"),
            Some(Write::Mirror(
                "west-link".into(),
                "orders".into(),
                MirrorAction::Promote
            ))
        );
        assert_eq!(parse("/api/mirrors/west-link/topics/orders/nap"), None);
        assert_eq!(
            parse("/api/mirrors/west-link/configure"),
            Some(Write::Configure("west-link".into()))
        );
        assert_eq!(parse("/api/mirrors/west-link/orders/pause"), None);
        assert_eq!(parse("/api/flows//topics"), None);
        let c = list_change(br#"{"add":["x.*"],"remove_exclude":["y"]}"#).unwrap();
        assert_eq!(c.add, vec!["x.*".to_string()]);
        assert_eq!(list_change(b"").unwrap(), ListChange::default());
        let field = |r: Response| {
            let v: Value = serde_json::from_slice(&r.body).unwrap();
            assert_eq!(r.status, 400);
            v["field"].as_str().unwrap().to_string()
        };
        assert_eq!(field(list_change(br#"{"add":"x"}"#).unwrap_err()), "add");
        assert_eq!(field(list_change(br#"{"adds":[]}"#).unwrap_err()), "adds");
        assert_eq!(field(list_change(b"[1]").unwrap_err()), "body");
        assert_eq!(field(list_change(b"{").unwrap_err()), "body");
        assert_eq!(
            field(link_change(br#"{"consumer_offset_sync_ms":-1}"#).unwrap_err()),
            "consumer_offset_sync_ms"
        );
        assert_eq!(field(failover_input(b"{}").unwrap_err()), "group");
        assert_eq!(
            field(failover_input(br#"{"group":"g","dry_run":"yes"}"#).unwrap_err()),
            "dry_run"
        );
        assert_eq!(
            field(pause_input(br#"{"reason":1}"#, true).unwrap_err()),
            "reason"
        );
        assert_eq!(
            field(pause_input(br#"{"reason":"x"}"#, false).unwrap_err()),
            "reason"
        );
        assert_eq!(
            pause_input(br#"{"reason":"upgrade"}"#, true).unwrap(),
            Some("upgrade".to_string())
        );
        assert_eq!(
            failover_input(br#"{"group":"g","dry_run":true}"#).unwrap(),
            ("g".to_string(), true)
        );
    }
}
