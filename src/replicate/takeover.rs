//! Taking a partition over from MirrorMaker 2 (`takeover_from = "mm2"`) without copying again
//! what it copied, and without losing or duplicating a record at the switch.
//!
//! What MirrorMaker 2 leaves behind (Apache Kafka's `MirrorSourceTask` and `MirrorUtils`):
//! - its source connector's offsets, in the Connect offsets topic of the target
//!   (`mm2-offsets.<source>.internal` in dedicated mode), keyed
//!   `["<connector>",{"cluster":"<source>","partition":N,"topic":"<t>"}]` with the value
//!   `{"offset":N}`. The offset is that of the **last record replicated**: on start MirrorMaker 2
//!   seeks its consumer to `offset + 1`. It is committed every `offset.flush.interval.ms`, after
//!   the producer acknowledged the records up to it.
//! - the records it wrote to the remote partition, one per source record its consumer returned
//!   (read uncommitted: aborted transactional records too, never control records), with the
//!   source record's key, value, headers and timestamp.
//!
//! MirrorMaker 2 is at-least-once: after a crash, or between its last offset commit and its stop,
//! the remote partition holds copies of records after the committed offset. Where it really got
//! to is found by content: the remote partition must end with copies of the source records from
//! the committed one on (`O`, `O+1`, ... up to where it stopped), so the last records of the
//! remote partition are matched against the source records from `O` (key, value, headers, and
//! the timestamp unless the target stamps its own). Each match length `L` for which the last `L`
//! remote records equal the first `L` source records from `O` is a candidate ([`overlaps`]).
//! - exactly one: strait continues after the `L`-th source record, at the remote log end;
//! - several (repeating data): MirrorMaker 2's offset syncs decide if exactly one candidate is
//!   confirmed by a sync and none contradicts it ([`choose`]); otherwise, or with no candidate at
//!   all, the partition is not taken up and a one-line error says why. Nothing is guessed.
//!
//! The offset map strait keeps from then on starts before the take-over point: the records before
//! `O` are matched one for one backwards from it (at most `takeover_map_records`), so consumer
//! groups committed in that stretch translate exactly, as they will after the switch.
//!
//! The parsing and matching are pure and unit-tested here; the whole is tested against Apache
//! Kafka and MirrorMaker 2 in `tests/mm2_takeover.rs`.

use std::collections::HashMap;

use crate::client::{Cluster, FetchRead, EARLIEST, LATEST};
use crate::error::{Error, Result};
use crate::forward::SourceOffsets;
use crate::mm2::OffsetSync;
use crate::offsets::OffsetMap;
use crate::protocol::fetch::READ_UNCOMMITTED;
use crate::records::legacy::decode_legacy;
use crate::records::record::records;
use crate::records::{split, Entry};

use super::store;

/// Source records after MirrorMaker 2's committed offset that are read and matched at most: what
/// it can have copied beyond its last offset commit.
pub const TAIL_RECORDS: i64 = 1_000_000;

/// Largest decompressed records region of one batch read during a take-over.
const DECODE_LIMIT: usize = 256 << 20;

/// Where MirrorMaker 2 got to: per source (topic, partition), the offset of the last record it
/// committed as replicated.
pub type Mm2Offsets = HashMap<(String, i32), i64>;

/// The source partition a key of MirrorMaker 2's offsets topic names, if it is a source
/// connector's key for `source_alias` (other connectors' keys, such as the heartbeat
/// connector's, and other clusters' are `None`).
pub fn parse_offset_key(key: &[u8], source_alias: &str) -> Option<(String, i32)> {
    let v: serde_json::Value = serde_json::from_slice(key).ok()?;
    let [_connector, partition] = v.as_array()?.as_slice() else {
        return None;
    };
    let p = partition.as_object()?;
    if p.get("cluster")?.as_str()? != source_alias {
        return None;
    }
    let topic = p.get("topic")?.as_str()?.to_string();
    let partition = i32::try_from(p.get("partition")?.as_i64()?).ok()?;
    Some((topic, partition))
}

/// The offset of a value of MirrorMaker 2's offsets topic (`{"offset":N}`); `None` for a value
/// that is not one, and for a negative offset (MirrorMaker 2 reads those as "uncommitted").
pub fn parse_offset_value(value: &[u8]) -> Option<i64> {
    let v: serde_json::Value = serde_json::from_slice(value).ok()?;
    v.as_object()?.get("offset")?.as_i64().filter(|o| *o >= 0)
}

