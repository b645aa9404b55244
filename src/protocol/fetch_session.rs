//! Fetch sessions (KIP-227), client side, sans-io: with many partitions, a Fetch request lists
//! only the partitions whose position or limits changed since the last request, and the
//! partitions dropped from the session, instead of every partition every time.
//!
//! Apache Kafka's rules (FetchRequest v7+): a full request with `session_id = 0` and
//! `session_epoch = 0` asks the broker to open a session; a response with a non-zero
//! `session_id` opened it, and the next request is incremental with that id and epoch 1, then 2,
//! ... (wrapping from `i32::MAX` to 1). An incremental request carries the partitions that are
//! new or changed (fetch offset, leader epoch, max bytes) and lists the removed ones as
//! forgotten; the broker answers only partitions with data or news. A response with session id 0
//! to a full request means the broker keeps no session: every request stays full (and asks
//! again). `FETCH_SESSION_ID_NOT_FOUND`, `INVALID_FETCH_SESSION_EPOCH` or any other top-level
//! error, or a lost answer, start over with a full request. Versions before 7 have no sessions:
//! requests are sessionless (`session_epoch = -1`).
//!
//! From v13 a session holds partitions by topic id (forgotten ones are named by id too), and a
//! broker refuses a request whose version names topics otherwise than its session does
//! (`FETCH_SESSION_TOPIC_ID_ERROR`): a request of the other kind closes the session and opens
//! a new one with a full request. The session keeps the names of the topic ids it asked for,
//! so an answer by id is named back ([`FetchSession::name_topics`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use kafka_protocol::messages::fetch_request::ForgottenTopic;
use kafka_protocol::messages::{FetchRequest, TopicName};
use kafka_protocol::protocol::StrBytes;

use super::error_code;
use super::fetch::{
    self, FetchLimits, FetchPartitionSpec, FetchResponse, TopicNames, MIN_TOPIC_ID_VERSION,
};

/// Session id meaning "no session".
pub(crate) const NO_SESSION: i32 = 0;
/// Epoch of a full request that opens a session.
pub(crate) const INITIAL_EPOCH: i32 = 0;
/// Epoch of a sessionless request.
pub const SESSIONLESS_EPOCH: i32 = -1;
/// First Fetch version with sessions.
pub(crate) const MIN_SESSION_VERSION: i16 = 7;

/// What the broker's session holds for one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Held {
    offset: i64,
    current_leader_epoch: i32,
    last_fetched_epoch: i32,
    max_bytes: i32,
}

impl From<&FetchPartitionSpec> for Held {
    fn from(p: &FetchPartitionSpec) -> Held {
        Held {
            offset: p.offset,
            current_leader_epoch: p.current_leader_epoch,
            last_fetched_epoch: p.last_fetched_epoch,
            max_bytes: p.max_bytes,
        }
    }
}

/// A partition in a session: topic name, topic id (zero in a session by name: there a
/// partition is its name and index, as the broker holds it) and index.
type Key = (Arc<str>, [u8; 16], i32);

type Parts = BTreeMap<Key, Held>;

/// `p`'s key in a session by id (`by_id`) or by name.
fn key(p: &FetchPartitionSpec, by_id: bool) -> Key {
    let id = if by_id { p.topic_id } else { None };
    (Arc::clone(&p.topic), id.unwrap_or_default(), p.partition)
}

/// What the request in flight asked for.
#[derive(Debug, Clone)]
enum Asked {
    /// A full request: its partitions in request order. They become the session's only if the
    /// broker opens one, so a broker that keeps no sessions costs no map per request.
    Full(Vec<(Key, Held)>),
    /// An incremental request: the partitions the session holds once it is answered.
    Incremental(Parts),
    /// An incremental request for the partitions the session holds, nothing forgotten: the
    /// ones whose position or limits it changes (an idle flow's request changes none, and
    /// costs no copy of the session's map).
    Changes(Vec<(Key, Held)>),
}

