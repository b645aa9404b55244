//! What a Produce answer means for one partition of the request, sans-io: the decision table
//! the data path applies to each partition's error code.

use crate::protocol::error_code;

/// How often in a row an OutOfOrderSequenceNumber answer is met by resending from the oldest
/// unacknowledged batch before the partition is taken up again from the target.
pub(super) const MAX_SEQUENCE_RETRIES: u32 = 5;

/// What to do with a partition after its Produce answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    /// Appended, or a duplicate of a batch appended before: the oldest queued batch is
    /// acknowledged.
    Acked,
    /// Resend from the oldest unacknowledged batch with the same sequence numbers (a broker
    /// that handled pipelined requests out of order refused a batch whose predecessor it had
    /// not appended yet).
    ResendFromOldest,
    /// Read the target back and take the partition up again from what landed. `refused`: the
    /// broker refused the producer state (counts towards stopping the partition); otherwise the
    /// batch may or may not have been appended (timed out on the broker).
    TakeUpAgain {
        /// The broker refused the producer's sequence, epoch or id.
        refused: bool,
    },
    /// Refused for good: the partition stops with the broker's reason.
    Stop,
    /// Retriable: resend, after refreshing the topic's metadata if `refresh_metadata`.
    Resend {
        /// The error means the leader or the partition moved.
        refresh_metadata: bool,
    },
}

/// The outcome of `code` (`None`: the answer did not list the partition) for a partition that
/// has had `sequence_retries` OutOfOrderSequenceNumber answers in a row.
pub(super) fn classify(code: Option<i16>, sequence_retries: u32) -> Outcome {
    match code {
        Some(error_code::NONE | error_code::DUPLICATE_SEQUENCE_NUMBER) => Outcome::Acked,
        Some(error_code::OUT_OF_ORDER_SEQUENCE_NUMBER)
            if sequence_retries < MAX_SEQUENCE_RETRIES =>
        {
            Outcome::ResendFromOldest
        }
        Some(
            error_code::OUT_OF_ORDER_SEQUENCE_NUMBER
            | error_code::INVALID_PRODUCER_EPOCH
            | error_code::UNKNOWN_PRODUCER_ID,
        ) => Outcome::TakeUpAgain { refused: true },
        Some(error_code::REQUEST_TIMED_OUT) => Outcome::TakeUpAgain { refused: false },
        Some(code) if !error_code::is_retriable(code) => Outcome::Stop,
        other => {
            let code = other.unwrap_or(error_code::UNKNOWN_TOPIC_OR_PARTITION);
            Outcome::Resend {
                refresh_metadata: error_code::needs_metadata_refresh(code),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_decision_table() {
        use error_code::*;
        let cases: &[(Option<i16>, u32, Outcome)] = &[
            (Some(NONE), 0, Outcome::Acked),
            (Some(DUPLICATE_SEQUENCE_NUMBER), 0, Outcome::Acked),
            (
                Some(OUT_OF_ORDER_SEQUENCE_NUMBER),
                0,
                Outcome::ResendFromOldest,
            ),
            (
                Some(OUT_OF_ORDER_SEQUENCE_NUMBER),
                MAX_SEQUENCE_RETRIES - 1,
                Outcome::ResendFromOldest,
            ),
            (
                Some(OUT_OF_ORDER_SEQUENCE_NUMBER),
                MAX_SEQUENCE_RETRIES,
                Outcome::TakeUpAgain { refused: true },
            ),
            (
                Some(INVALID_PRODUCER_EPOCH),
                0,
                Outcome::TakeUpAgain { refused: true },
            ),
            (
                Some(UNKNOWN_PRODUCER_ID),
                0,
                Outcome::TakeUpAgain { refused: true },
            ),
            (
                Some(REQUEST_TIMED_OUT),
                0,
                Outcome::TakeUpAgain { refused: false },
            ),
            (
                Some(NOT_LEADER_OR_FOLLOWER),
                0,
                Outcome::Resend {
                    refresh_metadata: true,
                },
            ),
            (
                None,
                0,
                Outcome::Resend {
                    refresh_metadata: true,
                },
            ),
            (Some(CORRUPT_MESSAGE), 0, Outcome::Stop),
            (Some(MESSAGE_TOO_LARGE), 0, Outcome::Stop),
        ];
        for (code, retries, want) in cases {
            assert_eq!(classify(*code, *retries), *want, "{code:?} after {retries}");
        }
    }

    /// Whatever the code, a partition is never acknowledged unless the broker said it holds
    /// the batch, and never resent from the oldest batch without bound.
    #[test]
    fn only_success_acknowledges_and_resends_are_bounded() {
        for code in -1i16..=120 {
            for retries in 0..=MAX_SEQUENCE_RETRIES + 1 {
                let o = classify(Some(code), retries);
                if o == Outcome::Acked {
                    assert!(
                        code == error_code::NONE || code == error_code::DUPLICATE_SEQUENCE_NUMBER
                    );
                }
                if o == Outcome::ResendFromOldest {
                    assert!(retries < MAX_SEQUENCE_RETRIES);
                }
            }
        }
    }
}