/// The offsets MirrorMaker 2 committed for `source_alias`'s partitions, from its offsets `topic`
/// on `target`: the latest value per key (a tombstone or a value that is no offset removes it).
/// `None` when the topic does not exist.
pub async fn read_mm2_offsets(
    target: &Cluster,
    topic: &str,
    source_alias: &str,
) -> Result<Option<Mm2Offsets>> {
    let Some(meta) = target.topic(topic).await? else {
        return Ok(None);
    };
    let mut out = Mm2Offsets::new();
    for p in &meta.partitions {
        let mut latest: HashMap<(String, i32), Option<i64>> = HashMap::new();
        for (_, _, key, value) in store::read_all(target, topic, p.partition).await? {
            let Some(sp) = key.and_then(|k| parse_offset_key(&k, source_alias)) else {
                continue;
            };
            latest.insert(sp, value.as_deref().and_then(parse_offset_value));
        }
        // One key always lands in one partition; should two connectors both have an offset for
        // a source partition, the furthest counts (it is checked against the target anyway).
        for (sp, offset) in latest {
            if let Some(o) = offset {
                let e = out.entry(sp).or_insert(o);
                *e = (*e).max(o);
            }
        }
    }
    Ok(Some(out))
}

/// What is compared of a record: a 128-bit digest of its key, value and headers (nulls told
/// apart from empty), and its timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Print {
    /// SHA-256 of the key, value and headers, truncated.
    pub content: u128,
    /// The timestamp as a consumer sees it (the batch's for LogAppendTime).
    pub timestamp: i64,
}

impl Print {
    /// The print of one record.
    pub fn of(
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[(&[u8], Option<&[u8]>)],
        timestamp: i64,
    ) -> Print {
        let mut d = ring::digest::Context::new(&ring::digest::SHA256);
        let mut field = |b: Option<&[u8]>| match b {
            None => d.update(&[0]),
            Some(b) => {
                d.update(&[1]);
                d.update(&(b.len() as u64).to_be_bytes());
                d.update(b);
            }
        };
        field(key);
        field(value);
        field(Some(&(headers.len() as u64).to_be_bytes()));
        for (k, v) in headers {
            field(Some(k));
            field(*v);
        }
        let digest = d.finish();
        let mut first = [0u8; 16];
        first.copy_from_slice(&digest.as_ref()[..16]);
        Print {
            content: u128::from_be_bytes(first),
            timestamp,
        }
    }

    /// The value compared: the content, with the timestamp mixed in when `with_time`.
    pub fn key(self, with_time: bool) -> u128 {
        if !with_time {
            return self.content;
        }
        // An odd multiplier is a bijection of u128: distinct timestamps stay distinct.
        let t =
            (self.timestamp as u64 as u128).wrapping_mul(0x9E37_79B9_7F4A_7C15_F39C_C060_5CED_C835);
        self.content ^ t
    }
}

/// Every length `L >= 1` for which the last `L` items of `text` equal the first `L` items of
/// `pattern`, longest first (Knuth-Morris-Pratt: linear in both lengths).
pub fn overlaps(text: &[u128], pattern: &[u128]) -> Vec<usize> {
    if pattern.is_empty() {
        return Vec::new();
    }
    // border[i]: the longest proper prefix of pattern[..=i] that is also its suffix.
    let mut border = vec![0usize; pattern.len()];
    let mut k = 0;
    for i in 1..pattern.len() {
        while k > 0 && pattern[i] != pattern[k] {
            k = border[k - 1];
        }
        if pattern[i] == pattern[k] {
            k += 1;
        }
        border[i] = k;
    }
    let mut q = 0;
    for c in text {
        while q > 0 && (q == pattern.len() || pattern[q] != *c) {
            q = border[q - 1];
        }
        if pattern[q] == *c {
            q += 1;
        }
    }
    let mut out = Vec::new();
    while q > 0 {
        out.push(q);
        q = border[q - 1];
    }
    out
}

/// How many items at the ends of `a` and `b` are equal, walking backwards from both ends.
pub fn common_suffix(a: &[u128], b: &[u128]) -> usize {
    a.iter()
        .rev()
        .zip(b.iter().rev())
        .take_while(|(x, y)| x == y)
        .count()
}

