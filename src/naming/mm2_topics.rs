//! The names of MirrorMaker 2's own topics a flow writes and reads: heartbeats, checkpoints and
//! offset syncs, as MM2's `DefaultReplicationPolicy` names them (KIP-690: its separator also
//! separates the parts of internal names; KIP-949: `replication.policy.internal.topic.
//! separator.enabled = false` keeps `.` there), and renamed outright for clusters whose topic
//! naming policy refuses those names (what MM2 does with a custom policy class).
//!
//! | topic | MM2's name | renamed with |
//! | --- | --- | --- |
//! | heartbeats | `heartbeats` (replicated: `A.heartbeats`) | `heartbeats_topic` (MM2 `default.replication.policy.heartbeats.topic.name`) |
//! | checkpoints of groups on `A` | `A<sep>checkpoints<sep>internal` | `checkpoints_topic`, a pattern with `{source}` |
//! | offset syncs towards `B` | `mm2-offset-syncs<sep>B<sep>internal` | `offset_syncs_topic`, a pattern with `{target}` |
//!
//! Checkpoints and offset-syncs topics are never replicated, under either kind of name;
//! heartbeats topics always are (as in MM2).

use super::{is_internal_topic, ReplicationPolicy, DEFAULT_SEPARATOR};
use crate::mm2::HEARTBEATS_TOPIC;

/// The placeholder a `checkpoints_topic` pattern holds for the source cluster's alias.
pub const SOURCE_PLACEHOLDER: &str = "{source}";
/// The placeholder an `offset_syncs_topic` pattern holds for the target cluster's alias.
pub const TARGET_PLACEHOLDER: &str = "{target}";

/// A topic name with one placeholder for a cluster alias (`ops.mm2-checkpoints.{source}`),
/// split around it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TopicPattern {
    /// The text before the alias.
    before: String,
    /// The text after the alias.
    after: String,
}

impl TopicPattern {
    /// Splits `pattern` around its one `placeholder` ([`SOURCE_PLACEHOLDER`] or
    /// [`TARGET_PLACEHOLDER`]).
    pub fn parse(pattern: &str, placeholder: &str) -> Result<TopicPattern, PatternError> {
        let refused = || {
            PatternError(format!(
                "`{pattern}` must hold `{placeholder}` exactly once, for the cluster alias"
            ))
        };
        let (before, after) = pattern.split_once(placeholder).ok_or_else(refused)?;
        if after.contains(placeholder) {
            return Err(refused());
        }
        Ok(TopicPattern {
            before: before.to_owned(),
            after: after.to_owned(),
        })
    }

    /// The name for one alias.
    pub fn name(&self, alias: &str) -> String {
        format!("{}{alias}{}", self.before, self.after)
    }

    /// Whether `topic` is this pattern's name for some non-empty alias.
    pub fn matches(&self, topic: &str) -> bool {
        topic.len() > self.before.len() + self.after.len()
            && topic.starts_with(&self.before)
            && topic.ends_with(&self.after)
    }

    /// The pattern as written, with `placeholder` where the alias goes.
    pub fn to_pattern(&self, placeholder: &str) -> String {
        format!("{}{placeholder}{}", self.before, self.after)
    }
}

/// Why a topic name pattern is refused (one line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternError(pub String);

/// How one flow names MirrorMaker 2's internal topics.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Mm2Topics {
    /// The separator inside internal names (`.` unless a policy separator applies).
    separator: String,
    /// The heartbeats topic's name.
    heartbeats: String,
    /// A renamed checkpoints topic, or MM2's name.
    checkpoints: Option<TopicPattern>,
    /// A renamed offset-syncs topic, or MM2's name.
    offset_syncs: Option<TopicPattern>,
}

impl Default for Mm2Topics {
    /// MM2's names with its default separator `.`.
    fn default() -> Mm2Topics {
        Mm2Topics::new(DEFAULT_SEPARATOR, HEARTBEATS_TOPIC)
    }
}

impl Mm2Topics {
    /// MM2's names with `separator` inside internal names and `heartbeats` as the heartbeats
    /// topic.
    pub fn new(separator: &str, heartbeats: &str) -> Mm2Topics {
        Mm2Topics {
            separator: separator.to_owned(),
            heartbeats: heartbeats.to_owned(),
            checkpoints: None,
            offset_syncs: None,
        }
    }

    /// MM2's names for `policy`: its separator inside internal names when
    /// `internal_separator` (MM2's default), else `.` (KIP-949's switch off).
    pub fn for_policy(policy: &ReplicationPolicy, internal_separator: bool) -> Mm2Topics {
        let separator = if internal_separator {
            policy.separator()
        } else {
            DEFAULT_SEPARATOR
        };
        Mm2Topics::new(separator, HEARTBEATS_TOPIC)
    }

    /// The heartbeats topic renamed.
    pub fn with_heartbeats(mut self, name: &str) -> Mm2Topics {
        self.heartbeats = name.to_owned();
        self
    }

