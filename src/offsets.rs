//! The exact source-to-target offset map of one replicated partition, sans-io.
//!
//! MirrorMaker 2 keeps a sparse window of offset syncs, so it cannot translate consumer groups
//! that lag far behind. strait instead records every produced batch and keeps an exact map,
//! stored compactly as [`Run`]s: maximal stretches where consecutive source offsets are
//! consecutive target offsets. A new run starts only where the mapping jumps (source offsets
//! dropped — control batches, aborted transactions, compacted gaps — or target offsets skipped),
//! so a partition replicated without gaps is a single run however long it is.
//!
//! Feeding the map: for every produced [`Outgoing`](crate::forward::Outgoing) batch call
//! [`OffsetMap::record_batch`] with its [`SourceOffsets`] and the produce response's base offset,
//! and for every dropped range of a [`Plan`](crate::forward::Plan) call
//! [`OffsetMap::record_dropped`]. Offsets skipped between batches (compaction) need no call: an
//! offset that was never recorded is simply absent, like a dropped one.
//!
//! Translation follows consumer *committed offset* semantics: a committed offset `C` means "the
//! next record to read is `C`", so it translates to the position of the first mapped record at or
//! after `C` on the other side (see [`OffsetMap::to_target`] and [`OffsetMap::to_source`]). For
//! committed positions on record boundaries the two directions are exact inverses.
//!
//! Persistence: [`OffsetMap::encode`] / [`OffsetMap::decode`], a versioned binary format of
//! LEB128 varint deltas (a few bytes per run). Decoding validates every invariant and never
//! panics.

use crate::forward::SourceOffsets;

/// Source offsets `source_start..source_start + len` were written to the target as target
/// offsets `target_start..target_start + len`, one for one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Run {
    /// First source offset of the run.
    pub source_start: i64,
    /// Target offset of the record at `source_start`.
    pub target_start: i64,
    /// Number of records in the run (positive).
    pub len: i64,
}

impl Run {
    /// Source offset just after the run.
    pub fn source_end(&self) -> i64 {
        self.source_start.saturating_add(self.len)
    }

    /// Target offset just after the run.
    pub fn target_end(&self) -> i64 {
        self.target_start.saturating_add(self.len)
    }

    /// `target - source` for every record of the run.
    pub fn delta(&self) -> i64 {
        self.target_start.saturating_sub(self.source_start)
    }
}

/// The result of translating a committed offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Translation {
    /// The translated committed offset on the other side.
    Exact(i64),
    /// The offset lies below what the map covers: before the start of replication, or removed
    /// by [`OffsetMap::truncate_before_source`] (source retention). The consumer has to be reset
    /// by policy (earliest/latest), not translated.
    BeforeMap,
    /// The offset lies beyond what has been replicated so far (`source_next` / `target_next`);
    /// retry later.
    BeyondMap,
}

impl Translation {
    /// The translated offset, if the translation is exact.
    pub fn exact(self) -> Option<i64> {
        match self {
            Translation::Exact(offset) => Some(offset),
            Translation::BeforeMap | Translation::BeyondMap => None,
        }
    }
}

/// What is inconsistent when recording into or decoding an [`OffsetMap`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OffsetMapError {
    /// A batch starts below the source offsets already covered by the map.
    #[error("batch source offset {offset} is below the map's source_next {source_next}")]
    SourceBackwards {
        /// The offending source offset.
        offset: i64,
        /// Every source offset below this is already mapped or dropped.
        source_next: i64,
    },
    /// A batch's target base offset overlaps target offsets already mapped.
    #[error("batch target base offset {target_base} is below the map's target_next {target_next}")]
    TargetBackwards {
        /// The produce response's base offset.
        target_base: i64,
        /// The target log end after the last mapped record.
        target_next: i64,
    },
    /// A batch's target base offset is negative (e.g. `-1` from a produce with acks=0).
    #[error("batch target base offset {target_base} is negative")]
    NegativeTargetBase {
        /// The produce response's base offset.
        target_base: i64,
    },
    /// A contiguous batch with a negative record count.
    #[error("batch at source offset {first} has negative record count {count}")]
    NegativeCount {
        /// First source offset of the batch.
        first: i64,
        /// The record count.
        count: i64,
    },
    /// Listed source offsets are not strictly increasing.
    #[error("listed source offset {offset} does not follow {previous}")]
    NotIncreasing {
        /// The previous listed offset.
        previous: i64,
        /// The offset that is not above it.
        offset: i64,
    },
    /// Offsets that do not fit in an `i64`.
    #[error("offset {offset} plus {count} overflows")]
    Overflow {
        /// Start offset.
        offset: i64,
        /// What was added to it.
        count: i64,
    },
    /// Encoded map: not an offset map (wrong magic bytes).
    #[error("not an encoded offset map (bad magic)")]
    BadMagic,
    /// Encoded map: a format version this code does not read.
    #[error("unsupported offset map encoding version {version}")]
    UnsupportedVersion {
        /// The version byte found.
        version: u8,
    },
    /// Encoded map: input ends in the middle of a field.
    #[error("encoded offset map truncated at byte {at}")]
    Truncated {
        /// Byte position where more input was needed.
        at: usize,
    },
    /// Encoded map: a varint that is overlong or does not fit in an `i64`.
    #[error("invalid varint at byte {at}")]
    BadVarint {
        /// Byte position of the varint.
        at: usize,
    },
    /// Encoded map: bytes left after the map.
    #[error("{extra} trailing bytes after the encoded offset map at byte {at}")]
    TrailingBytes {
        /// Where the map ended.
        at: usize,
        /// How many bytes follow.
        extra: usize,
    },
    /// A run with no records (or a negative length).
    #[error("run {index} at source offset {source_start} has non-positive length {len}")]
    EmptyRun {
        /// Index of the run.
        index: usize,
        /// Its source start.
        source_start: i64,
        /// Its length.
        len: i64,
    },
    /// A run that starts below the end of the previous one (or below the map's start).
    #[error(
        "run {index} (source {source_start}, target {target_start}) overlaps what precedes it \
         (source up to {previous_source_end}, target up to {previous_target_end})"
    )]
    RunOverlap {
        /// Index of the run.
        index: usize,
        /// Its source start.
        source_start: i64,
        /// Its target start.
        target_start: i64,
        /// End of the preceding run (or the map's source start).
        previous_source_end: i64,
        /// End of the preceding run (or the map's target start).
        previous_target_end: i64,
    },
    /// Two consecutive runs that continue each other and should have been one run.
    #[error("run {index} at source offset {source_start} continues the previous run unmerged")]
    UnmergedRuns {
        /// Index of the second run.
        index: usize,
        /// Its source start.
        source_start: i64,
    },
    /// `source_next` is below the start of the map or the end of the last run.
    #[error("source_next {source_next} is below the covered source offsets (up to {expected})")]
    SourceNextBehind {
        /// The stored `source_next`.
        source_next: i64,
        /// The lowest valid value.
        expected: i64,
    },
    /// `target_next` is not the end of the last run (or the map's target start with no runs).
    #[error("target_next {target_next} should be {expected}")]
    TargetNextMismatch {
        /// The stored `target_next`.
        target_next: i64,
        /// The value implied by the runs.
        expected: i64,
    },
    /// A negative start offset.
    #[error("negative map start: source {source_start}, target {target_start}")]
    NegativeStart {
        /// Source start.
        source_start: i64,
        /// Target start.
        target_start: i64,
    },
}