/// Picks among several match lengths with MirrorMaker 2's offset syncs `(upstream,
/// downstream)`, each a fact: the remote record at `downstream` is a copy of the source record at
/// `upstream`. A candidate `L` pairs the `i`-th source record from the committed one
/// (`pattern_offsets[i]`) with the remote record at `text_offsets[text_offsets.len() - L + i]`.
/// A sync whose remote record is one of those pairs confirms `L` if it names the same source
/// record and contradicts it otherwise; so does a sync of one of those source records that names
/// another remote record. The candidate is returned if it is the only one not contradicted and
/// a sync confirms it.
pub fn choose(
    candidates: &[usize],
    text_offsets: &[i64],
    pattern_offsets: &[i64],
    syncs: &[(i64, i64)],
) -> Option<usize> {
    let mut left = Vec::new();
    for &l in candidates {
        if l == 0 || l > text_offsets.len() || l > pattern_offsets.len() {
            continue;
        }
        let base = text_offsets.len() - l;
        let (mut confirmed, mut contradicted) = (false, false);
        for &(up, down) in syncs {
            let says = match text_offsets.binary_search(&down) {
                Ok(j) if j >= base => Some(pattern_offsets[j - base] == up),
                _ => pattern_offsets[..l]
                    .binary_search(&up)
                    .ok()
                    .map(|i| text_offsets[base + i] == down),
            };
            match says {
                Some(true) => confirmed = true,
                Some(false) => contradicted = true,
                None => {}
            }
        }
        if !contradicted {
            left.push((l, confirmed));
        }
    }
    match left.as_slice() {
        [(l, true)] => Some(*l),
        _ => None,
    }
}

/// The records of one partition in an offset range, as MirrorMaker 2's consumer saw them.
#[derive(Debug, Default)]
struct Window {
    offsets: Vec<i64>,
    prints: Vec<Print>,
    /// Some batch carried LogAppendTime.
    log_append_time: bool,
    /// Some batch was transactional.
    transactional: bool,
}

impl Window {
    fn keys(&self, with_time: bool) -> Vec<u128> {
        self.prints.iter().map(|p| p.key(with_time)).collect()
    }
}

/// What a take-over found for a partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// MirrorMaker 2 copied nothing of it: the flow's own start applies.
    Fresh,
    /// Continue with this offset map (its end is where strait goes on).
    Continue {
        /// Matched pairs, from up to `takeover_map_records` before the take-over point.
        map: OffsetMap,
        /// MirrorMaker 2's committed offset (last record replicated).
        committed: i64,
        /// Records it had copied beyond it.
        beyond: i64,
    },
    /// Not proven; why (one line).
    Unproven(String),
}

/// One partition to take over, and where to look.
#[derive(Debug, Clone, Copy)]
pub struct Partition<'a> {
    /// The source topic.
    pub topic: &'a str,
    /// Its remote topic on the target.
    pub remote: &'a str,
    /// The partition.
    pub partition: i32,
    /// MirrorMaker 2's committed offset for it, if any.
    pub committed: Option<i64>,
    /// The remote partition's log end.
    pub target_end: i64,
    /// Records before the take-over point matched into the map at most.
    pub map_records: u64,
    /// The largest Fetch answer to ask for.
    pub fetch_max_bytes: i32,
    /// MirrorMaker 2's offset-syncs topic (it wrote them on the source, or on the target).
    pub offset_syncs_topic: &'a str,
}