    /// Checkpoints topics named by `pattern` (the alias is the source cluster's).
    pub fn with_checkpoints(mut self, pattern: TopicPattern) -> Mm2Topics {
        self.checkpoints = Some(pattern);
        self
    }

    /// Offset-syncs topics named by `pattern` (the alias is the target cluster's).
    pub fn with_offset_syncs(mut self, pattern: TopicPattern) -> Mm2Topics {
        self.offset_syncs = Some(pattern);
        self
    }

    /// The heartbeats topic's name (MM2 `heartbeatsTopic`).
    pub fn heartbeats(&self) -> &str {
        &self.heartbeats
    }

    /// Whether `topic` is a heartbeats topic under `policy`: the heartbeats topic, or a replica
    /// of it at any number of hops (`A.heartbeats`, `B.A.heartbeats`; MM2 `isHeartbeatsTopic`).
    pub fn is_heartbeats_topic(&self, policy: &ReplicationPolicy, topic: &str) -> bool {
        policy.original_topic(topic) == self.heartbeats
    }

    /// The checkpoints topic on a target for groups of the cluster `source_alias` (MM2
    /// `checkpointsTopic`: `<source><sep>checkpoints<sep>internal`).
    pub fn checkpoints(&self, source_alias: &str) -> String {
        match &self.checkpoints {
            Some(p) => p.name(source_alias),
            None => {
                let sep = &self.separator;
                format!("{source_alias}{sep}checkpoints{sep}internal")
            }
        }
    }

    /// The offset-syncs topic of replication towards `target_alias` (MM2 `offsetSyncsTopic`:
    /// `mm2-offset-syncs<sep><target><sep>internal`).
    pub fn offset_syncs(&self, target_alias: &str) -> String {
        match &self.offset_syncs {
            Some(p) => p.name(target_alias),
            None => {
                let sep = &self.separator;
                format!("mm2-offset-syncs{sep}{target_alias}{sep}internal")
            }
        }
    }

    /// Whether `topic` is a checkpoints topic (MM2 `isCheckpointsTopic`).
    pub fn is_checkpoints_topic(&self, topic: &str) -> bool {
        match &self.checkpoints {
            Some(p) => p.matches(topic),
            None => {
                let sep = &self.separator;
                topic.ends_with(&format!("{sep}checkpoints{sep}internal"))
            }
        }
    }

    /// Whether `topic` is one of MM2's own internal topics: a name ending in `<sep>internal`
    /// (MM2 `isMM2InternalTopic`), or a renamed checkpoints or offset-syncs topic.
    pub fn is_mm2_internal_topic(&self, topic: &str) -> bool {
        topic.ends_with(&format!("{}internal", self.separator))
            || self.checkpoints.as_ref().is_some_and(|p| p.matches(topic))
            || self.offset_syncs.as_ref().is_some_and(|p| p.matches(topic))
    }