/// Magic bytes opening an encoded [`OffsetMap`].
pub const ENCODING_MAGIC: [u8; 4] = *b"STOM";
/// Current encoding version written by [`OffsetMap::encode`].
pub const ENCODING_VERSION: u8 = 1;

/// The exact offset map of one source partition replicated to one target partition.
///
/// Invariants (checked by [`OffsetMap::decode`]):
/// - runs have positive lengths and strictly increase in both source and target offsets, with
///   no overlap; the first run starts at or above `source_start()` / `target_start()`;
/// - runs are maximal: no run starts exactly where the previous one ends on both sides;
/// - `source_next()` is at or above the end of the last run and `source_start()`;
/// - `target_next()` is the target end of the last run (or `target_start()` with no runs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetMap {
    source_start: i64,
    target_start: i64,
    runs: Vec<Run>,
    source_next: i64,
    target_next: i64,
}

impl OffsetMap {
    /// An empty map: replication starts at source offset `source_start`, the target's log end is
    /// `target_start`. Kafka offsets are never negative; negative values are clamped to 0.
    pub fn new(source_start: i64, target_start: i64) -> Self {
        let source_start = source_start.max(0);
        let target_start = target_start.max(0);
        OffsetMap {
            source_start,
            target_start,
            runs: Vec::new(),
            source_next: source_start,
            target_next: target_start,
        }
    }

    /// The runs, sorted by source and by target offset.
    pub fn runs(&self) -> &[Run] {
        &self.runs
    }

    /// Number of runs.
    pub fn len_runs(&self) -> usize {
        self.runs.len()
    }

    /// Lowest source offset the map covers (start of replication, or the source log start after
    /// [`truncate_before_source`](Self::truncate_before_source)).
    pub fn source_start(&self) -> i64 {
        self.source_start
    }

    /// Lowest target offset the map covers: where `source_start()` translates to, or below.
    pub fn target_start(&self) -> i64 {
        self.target_start
    }

    /// Every source offset below this is either mapped or has no target record.
    pub fn source_next(&self) -> i64 {
        self.source_next
    }

    /// The target log end after the last mapped record.
    pub fn target_next(&self) -> i64 {
        self.target_next
    }

    /// Number of mapped records.
    pub fn mapped_records(&self) -> i64 {
        self.runs.iter().map(|r| r.len).sum()
    }

    /// Records one produced batch: its records' source offsets (in target order) were written at
    /// consecutive target offsets from `target_base`. Source offsets skipped inside a listed batch
    /// (or between `source_next()` and the batch) become absent, like dropped ones.
    ///
    /// Fails without changing the map if the batch starts below `source_next()` or
    /// `target_next()`, lists offsets out of order, or overflows. An empty batch changes nothing.
    pub fn record_batch(
        &mut self,
        source: &SourceOffsets,
        target_base: i64,
    ) -> Result<(), OffsetMapError> {
        match source {
            SourceOffsets::Contiguous { first, count } => {
                let (first, count) = (*first, *count);
                if count < 0 {
                    return Err(OffsetMapError::NegativeCount { first, count });
                }
                if count == 0 {
                    return Ok(());
                }
                self.check_batch_start(first, count, target_base)?;
                self.push(first, target_base, count);
            }
            SourceOffsets::Listed(offsets) => {
                let Some(&first) = offsets.first() else {
                    return Ok(());
                };
                let count = offsets.len() as i64;
                self.check_batch_start(first, count, target_base)?;
                for pair in offsets.windows(2) {
                    if pair[1] <= pair[0] {
                        return Err(OffsetMapError::NotIncreasing {
                            previous: pair[0],
                            offset: pair[1],
                        });
                    }
                }
                // The last offset + 1 must not overflow (it becomes source_next).
                if let Some(&last) = offsets.last() {
                    if last.checked_add(1).is_none() {
                        return Err(OffsetMapError::Overflow {
                            offset: last,
                            count: 1,
                        });
                    }
                }
                let mut i = 0usize;
                while i < offsets.len() {
                    let start = i;
                    while i + 1 < offsets.len() && offsets[i + 1] == offsets[i] + 1 {
                        i += 1;
                    }
                    i += 1;
                    let len = (i - start) as i64;
                    self.push(offsets[start], target_base + start as i64, len);
                }
            }
        }
        Ok(())
    }