/// Works out where strait continues a partition MirrorMaker 2 replicated (see the module
/// documentation). `Err` only for what may pass (a cluster not answering).
pub async fn take_over(source: &Cluster, target: &Cluster, p: Partition<'_>) -> Result<Outcome> {
    let Some(committed) = p.committed else {
        if p.target_end == 0 {
            return Ok(Outcome::Fresh);
        }
        return Ok(Outcome::Unproven(format!(
            "the remote partition holds {} records but MirrorMaker 2 committed no offset for it (let it run until it commits, see offset.flush.interval.ms, and stop it cleanly)",
            p.target_end
        )));
    };
    let (topic, partition) = (p.topic, p.partition);
    let source_part = source.partition(topic, partition);
    let s_start = source_part.list_offset(EARLIEST).await?;
    let s_end = source_part.list_offset(LATEST).await?;
    if committed < s_start || committed >= s_end {
        return Ok(Outcome::Unproven(format!(
            "MirrorMaker 2's last replicated record, source offset {committed}, is not on the source partition (offsets {s_start}..{s_end})"
        )));
    }
    let t_start = target
        .partition(p.remote, partition)
        .list_offset(EARLIEST)
        .await?;
    if p.target_end <= t_start {
        return Ok(Outcome::Unproven(format!(
            "MirrorMaker 2 committed source offset {committed} but the remote partition holds no record (offsets {t_start}..{}): was it deleted or created again?",
            p.target_end
        )));
    }
    // What follows the committed record's copy on the target came from the source after it.
    let span = (s_end - committed)
        .min(p.target_end - t_start)
        .min(TAIL_RECORDS);
    let text_from = t_start.max(p.target_end - span);
    let text = read_window(target, p.remote, partition, (text_from, p.target_end), p).await?;
    if text.transactional {
        return Ok(Outcome::Unproven(format!(
            "the remote partition holds transactional batches from offset {text_from} (MirrorMaker 2 with exactly-once support), which a take-over does not handle"
        )));
    }
    let pattern = read_window(source, topic, partition, (committed, committed + span), p).await?;
    if pattern.offsets.first() != Some(&committed) {
        return Ok(Outcome::Unproven(format!(
            "source offset {committed}, MirrorMaker 2's last replicated record, holds no record"
        )));
    }
    let with_time = !text.log_append_time;
    let len = match tail_length(source, target, p, committed, (&text, &pattern), with_time).await? {
        Ok(len) => len,
        Err(why) => return Ok(Outcome::Unproven(why)),
    };
    let base = text.offsets.len() - len;
    let mut pairs: Vec<(i64, i64)> = (0..len)
        .map(|i| (pattern.offsets[i], text.offsets[base + i]))
        .collect();
    let before = matched_before(source, target, p, (s_start, t_start), pairs[0], with_time).await?;
    pairs.splice(0..0, before);
    let map =
        map_of(&pairs).map_err(|e| Error::invalid(format!("offset map of the take-over: {e}")))?;
    Ok(Outcome::Continue {
        map,
        committed,
        beyond: len as i64 - 1,
    })
}

/// How many records at the end of the remote partition (`text`) are copies of the source
/// records from the committed one on (`pattern`): the only match length, or the one MirrorMaker
/// 2's offset syncs single out; `Ok(Err(why))` when there is none.
async fn tail_length(
    source: &Cluster,
    target: &Cluster,
    p: Partition<'_>,
    committed: i64,
    (text, pattern): (&Window, &Window),
    with_time: bool,
) -> Result<std::result::Result<usize, String>> {
    let candidates = overlaps(&text.keys(with_time), &pattern.keys(with_time));
    match candidates.as_slice() {
        [] => Ok(Err(format!(
            "the remote partition does not end with copies of the source records from offset {committed} (MirrorMaker 2's last committed), as it would if MirrorMaker 2 had written it alone and in order up to its stop"
        ))),
        [one] => Ok(Ok(*one)),
        several => {
            let syncs = read_syncs(source, target, &p).await?;
            Ok(choose(several, &text.offsets, &pattern.offsets, &syncs).ok_or_else(|| {
                format!(
                    "the source records from offset {committed} repeat, so the remote partition's last records match them at {} different points ({} records copied beyond the committed offset or fewer), and MirrorMaker 2's offset syncs do not single one out",
                    several.len(),
                    several[0] - 1
                )
            }))
        }
    }
}

/// Pairs of the records before the take-over point `first` (source, target) that match one for
/// one backwards from it, at most `p.map_records`.
async fn matched_before(
    source: &Cluster,
    target: &Cluster,
    p: Partition<'_>,
    (s_start, t_start): (i64, i64),
    first: (i64, i64),
    with_time: bool,
) -> Result<Vec<(i64, i64)>> {
    let m = i64::try_from(p.map_records).unwrap_or(i64::MAX);
    if m == 0 {
        return Ok(Vec::new());
    }
    let (s, t) = first;
    let src = (s_start.max(s.saturating_sub(m)), s);
    let tgt = (t_start.max(t.saturating_sub(m)), t);
    let back_t = read_window(target, p.remote, p.partition, tgt, p).await?;
    let back_s = read_window(source, p.topic, p.partition, src, p).await?;
    let with_time = with_time && !back_t.log_append_time;
    let n = common_suffix(&back_s.keys(with_time), &back_t.keys(with_time));
    let (ls, lt) = (back_s.offsets.len(), back_t.offsets.len());
    Ok((0..n)
        .map(|i| (back_s.offsets[ls - n + i], back_t.offsets[lt - n + i]))
        .collect())
}