/// The client side of one fetch session with one broker. One request at a time: build it with
/// [`FetchSession::request`], then report its outcome with [`FetchSession::on_response`] or
/// [`FetchSession::on_failure`].
#[derive(Debug, Clone, Default)]
pub struct FetchSession {
    id: i32,
    epoch: i32,
    /// The session names topics by id (v13+).
    by_id: bool,
    /// The partitions the broker's session holds, as last acknowledged.
    held: Parts,
    /// What the request in flight asked for.
    in_flight: Option<Asked>,
    /// The names of the topic ids asked for since the session started.
    names: TopicNames,
}

impl FetchSession {
    /// No session yet: the first request is full and asks for one.
    pub fn new() -> FetchSession {
        FetchSession::default()
    }

    /// The session id (0 without a session).
    pub fn id(&self) -> i32 {
        self.id
    }

    /// The epoch the next request carries.
    pub fn epoch(&self) -> i32 {
        self.epoch
    }

    /// The request fetching `wanted` at Fetch `version`: full, incremental, or (before v7)
    /// sessionless. From v13 every partition of `wanted` needs its topic id (see
    /// [`fetch::version_for`]).
    pub fn request(
        &mut self,
        wanted: &[FetchPartitionSpec],
        limits: &FetchLimits,
        version: i16,
    ) -> FetchRequest {
        let by_id = version >= MIN_TOPIC_ID_VERSION;
        let mut closing = NO_SESSION;
        if self.id != NO_SESSION && self.by_id != by_id {
            // The broker's session names topics the other way: a full request closes it.
            closing = self.id;
            self.reset();
        }
        if by_id {
            for p in wanted {
                if let Some(id) = p.topic_id {
                    self.names.entry(id).or_insert_with(|| Arc::clone(&p.topic));
                }
            }
        }
        if version < MIN_SESSION_VERSION {
            self.in_flight = None;
            return fetch::request(wanted, limits);
        }
        if self.id == NO_SESSION {
            let mut req = fetch::request(wanted, limits);
            req.session_id = closing;
            req.session_epoch = INITIAL_EPOCH;
            self.by_id = by_id;
            let asked = wanted.iter().map(|p| (key(p, by_id), Held::from(p)));
            self.in_flight = Some(Asked::Full(asked.collect()));
            return req;
        }
        self.incremental(wanted, limits)
    }

    /// An incremental request of the open session for `wanted`.
    fn incremental(&mut self, wanted: &[FetchPartitionSpec], limits: &FetchLimits) -> FetchRequest {
        let by_id = self.by_id;
        let (mut changed, mut all_held) = (Vec::new(), wanted.len() == self.held.len());
        for p in wanted {
            match self.held.get(&key(p, by_id)) {
                Some(h) if *h == Held::from(p) => {}
                Some(_) => changed.push(p.clone()),
                None => {
                    changed.push(p.clone());
                    all_held = false;
                }
            }
        }
        let mut req = fetch::request(&changed, limits);
        req.session_id = self.id;
        req.session_epoch = self.epoch;
        if all_held {
            // The same partitions as the session's (no duplicates in `wanted`): none forgotten.
            let changes = changed
                .iter()
                .map(|p| (key(p, by_id), Held::from(p)))
                .collect();
            self.in_flight = Some(Asked::Changes(changes));
            return req;
        }
        let next: Parts = wanted
            .iter()
            .map(|p| (key(p, by_id), Held::from(p)))
            .collect();
        let mut forgotten: Vec<ForgottenTopic> = Vec::new();
        for k @ (topic, id, partition) in self.held.keys() {
            if next.contains_key(k) {
                continue;
            }
            let topic_id = fetch::uuid(Some(*id));
            match forgotten.last_mut() {
                Some(f) if f.topic.0.as_str() == &**topic && f.topic_id == topic_id => {
                    f.partitions.push(*partition)
                }
                _ => {
                    let mut f = ForgottenTopic::default();
                    f.topic = TopicName(StrBytes::from_string(topic.to_string()));
                    f.topic_id = topic_id;
                    f.partitions.push(*partition);
                    forgotten.push(f);
                }
            }
        }
        req.forgotten_topics_data = forgotten;
        self.in_flight = Some(Asked::Incremental(next));
        req
    }

    /// Names the partitions of an answer by topic id (v13+) with the names of the ids asked
    /// for; returns how many partitions were dropped for an id never asked for.
    pub fn name_topics(&self, resp: &mut FetchResponse) -> usize {
        fetch::name_topics(resp, &self.names)
    }