    fn check_batch_start(
        &self,
        first: i64,
        count: i64,
        target_base: i64,
    ) -> Result<(), OffsetMapError> {
        if first < self.source_next {
            return Err(OffsetMapError::SourceBackwards {
                offset: first,
                source_next: self.source_next,
            });
        }
        if target_base < 0 {
            return Err(OffsetMapError::NegativeTargetBase { target_base });
        }
        if target_base < self.target_next {
            return Err(OffsetMapError::TargetBackwards {
                target_base,
                target_next: self.target_next,
            });
        }
        if first.checked_add(count).is_none() {
            return Err(OffsetMapError::Overflow {
                offset: first,
                count,
            });
        }
        if target_base.checked_add(count).is_none() {
            return Err(OffsetMapError::Overflow {
                offset: target_base,
                count,
            });
        }
        Ok(())
    }

    /// Appends a validated stretch, merging with the last run when it continues it.
    fn push(&mut self, source_start: i64, target_start: i64, len: i64) {
        match self.runs.last_mut() {
            Some(last)
                if last.source_end() == source_start && last.target_end() == target_start =>
            {
                last.len += len;
            }
            _ => self.runs.push(Run {
                source_start,
                target_start,
                len,
            }),
        }
        self.source_next = source_start + len;
        self.target_next = target_start + len;
    }

    /// Records source offsets `[from, to)` that have no target record (control batches, aborted
    /// transactions, a dropped batch tail): `source_next()` advances to `to`. Offsets of the range
    /// that are already covered are left as they are; an empty or past range changes nothing.
    pub fn record_dropped(&mut self, from: i64, to: i64) {
        if from < to && to > self.source_next {
            self.source_next = to;
        }
    }

    /// Translates a consumer group's committed source offset `C` ("next record to read is C") to
    /// the target: the target offset of the first mapped record whose source offset is `>= C`, or
    /// `target_next()` if there is none and `C <= source_next()`.
    ///
    /// [`Translation::BeforeMap`] when `C < source_start()`, [`Translation::BeyondMap`] when
    /// `C > source_next()`.
    pub fn to_target(&self, committed_source: i64) -> Translation {
        let c = committed_source;
        if c < self.source_start {
            return Translation::BeforeMap;
        }
        if c > self.source_next {
            return Translation::BeyondMap;
        }
        let i = self.runs.partition_point(|r| r.source_end() <= c);
        match self.runs.get(i) {
            Some(r) if c >= r.source_start => {
                Translation::Exact(r.target_start + (c - r.source_start))
            }
            Some(r) => Translation::Exact(r.target_start),
            None => Translation::Exact(self.target_next),
        }
    }

    /// Translates a committed target offset `T` back to the source (failback): the source offset
    /// of the first mapped record whose target offset is `>= T`, or `source_next()` if there is
    /// none and `T <= target_next()`.
    ///
    /// [`Translation::BeforeMap`] when `T < target_start()`, [`Translation::BeyondMap`] when
    /// `T > target_next()`.
    pub fn to_source(&self, committed_target: i64) -> Translation {
        let t = committed_target;
        if t < self.target_start {
            return Translation::BeforeMap;
        }
        if t > self.target_next {
            return Translation::BeyondMap;
        }
        let i = self.runs.partition_point(|r| r.target_end() <= t);
        match self.runs.get(i) {
            Some(r) if t >= r.target_start => {
                Translation::Exact(r.source_start + (t - r.target_start))
            }
            Some(r) => Translation::Exact(r.source_start),
            None => Translation::Exact(self.source_next),
        }
    }

    /// Forgets every source offset below `source_log_start` (the source's log start offset after
    /// retention): runs entirely below it are removed, a run straddling it is split.
    /// `source_start()` becomes `source_log_start` and `target_start()` the target position it
    /// translated to. If `source_log_start` is beyond `source_next()`, those offsets no longer
    /// exist on the source and `source_next()` moves up to it. A lower value changes nothing.
    pub fn truncate_before_source(&mut self, source_log_start: i64) {
        let l = source_log_start;
        if l <= self.source_start {
            return;
        }
        let new_target_start = match self.to_target(l) {
            Translation::Exact(t) => t,
            Translation::BeforeMap | Translation::BeyondMap => self.target_next,
        };
        let keep_from = self.runs.partition_point(|r| r.source_end() <= l);
        self.runs.drain(..keep_from);
        if let Some(first) = self.runs.first_mut() {
            if first.source_start < l {
                let d = l - first.source_start;
                first.source_start += d;
                first.target_start += d;
                first.len -= d;
            }
        }
        self.source_start = l;
        self.source_next = self.source_next.max(l);
        self.target_start = new_target_start;
    }