/// The offset map of matched (source, target) pairs in increasing order.
fn map_of(pairs: &[(i64, i64)]) -> std::result::Result<OffsetMap, crate::offsets::OffsetMapError> {
    let (s0, t0) = pairs.first().copied().unwrap_or((0, 0));
    let mut map = OffsetMap::new(s0, t0);
    for &(s, t) in pairs {
        map.record_batch(&SourceOffsets::Contiguous { first: s, count: 1 }, t)?;
    }
    Ok(map)
}

/// MirrorMaker 2's offset syncs `(upstream, downstream)` for one partition, oldest first: those
/// in its offset-syncs topic on the source (its default location) and on the target.
async fn read_syncs(
    source: &Cluster,
    target: &Cluster,
    p: &Partition<'_>,
) -> Result<Vec<(i64, i64)>> {
    let (name, topic, partition) = (p.offset_syncs_topic, p.topic, p.partition);
    let mut out = Vec::new();
    for cluster in [source, target] {
        if cluster.topic(name).await?.is_none() {
            continue;
        }
        for (_, _, k, v) in store::read_all(cluster, name, 0).await? {
            let (Some(k), Some(v)) = (k, v) else { continue };
            if let Ok(s) = OffsetSync::decode(&k, &v) {
                if s.topic == topic && s.partition == partition {
                    out.push((s.upstream_offset, s.downstream_offset));
                }
            }
        }
    }
    Ok(out)
}

/// The data records of `topic`/`partition` with offsets in `range` (control records left out,
/// as a consumer does), read uncommitted.
async fn read_window(
    cluster: &Cluster,
    topic: &str,
    partition: i32,
    range: (i64, i64),
    p: Partition<'_>,
) -> Result<Window> {
    let (from, to) = range;
    let mut w = Window::default();
    let mut offset = from;
    while offset < to {
        let at = offset;
        let ctx = |e: Error| {
            e.cluster(cluster.name())
                .partition(topic, partition)
                .offset(at)
        };
        let read = FetchRead::at(offset)
            .max_bytes(p.fetch_max_bytes)
            .isolation(READ_UNCOMMITTED);
        let fetched = cluster.partition(topic, partition).fetch_once(read).await?;
        let before = offset;
        for entry in split(fetched.records) {
            let entry = entry.map_err(|e| ctx(Error::from(e)))?;
            offset = take_entry(&mut w, entry, (from, to), offset).map_err(ctx)?;
        }
        if offset == before {
            return Err(ctx(Error::invalid(format!(
                "the log should reach offset {to} but a read returned nothing"
            ))));
        }
    }
    Ok(w)
}