    /// Takes in the answer to the last request.
    pub fn on_response(&mut self, resp: &FetchResponse) {
        let Some(asked) = self.in_flight.take() else {
            return; // sessionless
        };
        if resp.error_code != error_code::NONE {
            // FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH or anything else: start
            // over with a full request.
            self.reset();
            return;
        }
        let next = match asked {
            Asked::Full(_) if resp.session_id == NO_SESSION => {
                self.reset(); // the broker keeps no session; ask again next time
                return;
            }
            Asked::Full(parts) => {
                self.id = resp.session_id;
                self.epoch = 1;
                self.held = parts.into_iter().collect();
                return;
            }
            Asked::Incremental(next) => Ok(next),
            Asked::Changes(changes) => Err(changes),
        };
        if resp.session_id != self.id {
            self.reset();
            return;
        }
        self.epoch = if self.epoch == i32::MAX {
            1
        } else {
            self.epoch + 1
        };
        match next {
            Ok(next) => self.held = next,
            Err(changes) => self.held.extend(changes),
        }
    }

    /// The last request got no answer: start over with a full request.
    pub fn on_failure(&mut self) {
        if self.in_flight.take().is_some() {
            self.reset();
        }
    }

    fn reset(&mut self) {
        self.id = NO_SESSION;
        self.epoch = INITIAL_EPOCH;
        self.held.clear();
        self.names.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(topic: &str, partition: i32, offset: i64) -> FetchPartitionSpec {
        FetchPartitionSpec {
            topic: topic.into(),
            topic_id: None,
            partition,
            offset,
            current_leader_epoch: 3,
            last_fetched_epoch: -1,
            max_bytes: 1 << 20,
        }
    }

    fn answer(session_id: i32, error_code: i16) -> FetchResponse {
        FetchResponse {
            error_code,
            session_id,
            partitions: Vec::new(),
        }
    }

    fn listed(req: &FetchRequest) -> Vec<(String, i32, i64)> {
        req.topics
            .iter()
            .flat_map(|t| {
                t.partitions
                    .iter()
                    .map(|p| (t.topic.0.to_string(), p.partition, p.fetch_offset))
            })
            .collect()
    }

    fn forgotten(req: &FetchRequest) -> Vec<(String, i32)> {
        req.forgotten_topics_data
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| (t.topic.0.to_string(), *p)))
            .collect()
    }

    #[test]
    fn full_then_incremental_with_only_changes_and_forgotten_partitions() {
        let l = FetchLimits::default();
        let mut s = FetchSession::new();
        let all = [spec("a", 0, 10), spec("a", 1, 20), spec("b", 0, 5)];
        let r = s.request(&all, &l, 12);
        assert_eq!((r.session_id, r.session_epoch), (0, 0));
        assert_eq!(listed(&r).len(), 3);
        s.on_response(&answer(77, 0));
        assert_eq!((s.id(), s.epoch()), (77, 1));

        // a/0 moved on, b/0 is no longer wanted, a/1 unchanged.
        let r = s.request(&[spec("a", 0, 15), spec("a", 1, 20)], &l, 12);
        assert_eq!((r.session_id, r.session_epoch), (77, 1));
        assert_eq!(listed(&r), vec![("a".to_string(), 0, 15)]);
        assert_eq!(forgotten(&r), vec![("b".to_string(), 0)]);
        s.on_response(&answer(77, 0));
        assert_eq!(s.epoch(), 2);

        // Nothing changed: an empty incremental request.
        let r = s.request(&[spec("a", 0, 15), spec("a", 1, 20)], &l, 12);
        assert!(listed(&r).is_empty() && forgotten(&r).is_empty());
        assert_eq!(r.session_epoch, 2);
        s.on_response(&answer(77, 0));

        // b/0 comes back: added again.
        let r = s.request(
            &[spec("a", 0, 15), spec("a", 1, 20), spec("b", 0, 9)],
            &l,
            12,
        );
        assert_eq!(listed(&r), vec![("b".to_string(), 0, 9)]);
        assert_eq!(r.session_epoch, 3);
    }

    #[test]
    fn the_same_partitions_send_only_what_moved_and_the_session_keeps_it() {
        let l = FetchLimits::default();
        let mut s = FetchSession::new();
        let mut all: Vec<_> = (0..100).map(|p| spec("a", p, 10)).collect();
        s.request(&all, &l, 12);
        s.on_response(&answer(4, 0));
        all[7].offset = 12;
        let r = s.request(&all, &l, 12);
        assert_eq!(listed(&r), vec![("a".to_string(), 7, 12)]);
        assert!(forgotten(&r).is_empty());
        s.on_response(&answer(4, 0));
        assert_eq!(s.epoch(), 2);
        let r = s.request(&all, &l, 12);
        assert!(listed(&r).is_empty(), "the change is held once answered");
        s.on_response(&answer(4, 0));

        // A change whose answer is an error is not held: full again.
        all[8].offset = 13;
        s.request(&all, &l, 12);
        s.on_response(&answer(4, error_code::INVALID_FETCH_SESSION_EPOCH));
        assert_eq!(listed(&s.request(&all, &l, 12)).len(), 100);

        // The same number of partitions, one swapped for another: added and forgotten.
        s.on_response(&answer(5, 0));
        all[0] = spec("b", 0, 1);
        let r = s.request(&all, &l, 12);
        assert_eq!(listed(&r), vec![("b".to_string(), 0, 1)]);
        assert_eq!(forgotten(&r), vec![("a".to_string(), 0)]);
    }

    #[test]
    fn a_changed_limit_or_leader_epoch_is_sent_again() {
        let l = FetchLimits::default();
        let mut s = FetchSession::new();
        s.request(&[spec("a", 0, 10)], &l, 12);
        s.on_response(&answer(5, 0));
        let mut p = spec("a", 0, 10);
        p.max_bytes = 4096;
        assert_eq!(listed(&s.request(&[p.clone()], &l, 12)).len(), 1);
        s.on_response(&answer(5, 0));
        p.current_leader_epoch = 4;
        assert_eq!(listed(&s.request(&[p], &l, 12)).len(), 1);
    }

    #[test]
    fn errors_lost_answers_and_wrong_ids_start_over() {
        let l = FetchLimits::default();
        for bad in [
            answer(9, error_code::FETCH_SESSION_ID_NOT_FOUND),
            answer(9, error_code::INVALID_FETCH_SESSION_EPOCH),
            answer(10, 0),
        ] {
            let mut s = FetchSession::new();
            s.request(&[spec("a", 0, 1)], &l, 12);
            s.on_response(&answer(9, 0));
            s.request(&[spec("a", 0, 2)], &l, 12);
            s.on_response(&bad);
            assert_eq!((s.id(), s.epoch()), (0, 0));
            let r = s.request(&[spec("a", 0, 2)], &l, 12);
            assert_eq!((r.session_id, r.session_epoch), (0, 0));
            assert_eq!(listed(&r).len(), 1, "full again");
        }
        let mut s = FetchSession::new();
        s.request(&[spec("a", 0, 1)], &l, 12);
        s.on_response(&answer(9, 0));
        s.request(&[spec("a", 0, 2)], &l, 12);
        s.on_failure();
        assert_eq!((s.id(), s.epoch()), (0, 0));
    }

    #[test]
    fn a_broker_without_sessions_gets_full_requests_and_old_versions_none() {
        let l = FetchLimits::default();
        let mut s = FetchSession::new();
        for _ in 0..3 {
            let r = s.request(&[spec("a", 0, 1)], &l, 12);
            assert_eq!((r.session_id, r.session_epoch), (0, 0));
            s.on_response(&answer(0, 0));
        }
        let r = s.request(&[spec("a", 0, 1)], &l, 6);
        assert_eq!((r.session_id, r.session_epoch), (0, -1));
        s.on_response(&answer(0, 0));
        assert_eq!((s.id(), s.epoch()), (0, 0));
    }

    #[test]
    fn epoch_wraps_to_one() {
        let l = FetchLimits::default();
        let mut s = FetchSession::new();
        s.request(&[spec("a", 0, 1)], &l, 12);
        s.on_response(&answer(3, 0));
        s.epoch = i32::MAX;
        s.request(&[spec("a", 0, 1)], &l, 12);
        s.on_response(&answer(3, 0));
        assert_eq!(s.epoch(), 1);
    }
}
