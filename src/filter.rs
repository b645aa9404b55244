//! Which topics to replicate and which consumer groups to sync, with MirrorMaker 2's semantics.
//!
//! A [`NameFilter`] is an include list and an exclude list of regular expressions, each matched
//! against the whole name (MM2's `DefaultTopicFilter` and `DefaultGroupFilter` use Java's
//! `Matcher.matches()`): `global` does not select `global_iot`. A name passes if some include
//! pattern matches it and no exclude pattern does; an empty include list selects nothing.
//!
//! [`topic_should_replicate`] layers MM2's fixed rules on top (`MirrorSourceConnector.
//! shouldReplicateTopic`): internal topics and cycles are never replicated, heartbeats topics
//! always are, whatever the lists say.
//!
//! Patterns use the `regex` crate's syntax, which is Java's for everything MM2 configurations
//! usually contain (classes, alternation, repetition); Java-only constructs such as
//! look-around and back-references are rejected by [`NameFilter::new`].

use std::fmt;

use regex::Regex;

use crate::naming::{Mm2Topics, ReplicationPolicy};

/// An include list and an exclude list of whole-name regular expressions.
#[derive(Debug, Clone)]
pub struct NameFilter {
    include: Vec<Regex>,
    exclude: Vec<Regex>,
}

impl NameFilter {
    /// Compiles the lists. Each pattern must be a valid regular expression on its own; it is
    /// then anchored at both ends, so it has to match the whole name.
    pub fn new(include: &[String], exclude: &[String]) -> Result<NameFilter, regex::Error> {
        Ok(NameFilter {
            include: compile_all(include)?,
            exclude: compile_all(exclude)?,
        })
    }

    /// Whether some include pattern matches the whole name.
    pub fn is_included(&self, name: &str) -> bool {
        self.include.iter().any(|re| re.is_match(name))
    }

    /// Whether some exclude pattern matches the whole name.
    pub fn is_excluded(&self, name: &str) -> bool {
        self.exclude.iter().any(|re| re.is_match(name))
    }

    /// Whether the name passes: included and not excluded.
    pub fn matches(&self, name: &str) -> bool {
        self.is_included(name) && !self.is_excluded(name)
    }
}

fn compile_all(patterns: &[String]) -> Result<Vec<Regex>, regex::Error> {
    patterns.iter().map(|p| compile_whole(p)).collect()
}

/// Compiles `pattern` to match whole names only. The pattern is first compiled alone so that
/// one like `a)|(b` is rejected rather than breaking out of the anchoring group.
fn compile_whole(pattern: &str) -> Result<Regex, regex::Error> {
    Regex::new(pattern)?;
    Regex::new(&format!(r"\A(?:{pattern})\z"))
}

/// What [`topic_should_replicate`] decided for a topic, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TopicDecision {
    /// Selected by the include list and not excluded: replicate.
    Replicate,
    /// Matched by an exclude pattern: skip.
    Excluded,
    /// Matched by no include pattern: skip.
    NotIncluded,
    /// A Kafka, Connect or MM2 internal topic: never replicated.
    Internal,
    /// Came from the target cluster (directly or through hops): replicating it would loop.
    Cycle,
    /// A heartbeats topic: always replicated, whatever the lists say.
    Heartbeats,
}

impl TopicDecision {
    /// Whether the topic is to be replicated.
    pub fn replicate(&self) -> bool {
        matches!(self, TopicDecision::Replicate | TopicDecision::Heartbeats)
    }
}

impl fmt::Display for TopicDecision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TopicDecision::Replicate => "replicated",
            TopicDecision::Excluded => "skipped: matches an exclude pattern",
            TopicDecision::NotIncluded => "skipped: matches no include pattern",
            TopicDecision::Internal => "skipped: internal topic",
            TopicDecision::Cycle => "skipped: came from the target cluster (replication cycle)",
            TopicDecision::Heartbeats => "replicated: heartbeats topic",
        })
    }
}