    /// Checks every invariant listed on [`OffsetMap`].
    pub fn validate(&self) -> Result<(), OffsetMapError> {
        if self.source_start < 0 || self.target_start < 0 {
            return Err(OffsetMapError::NegativeStart {
                source_start: self.source_start,
                target_start: self.target_start,
            });
        }
        let mut prev_source_end = self.source_start;
        let mut prev_target_end = self.target_start;
        for (index, r) in self.runs.iter().enumerate() {
            if r.len <= 0 {
                return Err(OffsetMapError::EmptyRun {
                    index,
                    source_start: r.source_start,
                    len: r.len,
                });
            }
            if r.source_start < prev_source_end || r.target_start < prev_target_end {
                return Err(OffsetMapError::RunOverlap {
                    index,
                    source_start: r.source_start,
                    target_start: r.target_start,
                    previous_source_end: prev_source_end,
                    previous_target_end: prev_target_end,
                });
            }
            if index > 0 && r.source_start == prev_source_end && r.target_start == prev_target_end {
                return Err(OffsetMapError::UnmergedRuns {
                    index,
                    source_start: r.source_start,
                });
            }
            let (Some(s_end), Some(t_end)) = (
                r.source_start.checked_add(r.len),
                r.target_start.checked_add(r.len),
            ) else {
                return Err(OffsetMapError::Overflow {
                    offset: r.source_start.max(r.target_start),
                    count: r.len,
                });
            };
            prev_source_end = s_end;
            prev_target_end = t_end;
        }
        if self.source_next < prev_source_end {
            return Err(OffsetMapError::SourceNextBehind {
                source_next: self.source_next,
                expected: prev_source_end,
            });
        }
        if self.target_next != prev_target_end {
            return Err(OffsetMapError::TargetNextMismatch {
                target_next: self.target_next,
                expected: prev_target_end,
            });
        }
        Ok(())
    }

    /// Encodes the map: [`ENCODING_MAGIC`], [`ENCODING_VERSION`], then unsigned LEB128 varints:
    /// `source_start`, `target_start`, the run count, per run the source gap and target gap from
    /// the previous run's end (or the map's start) and the length, then `source_next` minus the
    /// end of the last run and `target_next` minus the target end of the last run.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + self.runs.len() * 4);
        out.extend_from_slice(&ENCODING_MAGIC);
        out.push(ENCODING_VERSION);
        put_varint(&mut out, self.source_start);
        put_varint(&mut out, self.target_start);
        put_varint(&mut out, self.runs.len() as i64);
        let mut prev_s = self.source_start;
        let mut prev_t = self.target_start;
        for r in &self.runs {
            put_varint(&mut out, r.source_start - prev_s);
            put_varint(&mut out, r.target_start - prev_t);
            put_varint(&mut out, r.len);
            prev_s = r.source_end();
            prev_t = r.target_end();
        }
        put_varint(&mut out, self.source_next - prev_s);
        put_varint(&mut out, self.target_next - prev_t);
        out
    }

    /// Decodes what [`encode`](Self::encode) wrote, validating every invariant. Never panics;
    /// rejects anything but the canonical encoding of a valid map.
    pub fn decode(bytes: &[u8]) -> Result<OffsetMap, OffsetMapError> {
        let (map, used) = OffsetMap::decode_prefix(bytes)?;
        if used < bytes.len() {
            return Err(OffsetMapError::TrailingBytes {
                at: used,
                extra: bytes.len() - used,
            });
        }
        Ok(map)
    }

    /// Decodes a map encoded at the start of `bytes` (a record that carries more after it) and
    /// returns it with the number of bytes it took. Validates like [`decode`](Self::decode).
    pub fn decode_prefix(bytes: &[u8]) -> Result<(OffsetMap, usize), OffsetMapError> {
        let header = ENCODING_MAGIC.len();
        let Some(magic) = bytes.get(..header) else {
            return Err(OffsetMapError::Truncated { at: bytes.len() });
        };
        if magic != ENCODING_MAGIC {
            return Err(OffsetMapError::BadMagic);
        }
        let Some(&version) = bytes.get(header) else {
            return Err(OffsetMapError::Truncated { at: header });
        };
        if version != ENCODING_VERSION {
            return Err(OffsetMapError::UnsupportedVersion { version });
        }
        let mut r = Reader {
            bytes,
            pos: header + 1,
        };
        let source_start = r.varint()?;
        let target_start = r.varint()?;
        let count = r.varint()?;
        // Each run takes at least 3 bytes: never trust the count for an allocation.
        let capacity = usize::try_from(count)
            .unwrap_or(usize::MAX)
            .min(r.remaining() / 3);
        let mut runs = Vec::with_capacity(capacity);
        let mut prev_s = source_start;
        let mut prev_t = target_start;
        for _ in 0..count {
            let source_gap = r.varint()?;
            let target_gap = r.varint()?;
            let len = r.varint()?;
            let overflow = OffsetMapError::Overflow {
                offset: prev_s.max(prev_t),
                count: len,
            };
            let (Some(s), Some(t)) = (
                prev_s.checked_add(source_gap),
                prev_t.checked_add(target_gap),
            ) else {
                return Err(overflow);
            };
            let (Some(s_end), Some(t_end)) = (s.checked_add(len), t.checked_add(len)) else {
                return Err(overflow);
            };
            runs.push(Run {
                source_start: s,
                target_start: t,
                len,
            });
            prev_s = s_end;
            prev_t = t_end;
        }
        let source_next_gap = r.varint()?;
        let target_next_gap = r.varint()?;
        let (Some(source_next), Some(target_next)) = (
            prev_s.checked_add(source_next_gap),
            prev_t.checked_add(target_next_gap),
        ) else {
            return Err(OffsetMapError::Overflow {
                offset: prev_s.max(prev_t),
                count: source_next_gap.max(target_next_gap),
            });
        };
        let map = OffsetMap {
            source_start,
            target_start,
            runs,
            source_next,
            target_next,
        };
        map.validate()?;
        Ok((map, r.pos))
    }
}