    /// Whether `topic` must never be replicated: Kafka's and Connect's internal topics
    /// ([`is_internal_topic`]) and MM2's own (MM2 `isInternalTopic`).
    pub fn is_internal_topic(&self, topic: &str) -> bool {
        is_internal_topic(topic) || self.is_mm2_internal_topic(topic)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn source(pattern: &str) -> Result<TopicPattern, PatternError> {
        TopicPattern::parse(pattern, SOURCE_PLACEHOLDER)
    }

    fn sep(s: &str) -> ReplicationPolicy {
        ReplicationPolicy::Default {
            separator: s.to_owned(),
        }
    }

    #[test]
    fn internal_topics() {
        let mm2 = Mm2Topics::default();
        let identity = Mm2Topics::for_policy(&ReplicationPolicy::Identity, true);
        for t in [
            "__consumer_offsets",
            "__transaction_state",
            ".hidden",
            "connect-offsets-internal",
            "mm2-configs.B.internal",
            "A.checkpoints.internal",
            "mm2-offset-syncs.B.internal",
            "x.internal",
        ] {
            assert!(mm2.is_internal_topic(t), "{t}");
            assert!(identity.is_internal_topic(t), "{t}");
        }
        for t in [
            "heartbeats",
            "A.heartbeats",
            "orders",
            "_single_underscore",
            "internal",
            "x_internal",
            "x.replica",
        ] {
            assert!(!mm2.is_internal_topic(t), "{t}");
        }
        // A custom separator also makes `<sep>internal` names internal (MM2 isMM2InternalTopic).
        let under = Mm2Topics::for_policy(&sep("_"), true);
        assert!(under.is_internal_topic("x_internal"));
        assert!(under.is_internal_topic("A_checkpoints_internal"));
        assert!(!is_internal_topic("A_checkpoints_internal"));
    }

    #[test]
    fn mm2_names_follow_the_separator_unless_switched_off() {
        let dot = Mm2Topics::default();
        assert_eq!(dot.checkpoints("A"), "A.checkpoints.internal");
        assert_eq!(dot.offset_syncs("B"), "mm2-offset-syncs.B.internal");
        assert_eq!(dot.heartbeats(), "heartbeats");
        let under = Mm2Topics::for_policy(&sep("_"), true);
        assert_eq!(under.checkpoints("A"), "A_checkpoints_internal");
        assert_eq!(under.offset_syncs("B"), "mm2-offset-syncs_B_internal");
        assert!(under.is_checkpoints_topic("A_checkpoints_internal"));
        assert!(!under.is_checkpoints_topic("A.checkpoints.internal"));
        // KIP-949: the separator switched off for internal topics keeps MM2 2.x's names.
        let old = Mm2Topics::for_policy(&sep("_"), false);
        assert_eq!(old.checkpoints("A"), "A.checkpoints.internal");
        assert_eq!(old.offset_syncs("B"), "mm2-offset-syncs.B.internal");
        assert!(old.is_internal_topic("A.checkpoints.internal"));
        assert!(dot.is_checkpoints_topic("A.checkpoints.internal"));
        assert!(!dot.is_checkpoints_topic("A.checkpoints"));
        assert!(dot.is_mm2_internal_topic("mm2-offset-syncs.B.internal"));
        assert!(!dot.is_mm2_internal_topic("connect-internal"));
    }

    #[test]
    fn renamed_topics() {
        let names = Mm2Topics::default()
            .with_heartbeats("ops-mm2-heartbeats")
            .with_checkpoints(source("ops.mm2-checkpoints.{source}").expect("pattern"))
            .with_offset_syncs(
                TopicPattern::parse("ops.mm2-offset-syncs.{target}", TARGET_PLACEHOLDER)
                    .expect("pattern"),
            );
        assert_eq!(names.checkpoints("A"), "ops.mm2-checkpoints.A");
        assert_eq!(names.offset_syncs("B"), "ops.mm2-offset-syncs.B");
        assert!(names.is_checkpoints_topic("ops.mm2-checkpoints.A"));
        assert!(!names.is_checkpoints_topic("ops.mm2-checkpoints."));
        assert!(!names.is_checkpoints_topic("A.checkpoints.internal"));
        // Renamed internal topics are never replicated; the MM2 suffix rule still holds.
        for t in [
            "ops.mm2-checkpoints.A",
            "ops.mm2-offset-syncs.B",
            "x.internal",
        ] {
            assert!(names.is_internal_topic(t), "{t}");
        }
        assert!(!names.is_internal_topic("ops.orders"));
        let dot = sep(".");
        assert!(names.is_heartbeats_topic(&dot, "ops-mm2-heartbeats"));
        assert!(names.is_heartbeats_topic(&dot, "A.ops-mm2-heartbeats"));
        assert!(!names.is_heartbeats_topic(&dot, "heartbeats"));
        assert!(!names.is_heartbeats_topic(&dot, "A.heartbeats"));
        for bad in ["ops.checkpoints", "{source}.{source}", "{target}.x"] {
            assert!(source(bad).is_err(), "{bad}");
        }
        assert_eq!(
            source("{source}.x").map(|p| p.to_pattern(SOURCE_PLACEHOLDER)),
            Ok("{source}.x".to_owned())
        );
    }

    #[test]
    fn heartbeats_topics() {
        let yes = [
            "heartbeats",
            "A.heartbeats",
            "B.A.heartbeats",
            "x.y.z.heartbeats",
        ];
        let no = [
            "heartbeat",
            "myheartbeats",
            "A.myheartbeats",
            "heartbeats.A",
            "A.heartbeats.x",
            "heartbeats.",
        ];
        let names = Mm2Topics::default();
        for policy in [sep("."), ReplicationPolicy::Identity] {
            for t in yes {
                assert!(names.is_heartbeats_topic(&policy, t), "{policy:?} {t}");
            }
            for t in no {
                assert!(!names.is_heartbeats_topic(&policy, t), "{policy:?} {t}");
            }
        }
        assert!(names.is_heartbeats_topic(&sep("_"), "B_A_heartbeats"));
        assert!(!names.is_heartbeats_topic(&sep("_"), "A.heartbeats"));
    }

    proptest! {
        #[test]
        fn a_pattern_names_and_recognises_every_alias(
            before in "[a-z.]{0,6}",
            after in "[a-z._-]{0,6}",
            alias in "[a-z0-9_-]{1,8}",
        ) {
            let pattern = source(&format!("{before}{{source}}{after}"));
            prop_assert!(pattern.is_ok());
            let Ok(pattern) = pattern else { return Ok(()) };
            let names = Mm2Topics::default().with_checkpoints(pattern);
            let name = names.checkpoints(&alias);
            prop_assert_eq!(&name, &format!("{before}{alias}{after}"));
            prop_assert!(names.is_checkpoints_topic(&name));
            prop_assert!(names.is_internal_topic(&name));
        }
    }
}
