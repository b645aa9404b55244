//! Apache Kafka's broker-side rules for a batch a client produces (LogValidator and
//! ProducerStateManager), each named. The forwarding planner produces only batches that follow
//! them (it re-encodes or drops the others); this check names the rule a batch breaks, for tests,
//! tools and diagnostics. It is not run on the forwarding path, since the CRC rule reads the
//! whole batch.

use super::batch::{RecordBatch, ATTR_CONTROL};

/// A rule a produced batch must follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rule {
    /// Only magic 2 batches are produced.
    MagicV2,
    /// The CRC-32C matches the bytes.
    ValidCrc,
    /// Clients cannot write transaction markers.
    NoControlBatch,
    /// `lastOffsetDelta + 1 == recordsCount`: offsets inside the batch are contiguous.
    ContiguousOffsets,
    /// At least one record.
    NonEmpty,
    /// The attributes name a known codec.
    KnownCodec,
    /// With a producer id, sequence and epoch are set (>= 0); without one, they are -1.
    ProducerFieldsConsistent,
    /// A transactional batch carries a producer id.
    TransactionalNeedsProducerId,
    /// The batch fits the target topic's `max.message.bytes`.
    WithinMaxMessageBytes,
}

impl Rule {
    /// A short description of the rule.
    pub fn describe(self) -> &'static str {
        match self {
            Rule::MagicV2 => "only magic v2 batches can be produced",
            Rule::ValidCrc => "the batch CRC-32C must match its bytes",
            Rule::NoControlBatch => "clients cannot produce control batches",
            Rule::ContiguousOffsets => "lastOffsetDelta + 1 must equal recordsCount",
            Rule::NonEmpty => "a batch must hold at least one record",
            Rule::KnownCodec => "the codec bits must name none, gzip, snappy, lz4 or zstd",
            Rule::ProducerFieldsConsistent => {
                "producerId >= 0 needs producerEpoch >= 0 and baseSequence >= 0"
            }
            Rule::TransactionalNeedsProducerId => "a transactional batch needs a producer id",
            Rule::WithinMaxMessageBytes => "the batch must fit max.message.bytes of the topic",
        }
    }
}

/// A failed rule, with the values that broke it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("batch at offset {base_offset} breaks rule {rule:?} ({}): {detail}", rule.describe())]
pub struct RuleViolation {
    /// The rule.
    pub rule: Rule,
    /// The batch's base offset.
    pub base_offset: i64,
    /// The offending values.
    pub detail: String,
}

/// Checks `batch` against Apache Kafka's produce rules. `max_message_bytes` is the target
/// topic's limit, if known. Returns the first rule that fails.
pub fn check_producible(
    batch: &RecordBatch,
    max_message_bytes: Option<usize>,
) -> Result<(), RuleViolation> {
    let fail = |rule, detail: String| {
        Err(RuleViolation {
            rule,
            base_offset: batch.base_offset(),
            detail,
        })
    };
    if batch.magic() != 2 {
        return fail(Rule::MagicV2, format!("magic {}", batch.magic()));
    }
    if let Err(e) = batch.verify_crc() {
        return fail(Rule::ValidCrc, e.to_string());
    }
    if batch.attributes() & ATTR_CONTROL != 0 {
        return fail(
            Rule::NoControlBatch,
            format!("attributes {:#06x}", batch.attributes()),
        );
    }
    if batch.compression().is_none() {
        return fail(
            Rule::KnownCodec,
            format!("attributes {:#06x}", batch.attributes()),
        );
    }
    if batch.records_count() <= 0 {
        return fail(
            Rule::NonEmpty,
            format!("recordsCount {}", batch.records_count()),
        );
    }
    if !batch.has_contiguous_offsets() {
        return fail(
            Rule::ContiguousOffsets,
            format!(
                "lastOffsetDelta {} with recordsCount {}",
                batch.last_offset_delta(),
                batch.records_count()
            ),
        );
    }
    let pid = batch.producer_id();
    if pid >= 0 && (batch.producer_epoch() < 0 || batch.base_sequence() < 0) {
        return fail(
            Rule::ProducerFieldsConsistent,
            format!(
                "producerId {pid}, producerEpoch {}, baseSequence {}",
                batch.producer_epoch(),
                batch.base_sequence()
            ),
        );
    }
    if batch.is_transactional() && pid < 0 {
        return fail(
            Rule::TransactionalNeedsProducerId,
            format!("producerId {pid}"),
        );
    }
    if let Some(max) = max_message_bytes {
        if batch.len() > max {
            return fail(
                Rule::WithinMaxMessageBytes,
                format!("{} bytes > {max}", batch.len()),
            );
        }
    }
    Ok(())
}