/// Appends `value` (non-negative by the map's invariants; negative values are written as 0) as
/// an unsigned LEB128 varint.
pub(crate) fn put_varint(out: &mut Vec<u8>, value: i64) {
    let mut v = u64::try_from(value).unwrap_or(0);
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// Bounded cursor over an encoded map.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn remaining(&self) -> usize {
        self.bytes.len().saturating_sub(self.pos)
    }

    /// Reads a canonical (not overlong) unsigned LEB128 varint that fits in an `i64`.
    fn varint(&mut self) -> Result<i64, OffsetMapError> {
        let start = self.pos;
        let mut value: u64 = 0;
        let mut shift = 0u32;
        loop {
            let Some(&byte) = self.bytes.get(self.pos) else {
                return Err(OffsetMapError::Truncated { at: self.pos });
            };
            self.pos += 1;
            let bits = u64::from(byte & 0x7f);
            if (shift >= 63 && bits > 1) || shift > 63 {
                return Err(OffsetMapError::BadVarint { at: start });
            }
            value |= bits << shift;
            if byte & 0x80 == 0 {
                // Overlong: a trailing zero group after the first byte.
                if byte == 0 && self.pos - start > 1 {
                    return Err(OffsetMapError::BadVarint { at: start });
                }
                break;
            }
            shift += 7;
        }
        i64::try_from(value).map_err(|_| OffsetMapError::BadVarint { at: start })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn contiguous(first: i64, count: i64) -> SourceOffsets {
        SourceOffsets::Contiguous { first, count }
    }

    /// Naive model: every mapped record as a (source, target) pair.
    #[derive(Debug, Clone)]
    struct Model {
        source_start: i64,
        target_start: i64,
        pairs: Vec<(i64, i64)>,
        source_next: i64,
        target_next: i64,
    }

    impl Model {
        fn new(source_start: i64, target_start: i64) -> Self {
            Model {
                source_start,
                target_start,
                pairs: Vec::new(),
                source_next: source_start,
                target_next: target_start,
            }
        }

        fn batch(&mut self, sources: &[i64], target_base: i64) {
            for (i, &s) in sources.iter().enumerate() {
                self.pairs.push((s, target_base + i as i64));
            }
            if let Some(&last) = sources.last() {
                self.source_next = last + 1;
                self.target_next = target_base + sources.len() as i64;
            }
        }

        fn dropped(&mut self, from: i64, to: i64) {
            if from < to {
                self.source_next = self.source_next.max(to);
            }
        }

        fn to_target(&self, c: i64) -> Translation {
            if c < self.source_start {
                Translation::BeforeMap
            } else if c > self.source_next {
                Translation::BeyondMap
            } else {
                Translation::Exact(
                    self.pairs
                        .iter()
                        .find(|p| p.0 >= c)
                        .map_or(self.target_next, |p| p.1),
                )
            }
        }

        fn to_source(&self, t: i64) -> Translation {
            if t < self.target_start {
                Translation::BeforeMap
            } else if t > self.target_next {
                Translation::BeyondMap
            } else {
                Translation::Exact(
                    self.pairs
                        .iter()
                        .find(|p| p.1 >= t)
                        .map_or(self.source_next, |p| p.0),
                )
            }
        }

        fn truncate(&mut self, l: i64) {
            if l <= self.source_start {
                return;
            }
            self.target_start = self.to_target(l).exact().unwrap_or(self.target_next);
            self.pairs.retain(|p| p.0 >= l);
            self.source_start = l;
            self.source_next = self.source_next.max(l);
        }

        /// Minimal number of runs for these pairs.
        fn min_runs(&self) -> usize {
            let mut n = 0;
            for (i, p) in self.pairs.iter().enumerate() {
                if i == 0 || self.pairs[i - 1] != (p.0 - 1, p.1 - 1) {
                    n += 1;
                }
            }
            n
        }
    }

    fn check_against(map: &OffsetMap, model: &Model) {
        map.validate().unwrap();
        assert_eq!(map.source_start(), model.source_start);
        assert_eq!(map.target_start(), model.target_start);
        assert_eq!(map.source_next(), model.source_next);
        assert_eq!(map.target_next(), model.target_next);
        assert_eq!(map.len_runs(), model.min_runs(), "runs {:?}", map.runs());
        assert_eq!(map.mapped_records(), model.pairs.len() as i64);
        for c in model.source_start - 2..=model.source_next + 2 {
            assert_eq!(map.to_target(c), model.to_target(c), "to_target({c})");
        }
        for t in model.target_start - 2..=model.target_next + 2 {
            assert_eq!(map.to_source(t), model.to_source(t), "to_source({t})");
        }
        for &(s, t) in &model.pairs {
            assert_eq!(map.to_target(s), Translation::Exact(t));
            assert_eq!(map.to_source(t), Translation::Exact(s));
        }
        // Round trips at every committed position on a record boundary.
        assert_eq!(
            map.to_target(map.source_next()),
            Translation::Exact(map.target_next())
        );
        assert_eq!(
            map.to_source(map.target_next()),
            Translation::Exact(map.source_next())
        );
        let round = OffsetMap::decode(&map.encode()).unwrap();
        assert_eq!(&round, map);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Contiguous {
            source_gap: i64,
            target_gap: i64,
            count: i64,
        },
        Listed {
            source_gap: i64,
            target_gap: i64,
            steps: Vec<i64>,
        },
        Dropped {
            gap: i64,
            len: i64,
        },
        Truncate {
            back: i64,
        },
    }

    fn op() -> impl Strategy<Value = Op> {
        let gap = prop_oneof![4 => Just(0i64), 1 => 1i64..4];
        prop_oneof![
            4 => (gap.clone(), gap.clone(), 0i64..8).prop_map(|(source_gap, target_gap, count)| {
                Op::Contiguous { source_gap, target_gap, count }
            }),
            3 => (
                gap.clone(),
                gap.clone(),
                proptest::collection::vec(prop_oneof![3 => Just(1i64), 1 => 2i64..5], 0..8)
            )
                .prop_map(|(source_gap, target_gap, steps)| Op::Listed {
                    source_gap,
                    target_gap,
                    steps,
                }),
            2 => (0i64..3, 0i64..5).prop_map(|(gap, len)| Op::Dropped { gap, len }),
            1 => (0i64..30).prop_map(|back| Op::Truncate { back }),
        ]
    }

    fn apply(map: &mut OffsetMap, model: &mut Model, op: &Op) {
        match op {
            Op::Contiguous {
                source_gap,
                target_gap,
                count,
            } => {
                let first = map.source_next() + source_gap;
                let base = map.target_next() + target_gap;
                map.record_batch(&contiguous(first, *count), base).unwrap();
                let sources: Vec<i64> = (first..first + count).collect();
                model.batch(&sources, base);
            }
            Op::Listed {
                source_gap,
                target_gap,
                steps,
            } => {
                let mut s = map.source_next() + source_gap;
                let base = map.target_next() + target_gap;
                let mut sources = Vec::new();
                for step in steps {
                    sources.push(s);
                    s += step;
                }
                map.record_batch(&SourceOffsets::Listed(sources.clone()), base)
                    .unwrap();
                model.batch(&sources, base);
            }
            Op::Dropped { gap, len } => {
                let from = map.source_next() + gap;
                map.record_dropped(from, from + len);
                model.dropped(from, from + len);
            }
            Op::Truncate { back } => {
                let l = map.source_next() + 3 - back;
                map.truncate_before_source(l);
                model.truncate(l);
            }
        }
    }

    proptest! {
        #[test]
        fn matches_reference_model(
            source_start in 0i64..20,
            target_start in 0i64..20,
            ops in proptest::collection::vec(op(), 0..40),
        ) {
            let mut map = OffsetMap::new(source_start, target_start);
            let mut model = Model::new(source_start, target_start);
            check_against(&map, &model);
            for op in &ops {
                apply(&mut map, &mut model, op);
                check_against(&map, &model);
            }
        }

        #[test]
        fn rejected_batches_leave_the_map_unchanged(
            ops in proptest::collection::vec(op(), 1..20),
            back in 1i64..5,
            count in 1i64..5,
        ) {
            let mut map = OffsetMap::new(0, 0);
            let mut model = Model::new(0, 0);
            for op in &ops {
                apply(&mut map, &mut model, op);
            }
            let before = map.clone();
            let s = map.source_next();
            let t = map.target_next();
            if s - back >= 0 {
                prop_assert!(map.record_batch(&contiguous(s - back, count), t).is_err());
            }
            if t - back >= 0 {
                prop_assert!(map.record_batch(&contiguous(s, count), t - back).is_err());
            }
            prop_assert!(map
                .record_batch(&SourceOffsets::Listed(vec![s, s + 2, s + 1]), t)
                .is_err());
            prop_assert_eq!(map, before);
        }

        #[test]
        fn decode_random_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..128)) {
            let _ = OffsetMap::decode(&bytes);
            let mut prefixed = ENCODING_MAGIC.to_vec();
            prefixed.push(ENCODING_VERSION);
            prefixed.extend_from_slice(&bytes);
            if let Ok(map) = OffsetMap::decode(&prefixed) {
                prop_assert!(map.validate().is_ok());
                prop_assert_eq!(map.encode(), prefixed);
            }
        }

        #[test]
        fn decode_mutated_encodings_never_panics(
            ops in proptest::collection::vec(op(), 0..20),
            flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..4),
            cut in any::<usize>(),
        ) {
            let mut map = OffsetMap::new(3, 7);
            let mut model = Model::new(3, 7);
            for op in &ops {
                apply(&mut map, &mut model, op);
            }
            let mut bytes = map.encode();
            for (at, value) in flips {
                let len = bytes.len();
                bytes[at % len] = value;
            }
            // Every accepted encoding is canonical and valid.
            if let Ok(decoded) = OffsetMap::decode(&bytes) {
                prop_assert!(decoded.validate().is_ok());
                prop_assert_eq!(decoded.encode(), bytes.clone());
            }
            let cut = cut % (bytes.len() + 1);
            let _ = OffsetMap::decode(&bytes[..cut]);
        }
    }

    #[test]
    fn contiguous_stream_is_one_run() {
        let mut map = OffsetMap::new(1_000, 42);
        let mut target = 42;
        for i in 0..10_000 {
            map.record_batch(&contiguous(1_000 + i * 100, 100), target)
                .unwrap();
            target += 100;
        }
        assert_eq!(map.len_runs(), 1);
        assert_eq!(
            map.runs(),
            &[Run {
                source_start: 1_000,
                target_start: 42,
                len: 1_000_000
            }]
        );
        // A group lagging a million records behind still translates exactly.
        assert_eq!(map.to_target(1_000), Translation::Exact(42));
        assert_eq!(map.to_target(500_000), Translation::Exact(499_042));
        assert_eq!(map.to_source(499_042), Translation::Exact(500_000));
        assert_eq!(map.to_target(1_001_000), Translation::Exact(1_000_042));
        assert_eq!(map.to_target(1_001_001), Translation::BeyondMap);
        assert_eq!(map.to_target(999), Translation::BeforeMap);
        assert_eq!(map.to_source(41), Translation::BeforeMap);
        assert!(map.encode().len() < 20);
    }

    #[test]
    fn listed_batch_without_gaps_merges_with_previous() {
        let mut map = OffsetMap::new(0, 0);
        map.record_batch(&contiguous(0, 10), 0).unwrap();
        map.record_batch(&SourceOffsets::Listed((10..20).collect()), 10)
            .unwrap();
        assert_eq!(map.len_runs(), 1);
        // A dropped offset breaks the run; a later contiguous batch with the new delta extends
        // the second run.
        map.record_dropped(20, 21);
        map.record_batch(&contiguous(21, 5), 20).unwrap();
        map.record_batch(&contiguous(26, 5), 25).unwrap();
        assert_eq!(
            map.runs(),
            &[
                Run {
                    source_start: 0,
                    target_start: 0,
                    len: 20
                },
                Run {
                    source_start: 21,
                    target_start: 20,
                    len: 10
                }
            ]
        );
    }

    #[test]
    fn scenario_control_batch_and_compacted_gap() {
        // Source: records 0..50, a control batch at 50, records 51..70, compacted away 70..75,
        // records 75..120 (the compacted stretch arrives re-encoded with its gap listed).
        let mut map = OffsetMap::new(0, 0);
        map.record_batch(&contiguous(0, 50), 0).unwrap();
        map.record_dropped(50, 51);
        let listed: Vec<i64> = (60..70).chain(75..90).collect();
        map.record_batch(&contiguous(51, 9), 50).unwrap();
        map.record_batch(&SourceOffsets::Listed(listed), 59)
            .unwrap();
        map.record_batch(&contiguous(90, 30), 84).unwrap();
        assert_eq!(map.len_runs(), 3);
        assert_eq!(map.source_next(), 120);
        assert_eq!(map.target_next(), 114);

        // Committed at 100: 50 + 19 + 25 records precede it on the target.
        assert_eq!(map.to_target(100), Translation::Exact(94));
        assert_eq!(map.to_source(94), Translation::Exact(100));
        // Committed on the control record: next is source 51, target 50.
        assert_eq!(map.to_target(50), Translation::Exact(50));
        assert_eq!(map.to_target(51), Translation::Exact(50));
        assert_eq!(map.to_source(50), Translation::Exact(51));
        // Committed inside the compacted gap: next is source 75, target 69.
        for c in 70..=75 {
            assert_eq!(map.to_target(c), Translation::Exact(69), "committed {c}");
        }
        assert_eq!(map.to_source(69), Translation::Exact(75));
        assert_eq!(map.to_source(68), Translation::Exact(69));
        // Ends.
        assert_eq!(map.to_target(0), Translation::Exact(0));
        assert_eq!(map.to_target(120), Translation::Exact(114));
        assert_eq!(map.to_source(114), Translation::Exact(120));
        assert_eq!(map.to_target(121), Translation::BeyondMap);
        assert_eq!(map.to_source(115), Translation::BeyondMap);

        let decoded = OffsetMap::decode(&map.encode()).unwrap();
        assert_eq!(decoded, map);
        assert_eq!(decoded.to_target(100), Translation::Exact(94));
    }

    #[test]
    fn dropped_tail_then_translation_at_source_next() {
        let mut map = OffsetMap::new(10, 0);
        map.record_batch(&contiguous(10, 5), 0).unwrap();
        map.record_dropped(15, 20);
        assert_eq!(map.source_next(), 20);
        assert_eq!(map.target_next(), 5);
        for c in 15..=20 {
            assert_eq!(map.to_target(c), Translation::Exact(5));
        }
        assert_eq!(map.to_source(5), Translation::Exact(20));
        assert_eq!(map.to_target(21), Translation::BeyondMap);
        // A dropped range already covered changes nothing.
        map.record_dropped(0, 12);
        map.record_dropped(30, 25);
        assert_eq!(map.source_next(), 20);
    }

    #[test]
    fn truncation_splits_and_removes_runs() {
        let mut map = OffsetMap::new(0, 100);
        map.record_batch(&contiguous(0, 10), 100).unwrap();
        map.record_dropped(10, 12);
        map.record_batch(&contiguous(12, 10), 110).unwrap();
        map.record_dropped(22, 25);
        map.record_batch(&contiguous(25, 10), 120).unwrap();
        assert_eq!(map.len_runs(), 3);

        map.truncate_before_source(5);
        assert_eq!(map.source_start(), 5);
        assert_eq!(map.target_start(), 105);
        assert_eq!(map.len_runs(), 3);
        assert_eq!(
            map.runs()[0],
            Run {
                source_start: 5,
                target_start: 105,
                len: 5
            }
        );
        assert_eq!(map.to_target(4), Translation::BeforeMap);
        assert_eq!(map.to_source(104), Translation::BeforeMap);
        assert_eq!(map.to_target(5), Translation::Exact(105));

        // Log start inside a dropped range: the first run goes, the start translates to the
        // next record.
        map.truncate_before_source(11);
        assert_eq!(map.len_runs(), 2);
        assert_eq!(map.target_start(), 110);
        assert_eq!(map.to_target(11), Translation::Exact(110));
        assert_eq!(map.to_source(110), Translation::Exact(12));

        // Lower values change nothing.
        let before = map.clone();
        map.truncate_before_source(3);
        assert_eq!(map, before);

        // Beyond everything replicated: empty map positioned at the log start.
        map.truncate_before_source(40);
        assert_eq!(map.len_runs(), 0);
        assert_eq!(map.source_start(), 40);
        assert_eq!(map.source_next(), 40);
        assert_eq!(map.target_start(), 130);
        assert_eq!(map.to_target(40), Translation::Exact(130));
        assert_eq!(map.to_source(130), Translation::Exact(40));
        map.validate().unwrap();
        map.record_batch(&contiguous(40, 3), 130).unwrap();
        assert_eq!(map.to_target(41), Translation::Exact(131));
    }

    #[test]
    fn record_batch_errors_name_the_offsets() {
        let mut map = OffsetMap::new(0, 0);
        map.record_batch(&contiguous(0, 10), 0).unwrap();
        assert_eq!(
            map.record_batch(&contiguous(9, 1), 10),
            Err(OffsetMapError::SourceBackwards {
                offset: 9,
                source_next: 10
            })
        );
        assert_eq!(
            map.record_batch(&contiguous(10, 1), 9),
            Err(OffsetMapError::TargetBackwards {
                target_base: 9,
                target_next: 10
            })
        );
        assert_eq!(
            map.record_batch(&contiguous(10, 1), -1),
            Err(OffsetMapError::NegativeTargetBase { target_base: -1 })
        );
        assert_eq!(
            map.record_batch(&contiguous(10, -1), 10),
            Err(OffsetMapError::NegativeCount {
                first: 10,
                count: -1
            })
        );
        assert_eq!(
            map.record_batch(&SourceOffsets::Listed(vec![10, 12, 12]), 10),
            Err(OffsetMapError::NotIncreasing {
                previous: 12,
                offset: 12
            })
        );
        assert!(matches!(
            map.record_batch(&contiguous(i64::MAX - 1, 5), 10),
            Err(OffsetMapError::Overflow { .. })
        ));
        assert!(matches!(
            map.record_batch(&SourceOffsets::Listed(vec![10, i64::MAX]), 10),
            Err(OffsetMapError::Overflow { .. })
        ));
        // Empty batches are no-ops.
        let before = map.clone();
        map.record_batch(&contiguous(3, 0), 0).unwrap();
        map.record_batch(&SourceOffsets::Listed(vec![]), 0).unwrap();
        assert_eq!(map, before);
        let msg = OffsetMapError::SourceBackwards {
            offset: 9,
            source_next: 10,
        }
        .to_string();
        assert!(msg.contains('9') && msg.contains("10"));
    }

    #[test]
    fn target_gap_between_batches() {
        // Another writer appended 5 records to the target between two batches.
        let mut map = OffsetMap::new(0, 0);
        map.record_batch(&contiguous(0, 10), 0).unwrap();
        map.record_batch(&contiguous(10, 10), 15).unwrap();
        assert_eq!(map.len_runs(), 2);
        assert_eq!(map.to_target(10), Translation::Exact(15));
        for t in 10..=15 {
            assert_eq!(map.to_source(t), Translation::Exact(10));
        }
    }

    #[test]
    fn decode_rejects_invalid_maps() {
        let mut map = OffsetMap::new(0, 0);
        map.record_batch(&contiguous(0, 10), 0).unwrap();
        let good = map.encode();
        assert_eq!(OffsetMap::decode(&good).unwrap(), map);

        assert_eq!(
            OffsetMap::decode(b""),
            Err(OffsetMapError::Truncated { at: 0 })
        );
        assert_eq!(
            OffsetMap::decode(b"NOPE\x01"),
            Err(OffsetMapError::BadMagic)
        );
        assert_eq!(
            OffsetMap::decode(b"STOM\x09"),
            Err(OffsetMapError::UnsupportedVersion { version: 9 })
        );
        let mut trailing = good.clone();
        trailing.push(0);
        assert!(matches!(
            OffsetMap::decode(&trailing),
            Err(OffsetMapError::TrailingBytes { extra: 1, .. })
        ));
        assert!(matches!(
            OffsetMap::decode(&good[..good.len() - 1]),
            Err(OffsetMapError::Truncated { .. })
        ));

        let header = |fields: &[i64]| {
            let mut out = ENCODING_MAGIC.to_vec();
            out.push(ENCODING_VERSION);
            for &f in fields {
                put_varint(&mut out, f);
            }
            out
        };
        // Zero-length run.
        assert!(matches!(
            OffsetMap::decode(&header(&[0, 0, 1, 0, 0, 0, 0, 0])),
            Err(OffsetMapError::EmptyRun { .. })
        ));
        // Two runs that should be one.
        assert!(matches!(
            OffsetMap::decode(&header(&[0, 0, 2, 0, 0, 5, 0, 0, 5, 0, 0])),
            Err(OffsetMapError::UnmergedRuns { index: 1, .. })
        ));
        // target_next beyond the last run.
        assert!(matches!(
            OffsetMap::decode(&header(&[0, 0, 1, 0, 0, 5, 0, 3])),
            Err(OffsetMapError::TargetNextMismatch {
                target_next: 8,
                expected: 5
            })
        ));
        // Overflowing offsets.
        assert!(matches!(
            OffsetMap::decode(&header(&[i64::MAX, 0, 1, 0, 0, 5, 0, 0])),
            Err(OffsetMapError::Overflow { .. })
        ));
        // Overlong varint and a varint beyond i64.
        let mut overlong = ENCODING_MAGIC.to_vec();
        overlong.extend_from_slice(&[ENCODING_VERSION, 0x80, 0x00]);
        assert!(matches!(
            OffsetMap::decode(&overlong),
            Err(OffsetMapError::BadVarint { at: 5 })
        ));
        let mut huge = ENCODING_MAGIC.to_vec();
        huge.push(ENCODING_VERSION);
        huge.extend_from_slice(&[0xff; 9]);
        huge.push(0x01);
        assert!(matches!(
            OffsetMap::decode(&huge),
            Err(OffsetMapError::BadVarint { at: 5 })
        ));
        // A huge run count with no runs does not allocate or panic.
        assert!(matches!(
            OffsetMap::decode(&header(&[0, 0, i64::MAX])),
            Err(OffsetMapError::Truncated { .. })
        ));
    }

    #[test]
    fn varint_round_trips_extremes() {
        for v in [0, 1, 127, 128, 16_383, 16_384, i64::MAX - 1, i64::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            let mut r = Reader {
                bytes: &out,
                pos: 0,
            };
            assert_eq!(r.varint().unwrap(), v);
            assert_eq!(r.remaining(), 0);
        }
    }

    #[test]
    fn new_clamps_negative_starts() {
        let map = OffsetMap::new(-5, -1);
        assert_eq!((map.source_start(), map.target_start()), (0, 0));
        assert_eq!(map.to_target(0), Translation::Exact(0));
        assert_eq!(map.to_target(-1), Translation::BeforeMap);
    }
}