/// Adds the records of one entry that fall in `range` to `w`; returns the offset after it.
fn take_entry(w: &mut Window, entry: Entry, range: (i64, i64), offset: i64) -> Result<i64> {
    let (from, to) = range;
    let mut keep = |o: i64, print: Print| {
        if o >= from && o < to {
            w.offsets.push(o);
            w.prints.push(print);
        }
    };
    match entry {
        Entry::V2(b) => {
            if b.is_control() {
                return Ok(offset.max(b.next_offset()));
            }
            w.transactional |= b.is_transactional();
            let lat = b.is_log_append_time();
            w.log_append_time |= lat;
            for r in records(&b, DECODE_LIMIT)? {
                let r = r?;
                let headers: Vec<(&[u8], Option<&[u8]>)> = r
                    .headers
                    .iter()
                    .map(|h| (h.key.as_ref(), h.value.as_deref()))
                    .collect();
                let ts = if lat {
                    b.max_timestamp()
                } else {
                    r.timestamp(b.base_timestamp())
                };
                let print = Print::of(r.key.as_deref(), r.value.as_deref(), &headers, ts);
                keep(r.offset(b.base_offset()), print);
            }
            Ok(offset.max(b.next_offset()))
        }
        Entry::Legacy(raw) => {
            let mut next = offset;
            for r in decode_legacy(&raw, DECODE_LIMIT)? {
                w.log_append_time |= r.log_append_time;
                keep(
                    r.offset,
                    Print::of(r.key.as_deref(), r.value.as_deref(), &[], r.timestamp),
                );
                next = next.max(r.offset + 1);
            }
            Ok(next)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_keys_of_the_source_connector() {
        let key = br#"["MirrorSourceConnector",{"cluster":"a","partition":3,"topic":"orders"}]"#;
        assert_eq!(parse_offset_key(key, "a"), Some(("orders".into(), 3)));
        assert_eq!(parse_offset_key(key, "b"), None, "another source cluster");
        // Java's HashMap decides the field order; any order is read.
        let key = br#"["my-mm2",{"topic":"t.x","cluster":"a","partition":0}]"#;
        assert_eq!(parse_offset_key(key, "a"), Some(("t.x".into(), 0)));
        let heartbeat =
            br#"["MirrorHeartbeatConnector",{"sourceClusterAlias":"a","targetClusterAlias":"b"}]"#;
        assert_eq!(parse_offset_key(heartbeat, "a"), None);
        for bad in [
            &b"not json"[..],
            br#"{"cluster":"a","partition":0,"topic":"t"}"#,
            br#"["c",{"cluster":"a","partition":"0","topic":"t"}]"#,
            br#"["c",{"cluster":"a","partition":4294967296,"topic":"t"}]"#,
            br#"["c",{"cluster":"a","partition":0}]"#,
            br#"["c",{"cluster":"a","partition":0,"topic":"t"},1]"#,
        ] {
            assert_eq!(
                parse_offset_key(bad, "a"),
                None,
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn offset_values() {
        assert_eq!(parse_offset_value(br#"{"offset":499}"#), Some(499));
        assert_eq!(parse_offset_value(br#"{"offset":0}"#), Some(0));
        assert_eq!(parse_offset_value(br#"{"offset":-1}"#), None, "uncommitted");
        assert_eq!(parse_offset_value(br#"{"offset":null}"#), None);
        assert_eq!(parse_offset_value(br#"{"offset":"5"}"#), None);
        assert_eq!(parse_offset_value(b"[]"), None);
        assert_eq!(parse_offset_value(b""), None);
    }

    #[test]
    fn prints_tell_fields_apart() {
        let p = |k: Option<&[u8]>, v: Option<&[u8]>, h: &[(&[u8], Option<&[u8]>)], t| {
            Print::of(k, v, h, t)
        };
        let a = p(Some(b"k"), Some(b"v"), &[], 1);
        assert_eq!(a, p(Some(b"k"), Some(b"v"), &[], 1));
        assert_ne!(a.content, p(Some(b"kv"), Some(b""), &[], 1).content);
        assert_ne!(a.content, p(Some(b"v"), Some(b"k"), &[], 1).content);
        assert_ne!(a.content, p(None, Some(b"v"), &[], 1).content);
        assert_ne!(
            p(Some(b""), None, &[], 1).content,
            p(None, Some(b""), &[], 1).content
        );
        let h = p(Some(b"k"), Some(b"v"), &[(b"h", Some(b"1"))], 1);
        assert_ne!(a.content, h.content);
        assert_ne!(
            h.content,
            p(Some(b"k"), Some(b"v"), &[(b"h", None)], 1).content
        );
        let later = p(Some(b"k"), Some(b"v"), &[], 2);
        assert_eq!(a.content, later.content);
        assert_ne!(a.key(true), later.key(true));
        assert_eq!(a.key(false), later.key(false));
    }

    #[test]
    fn overlaps_are_every_suffix_prefix_match() {
        // text ends with pattern[..3]
        assert_eq!(overlaps(&[9, 9, 1, 2, 3], &[1, 2, 3, 4, 5]), vec![3]);
        // nothing beyond the committed record: only it matches
        assert_eq!(overlaps(&[7, 8, 1], &[1, 2, 3]), vec![1]);
        assert_eq!(overlaps(&[1, 2, 3], &[4, 5]), Vec::<usize>::new());
        assert_eq!(overlaps(&[], &[1]), Vec::<usize>::new());
        assert_eq!(overlaps(&[1], &[]), Vec::<usize>::new());
        // the whole pattern, and the text longer than it
        assert_eq!(overlaps(&[5, 1, 2, 3], &[1, 2, 3]), vec![3]);
        // repeating data: several candidates, longest first
        assert_eq!(overlaps(&[1, 2, 1, 2], &[1, 2, 1, 2, 1, 2]), vec![4, 2]);
        assert_eq!(overlaps(&[1, 1, 1], &[1, 1, 1, 1]), vec![3, 2, 1]);
        // a full match inside the text does not count unless it reaches the end
        assert_eq!(overlaps(&[1, 2, 3, 9], &[1, 2, 3]), Vec::<usize>::new());
        assert_eq!(overlaps(&[1, 2, 3, 1, 2], &[1, 2, 3]), vec![2]);
    }

    #[test]
    fn overlaps_agree_with_the_definition() {
        // Every text and pattern over a two-letter alphabet up to length 6.
        let seqs: Vec<Vec<u128>> = (0..7usize)
            .flat_map(|n| {
                (0..1u32 << n).map(move |bits| (0..n).map(|i| u128::from(bits >> i & 1)).collect())
            })
            .collect();
        for t in &seqs {
            for p in &seqs {
                let want: Vec<usize> = (1..=t.len().min(p.len()))
                    .rev()
                    .filter(|&l| t[t.len() - l..] == p[..l])
                    .collect();
                assert_eq!(overlaps(t, p), want, "text {t:?} pattern {p:?}");
            }
        }
    }

    #[test]
    fn common_suffixes() {
        assert_eq!(common_suffix(&[1, 2, 3], &[9, 2, 3]), 2);
        assert_eq!(common_suffix(&[3], &[1, 2, 3]), 1);
        assert_eq!(common_suffix(&[1, 2], &[1, 3]), 0);
        assert_eq!(common_suffix(&[], &[1]), 0);
    }

    #[test]
    fn syncs_single_out_one_candidate_or_none() {
        // Remote offsets 100..104 hold records; source offsets 10, 11, 12, ... from the
        // committed one. L = 4 pairs 10->100, 11->101, ...; L = 2 pairs 10->102, 11->103.
        let text = [100, 101, 102, 103];
        let pattern = [10, 11, 12, 13, 14, 15];
        assert_eq!(choose(&[4, 2], &text, &pattern, &[(11, 101)]), Some(4));
        assert_eq!(choose(&[4, 2], &text, &pattern, &[(11, 103)]), Some(2));
        // a sync of a remote record: the candidate that pairs it with its source record
        assert_eq!(choose(&[4, 2], &text, &pattern, &[(12, 102)]), Some(4));
        assert_eq!(choose(&[4, 2], &text, &pattern, &[(10, 102)]), Some(2));
        // syncs of records before the committed one, or beyond both, say nothing
        assert_eq!(choose(&[4, 2], &text, &pattern, &[(3, 50)]), None);
        assert_eq!(choose(&[4, 2], &text, &pattern, &[(14, 200)]), None);
        assert_eq!(choose(&[4, 2], &text, &pattern, &[]), None);
        // a sync contradicting both, or confirming one and contradicting it too
        assert_eq!(choose(&[4, 2], &text, &pattern, &[(10, 99)]), None);
        assert_eq!(
            choose(&[4, 2], &text, &pattern, &[(10, 100), (10, 102)]),
            None
        );
        // one confirmed, another neither confirmed nor contradicted: not singled out
        assert_eq!(choose(&[4, 2, 1], &text, &pattern, &[(11, 101)]), None);
    }

    #[test]
    fn maps_of_matched_pairs() {
        let map = map_of(&[(5, 0), (6, 1), (8, 2), (9, 3)]).unwrap();
        assert_eq!(map.source_start(), 5);
        assert_eq!(map.source_next(), 10);
        assert_eq!(map.target_next(), 4);
        assert_eq!(map.len_runs(), 2);
        assert_eq!(map.to_target(7).exact(), Some(2));
        assert_eq!(map.to_target(10).exact(), Some(4));
        assert_eq!(map.to_source(1).exact(), Some(6));
        assert!(map_of(&[(5, 3), (4, 4)]).is_err());
    }
}