/// Decides whether `topic` on the source cluster is replicated to the cluster `target_alias`,
/// in MM2's order of precedence: internal topics never, cycles never, heartbeats topics always,
/// then the filter (include, then exclude).
pub fn topic_should_replicate(
    filter: &NameFilter,
    policy: &ReplicationPolicy,
    names: &Mm2Topics,
    topic: &str,
    target_alias: &str,
) -> TopicDecision {
    if names.is_internal_topic(topic) {
        TopicDecision::Internal
    } else if policy.would_cycle(topic, target_alias) {
        TopicDecision::Cycle
    } else if names.is_heartbeats_topic(policy, topic) {
        TopicDecision::Heartbeats
    } else if !filter.is_included(topic) {
        TopicDecision::NotIncluded
    } else if filter.is_excluded(topic) {
        TopicDecision::Excluded
    } else {
        TopicDecision::Replicate
    }
}

/// Whether consumer group `group`'s offsets are checkpointed and synced (MM2
/// `DefaultGroupFilter.shouldReplicateGroup`).
pub fn group_should_sync(filter: &NameFilter, group: &str) -> bool {
    filter.matches(group)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|p| (*p).to_owned()).collect()
    }

    fn filter(include: &[&str], exclude: &[&str]) -> NameFilter {
        NameFilter::new(&strings(include), &strings(exclude)).unwrap()
    }

    /// The decision with MirrorMaker 2's internal topic names for `p`.
    fn decide(f: &NameFilter, p: &ReplicationPolicy, topic: &str, target: &str) -> TopicDecision {
        topic_should_replicate(f, p, &Mm2Topics::for_policy(p, true), topic, target)
    }

    fn dot() -> ReplicationPolicy {
        ReplicationPolicy::default()
    }

    #[test]
    fn whole_name_matching() {
        let f = filter(&["global"], &[]);
        assert!(f.matches("global"));
        assert!(!f.matches("global_iot"));
        assert!(!f.matches("my_global"));
        let f = filter(&["global.*"], &["global_secret"]);
        assert!(f.matches("global_iot"));
        assert!(!f.matches("global_secret"));
        assert!(f.matches("global_secret2"));
        // Alternation inside one pattern stays anchored as a whole.
        let f = filter(&["a|b"], &[]);
        assert!(f.matches("a") && f.matches("b"));
        assert!(!f.matches("ab") && !f.matches("xa") && !f.matches("bx"));
        // `^`/`$` and `(?m)` inside a pattern do not loosen the anchoring.
        let f = filter(&["(?m)x$"], &[]);
        assert!(f.matches("x"));
        assert!(!f.matches("x\ny"));
    }

    #[test]
    fn empty_lists() {
        let f = filter(&[], &[]);
        assert!(!f.matches("anything"));
        assert!(!f.matches(""));
        let f = filter(&[".*"], &[]);
        assert!(f.matches("anything"));
        assert!(f.matches(""));
    }

    #[test]
    fn invalid_patterns_are_errors() {
        for bad in ["(", "a)|(b", "[z-a]", "(?=x)", r"(a)\1"] {
            assert!(
                NameFilter::new(&strings(&[bad]), &[]).is_err(),
                "include {bad}"
            );
            assert!(
                NameFilter::new(&strings(&[".*"]), &strings(&[bad])).is_err(),
                "exclude {bad}"
            );
        }
    }

    #[test]
    fn mm2_default_topic_excludes() {
        // The defaults a configuration gets (MM2's).
        let f = filter(
            crate::config::DEFAULT_TOPICS,
            crate::config::DEFAULT_TOPICS_EXCLUDE,
        );
        for t in [
            "orders",
            "global_iot",
            "A.orders",
            "internal",
            "x_internal",
            "replica",
            "x-replica",
        ] {
            assert!(f.matches(t), "{t}");
        }
        for t in [
            "connect-offsets-internal",
            "mm2-configs.B.internal",
            "A.checkpoints.internal",
            "orders.replica",
            "__consumer_offsets",
            "__transaction_state",
        ] {
            assert!(!f.matches(t), "{t}");
            assert!(f.is_excluded(t), "{t}");
        }
    }

    #[test]
    fn mm2_default_group_excludes() {
        let f = filter(
            crate::config::DEFAULT_GROUPS,
            crate::config::DEFAULT_GROUPS_EXCLUDE,
        );
        for g in [
            "payments",
            "app-consumer",
            "my-console-consumer-1",
            "xconnect-a",
        ] {
            assert!(group_should_sync(&f, g), "{g}");
        }
        for g in [
            "console-consumer-12345",
            "connect-my-sink",
            "connect-",
            "__strait",
        ] {
            assert!(!group_should_sync(&f, g), "{g}");
        }
        let f = filter(&["app-.*"], &["app-test"]);
        assert!(group_should_sync(&f, "app-prod"));
        assert!(!group_should_sync(&f, "app-test"));
        assert!(!group_should_sync(&f, "other"));
    }

    #[test]
    fn decisions_follow_mm2_precedence() {
        let all = filter(&[".*"], &[]);
        let only_global = filter(&["global"], &[]);
        let excl = filter(&[".*"], &["secret.*"]);
        let p = dot();
        let cases: &[(&NameFilter, &str, &str, TopicDecision)] = &[
            (&all, "orders", "B", TopicDecision::Replicate),
            (&all, "__consumer_offsets", "B", TopicDecision::Internal),
            (&all, "A.checkpoints.internal", "B", TopicDecision::Internal),
            (
                &all,
                "mm2-offset-syncs.B.internal",
                "B",
                TopicDecision::Internal,
            ),
            (&all, ".hidden", "B", TopicDecision::Internal),
            (&all, "B.orders", "B", TopicDecision::Cycle),
            (&all, "C.B.orders", "B", TopicDecision::Cycle),
            (&all, "C.orders", "B", TopicDecision::Replicate),
            (&only_global, "global", "B", TopicDecision::Replicate),
            (&only_global, "global_iot", "B", TopicDecision::NotIncluded),
            (&excl, "secret_stuff", "B", TopicDecision::Excluded),
            (
                &only_global,
                "secret_stuff",
                "B",
                TopicDecision::NotIncluded,
            ),
            // Heartbeats pass whatever the lists say, but never cycle.
            (&only_global, "heartbeats", "B", TopicDecision::Heartbeats),
            (&excl, "heartbeats", "B", TopicDecision::Heartbeats),
            (
                &filter(&[], &[]),
                "C.heartbeats",
                "B",
                TopicDecision::Heartbeats,
            ),
            (&all, "B.heartbeats", "B", TopicDecision::Cycle),
            (&all, "A.B.heartbeats", "B", TopicDecision::Cycle),
            // Internal beats heartbeats (MM2 checks isInternalTopic regardless).
            (&all, "__x.heartbeats", "B", TopicDecision::Internal),
        ];
        for (f, topic, target, want) in cases {
            let got = decide(f, &p, topic, target);
            assert_eq!(got, *want, "{topic} -> {target}");
            assert_eq!(
                got.replicate(),
                matches!(want, TopicDecision::Replicate | TopicDecision::Heartbeats)
            );
        }
    }

    #[test]
    fn active_active_between_cluster_a_and_cluster_b() {
        let topics = filter(&[".*"], &[]);
        let p = dot();
        // Flow cluster_a -> cluster_b, looking at topics on cluster_a.
        let a_to_b = |t: &str| decide(&topics, &p, t, "cluster_b");
        // Flow cluster_b -> cluster_a, looking at topics on cluster_b.
        let b_to_a = |t: &str| decide(&topics, &p, t, "cluster_a");

        assert_eq!(a_to_b("global_iot"), TopicDecision::Replicate);
        assert_eq!(
            p.remote_topic("cluster_a", "global_iot"),
            "cluster_a.global_iot"
        );
        // ...which lands on cluster_b as cluster_a.global_iot and must not come back.
        assert_eq!(b_to_a("cluster_a.global_iot"), TopicDecision::Cycle);
        assert_eq!(a_to_b("cluster_b.x"), TopicDecision::Cycle);
        assert_eq!(b_to_a("x"), TopicDecision::Replicate);

        assert_eq!(a_to_b("heartbeats"), TopicDecision::Heartbeats);
        assert_eq!(b_to_a("heartbeats"), TopicDecision::Heartbeats);
        // cluster_b's heartbeats replicated to cluster_a do not go back to cluster_b...
        assert_eq!(a_to_b("cluster_b.heartbeats"), TopicDecision::Cycle);
        // ...and cluster_a's heartbeats on cluster_b do not go back to cluster_a.
        assert_eq!(b_to_a("cluster_a.heartbeats"), TopicDecision::Cycle);
        // Internal topics stay home both ways.
        assert_eq!(
            a_to_b("mm2-offset-syncs.cluster_b.internal"),
            TopicDecision::Internal
        );
        assert_eq!(
            b_to_a("cluster_a.checkpoints.internal"),
            TopicDecision::Internal
        );
    }

    #[test]
    fn identity_policy_decisions() {
        let all = filter(&[".*"], &[]);
        let p = ReplicationPolicy::Identity;
        // No prefix, so no cycle detection for ordinary topics (as in MM2).
        assert_eq!(decide(&all, &p, "B.orders", "B"), TopicDecision::Replicate);
        assert_eq!(
            decide(&all, &p, "heartbeats", "B"),
            TopicDecision::Heartbeats
        );
        assert_eq!(decide(&all, &p, "B.heartbeats", "B"), TopicDecision::Cycle);
    }

    #[test]
    fn renamed_mm2_topics() {
        let all = filter(&[".*"], &[]);
        let none = filter(&[], &[]);
        let p = dot();
        let pattern = |s: &str| {
            crate::naming::TopicPattern::parse(s, crate::naming::SOURCE_PLACEHOLDER)
                .expect("pattern")
        };
        let n = Mm2Topics::for_policy(&p, true)
            .with_heartbeats("ops-hb")
            .with_checkpoints(pattern("ops.cp.{source}"));
        let renamed = |f: &NameFilter, t: &str| topic_should_replicate(f, &p, &n, t, "B");
        assert_eq!(renamed(&none, "ops-hb"), TopicDecision::Heartbeats);
        assert_eq!(renamed(&none, "C.ops-hb"), TopicDecision::Heartbeats);
        assert_eq!(renamed(&none, "heartbeats"), TopicDecision::NotIncluded);
        assert_eq!(renamed(&all, "ops.cp.A"), TopicDecision::Internal);
        assert_eq!(renamed(&all, "B.ops-hb"), TopicDecision::Cycle);
    }

    #[test]
    fn custom_separator_internal_topics() {
        let all = filter(&[".*"], &[]);
        let p = ReplicationPolicy::Default {
            separator: "_".into(),
        };
        assert_eq!(
            decide(&all, &p, "A_checkpoints_internal", "B"),
            TopicDecision::Internal
        );
        assert_eq!(decide(&all, &p, "B_orders", "B"), TopicDecision::Cycle);
        assert_eq!(decide(&all, &p, "B.orders", "B"), TopicDecision::Replicate);
    }

    #[test]
    fn decisions_display() {
        assert_eq!(
            TopicDecision::Cycle.to_string(),
            "skipped: came from the target cluster (replication cycle)"
        );
        assert_eq!(TopicDecision::Replicate.to_string(), "replicated");
    }

    proptest! {
        #[test]
        fn literal_patterns_match_only_themselves(name in "[a-zA-Z0-9_-]{1,20}", other in "[a-zA-Z0-9_-]{0,20}") {
            let f = filter(&[&regex::escape(&name)], &[]);
            prop_assert!(f.matches(&name));
            prop_assert_eq!(f.matches(&other), other == name);
            let prefixed = format!("{other}{name}x");
            prop_assert!(!f.matches(&prefixed));
        }

        #[test]
        fn exclude_always_wins(name in "[a-z._-]{1,20}") {
            let f = filter(&[".*"], &[&regex::escape(&name)]);
            prop_assert!(!f.matches(&name));
        }

        #[test]
        fn decision_agrees_with_mm2_formula(topic in "[a-zA-Z_.]{0,20}", target in "[a-zA-Z_]{1,5}") {
            // MM2: (filter || heartbeats) && !internal && !cycle
            let f = filter(&["[a-m].*"], &[".*z.*"]);
            let p = dot();
            let n = Mm2Topics::default();
            let mm2 = (f.matches(&topic) || n.is_heartbeats_topic(&p, &topic))
                && !n.is_internal_topic(&topic)
                && !p.would_cycle(&topic, &target);
            prop_assert_eq!(decide(&f, &p, &topic, &target).replicate(), mm2);
        }
    }
}
