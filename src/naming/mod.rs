//! Replication policies: how a topic is named on the target cluster, and what a name tells about
//! where a topic came from. Mirrors MirrorMaker 2's `DefaultReplicationPolicy` and
//! `IdentityReplicationPolicy` so that strait and MM2 agree on names in a mixed deployment.
//!
//! Under the default policy a topic `orders` replicated from cluster `A` is `A.orders` on the
//! target, and `B.A.orders` one hop further. Reading a name back follows MM2 exactly, including
//! its quirk inherited from Java's `String.split`: a name whose text after the first separator is
//! empty or made only of separators (`A.`, `A..`) is not a remote topic.
//!
//! Cycle detection walks the chain of source aliases a name encodes: replicating a topic to a
//! cluster that appears anywhere in its chain would bring it home again (see
//! [`ReplicationPolicy::would_cycle`]). Mirror flows keep names behind a prefix (Cluster
//! Linking's `cluster.link.prefix`); [`mirror_would_cycle`] walks their prefixes the same way.

use std::collections::HashSet;

use crate::mm2::HEARTBEATS_TOPIC;

mod mm2_topics;

pub use mm2_topics::{
    Mm2Topics, PatternError, TopicPattern, SOURCE_PLACEHOLDER, TARGET_PLACEHOLDER,
};

/// MM2's default separator between a source alias and the upstream topic name.
pub(crate) const DEFAULT_SEPARATOR: &str = ".";

/// How remote topics are named, MM2-compatible.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ReplicationPolicy {
    /// MM2's `DefaultReplicationPolicy`: the remote topic is `<source><separator><topic>`.
    ///
    /// MM2's internal topics (checkpoints, offset syncs) use the same separator by default (see
    /// [`Mm2Topics::for_policy`]). An empty separator can format names but never parses any
    /// name as remote.
    Default {
        /// The separator (MM2's `replication.policy.separator`, default `.`).
        separator: String,
    },
    /// MM2's `IdentityReplicationPolicy`: topics keep their names, so their origin cannot be read
    /// from them and cycles cannot be detected; the topology must be acyclic. Heartbeats are the
    /// exception, as in MM2: any name ending in `heartbeats` is handled like the default policy
    /// with separator `.` (`heartbeats` from `A` becomes `A.heartbeats`), so heartbeats from
    /// different clusters stay apart and replication hops stay measurable.
    Identity,
}

impl Default for ReplicationPolicy {
    /// MM2's default: [`ReplicationPolicy::Default`] with separator `.`.
    fn default() -> Self {
        ReplicationPolicy::Default {
            separator: DEFAULT_SEPARATOR.to_owned(),
        }
    }
}

impl ReplicationPolicy {
    /// The separator this policy uses in remote and internal topic names (`.` for
    /// [`ReplicationPolicy::Identity`], which inherits MM2's default).
    pub fn separator(&self) -> &str {
        match self {
            ReplicationPolicy::Default { separator } => separator,
            ReplicationPolicy::Identity => DEFAULT_SEPARATOR,
        }
    }

    /// The name on the target cluster of `topic` replicated from the cluster `source_alias`
    /// (MM2's `formatRemoteTopic`).
    pub fn remote_topic(&self, source_alias: &str, topic: &str) -> String {
        match self {
            ReplicationPolicy::Default { separator } => format!("{source_alias}{separator}{topic}"),
            ReplicationPolicy::Identity if looks_like_heartbeats(topic) => {
                format!("{source_alias}{DEFAULT_SEPARATOR}{topic}")
            }
            ReplicationPolicy::Identity => topic.to_owned(),
        }
    }

    /// The alias of the cluster `topic` was replicated from, or `None` if the name does not
    /// show it to be a remote topic (MM2's `topicSource`).
    pub fn topic_source(&self, topic: &str) -> Option<String> {
        self.split(topic).map(|(source, _)| source.to_owned())
    }

    /// The name `topic` has on the cluster it was replicated from (one hop up), or `None` if it
    /// is not a remote topic (MM2's `upstreamTopic`).
    ///
    /// For [`ReplicationPolicy::Identity`] MM2 answers "the same name" for every non-heartbeats
    /// topic, because any topic may be remote; strait answers `None`, consistent with
    /// [`ReplicationPolicy::topic_source`] having no alias to give. Walks up the chain stop at
    /// the same place either way.
    pub fn upstream_topic(&self, topic: &str) -> Option<String> {
        self.split(topic).map(|(_, upstream)| upstream.to_owned())
    }

    /// The topic's name on the cluster it was first produced to, following every hop; the name
    /// itself if it is not remote (MM2's `originalTopic`).
    pub fn original_topic(&self, topic: &str) -> String {
        let mut current = topic;
        while let Some((_, upstream)) = self.split(current) {
            current = upstream;
        }
        current.to_owned()
    }

    /// Every cluster alias the topic passed through, nearest first: `B.A.x` is `["B", "A"]` (it
    /// was produced on `A` as `x`, replicated to `B` as `A.x`, then here). Empty for a topic that
    /// is not remote. An alias appears again if the name went round a loop.
    pub fn source_chain(&self, topic: &str) -> Vec<String> {
        let mut chain = Vec::new();
        let mut current = topic;
        while let Some((source, upstream)) = self.split(current) {
            chain.push(source.to_owned());
            current = upstream;
        }
        chain
    }

    /// How many hops `topic` is away from the cluster `upstream_alias` (1 for `A.x` and `A`), or
    /// `None` if that cluster is not in its [`source chain`](Self::source_chain). This is MM2
    /// `MirrorClient`'s hop count for one topic; `replicationHops` takes the minimum of it over a
    /// cluster's heartbeats topics.
    pub fn hops_from(&self, topic: &str, upstream_alias: &str) -> Option<usize> {
        self.source_chain(topic)
            .iter()
            .position(|source| source == upstream_alias)
            .map(|index| index + 1)
    }

    /// Whether replicating `topic` to the cluster `target_alias` would send it back to a cluster
    /// it came from, directly or through hops (MM2 `MirrorSourceConnector.isCycle`).
    ///
    /// Always false under [`ReplicationPolicy::Identity`] except for heartbeats topics, as in MM2.
    pub fn would_cycle(&self, topic: &str, target_alias: &str) -> bool {
        let mut current = topic;
        while let Some((source, upstream)) = self.split(current) {
            if source == target_alias {
                return true;
            }
            current = upstream;
        }
        false
    }

    /// The topic name a checkpoint written to `target_alias` carries for a group's offsets in
    /// `topic` on `source_alias` (MM2 `MirrorCheckpointTask.renameTopicPartition`): a topic that
    /// came from the target gets its original name back (`B.x` on `A` checkpoints as `x` on
    /// `B`); any other gets its remote name (`x` on `A` checkpoints as `A.x` on `B`).
    pub fn checkpoint_target_topic(
        &self,
        source_alias: &str,
        target_alias: &str,
        topic: &str,
    ) -> String {
        match self.split(topic) {
            Some((source, _)) if source == target_alias => self.original_topic(topic),
            _ => self.remote_topic(source_alias, topic),
        }
    }

    /// Splits a remote topic name into (source alias, upstream name); `None` if not remote.
    /// The upstream name is always shorter than `topic`, so walks up a chain terminate.
    fn split<'t>(&self, topic: &'t str) -> Option<(&'t str, &'t str)> {
        match self {
            ReplicationPolicy::Default { separator } => split_remote(topic, separator),
            ReplicationPolicy::Identity if looks_like_heartbeats(topic) => {
                split_remote(topic, DEFAULT_SEPARATOR)
            }
            ReplicationPolicy::Identity => None,
        }
    }
}

/// MM2's name-only test for a Kafka or Connect internal topic, which is never replicated: a name
/// starting with `__` (`__consumer_offsets`, `__transaction_state`) or `.`, or ending with
/// `.internal` or `-internal` (Connect's and MM2's own topics, including checkpoints and offset
/// syncs). Heartbeats topics are not internal: they are replicated. Use
/// [`Mm2Topics::is_internal_topic`] for a flow's own naming.
pub fn is_internal_topic(topic: &str) -> bool {
    topic.starts_with("__")
        || topic.starts_with('.')
        || topic.ends_with(".internal")
        || topic.ends_with("-internal")
}

/// MM2's `IdentityReplicationPolicy` treats any name ending in the heartbeats topic name as a
/// heartbeats topic for naming purposes.
fn looks_like_heartbeats(topic: &str) -> bool {
    topic.ends_with(HEARTBEATS_TOPIC)
}

/// `DefaultReplicationPolicy`'s parse: the source is the text before the first separator, and
/// the name is remote only if Java's `split` would give at least two parts, i.e. something other
/// than separators follows the first one (Java drops trailing empty parts).
fn split_remote<'t>(topic: &'t str, separator: &str) -> Option<(&'t str, &'t str)> {
    if separator.is_empty() {
        return None;
    }
    let (source, upstream) = topic.split_once(separator)?;
    if upstream.split(separator).all(str::is_empty) {
        return None;
    }
    Some((source, upstream))
}

/// One mirror flow as the mirror loop check sees it: topics of cluster `source` are mirrored
/// into cluster `target` as `prefix` followed by their name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MirrorHop {
    /// Source cluster alias.
    pub source: String,
    /// Target cluster alias.
    pub target: String,
    /// What the mirror topics' names start with on the target (empty: the same name).
    pub prefix: String,
}

/// Whether the topic `topic` of cluster `source` came from cluster `target`, directly or over
/// several prefixed mirror hops of `hops` (all the configuration's mirror flows), so that
/// mirroring it `source -> target` would bring it home (MirrorMaker 2's cycle check, walked
/// through prefixes instead of aliases).
///
/// A name on cluster C may have come over any hop X -> C whose prefix starts it; its name on X
/// is the rest. The walk follows every such hop back: with A -> B (`a.`) and B -> C (`b.`),
/// `b.a.x` on C was `a.x` on B and `x` on A, so C -> A must not mirror it. Hops with an empty
/// prefix are not followed (a name does not show them). Each step shortens the name, so the
/// walk ends; each (cluster, name) is looked at once.
pub fn mirror_would_cycle<'a>(
    hops: &'a [MirrorHop],
    source: &'a str,
    target: &str,
    topic: &'a str,
) -> bool {
    let mut seen: HashSet<(&str, &str)> = HashSet::new();
    let mut todo = vec![(source, topic)];
    while let Some((cluster, name)) = todo.pop() {
        if !seen.insert((cluster, name)) {
            continue;
        }
        for hop in hops
            .iter()
            .filter(|h| h.target == cluster && !h.prefix.is_empty())
        {
            let Some(upstream) = name.strip_prefix(hop.prefix.as_str()) else {
                continue;
            };
            if upstream.is_empty() {
                continue;
            }
            if hop.source == target {
                return true;
            }
            todo.push((hop.source.as_str(), upstream));
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn dot() -> ReplicationPolicy {
        ReplicationPolicy::default()
    }

    fn sep(s: &str) -> ReplicationPolicy {
        ReplicationPolicy::Default {
            separator: s.to_owned(),
        }
    }

    #[test]
    fn default_is_dot_separated() {
        assert_eq!(
            ReplicationPolicy::default(),
            ReplicationPolicy::Default {
                separator: ".".into()
            }
        );
        assert_eq!(dot().separator(), ".");
        assert_eq!(ReplicationPolicy::Identity.separator(), ".");
    }

    #[test]
    fn remote_topic_names() {
        let cases: &[(ReplicationPolicy, &str, &str, &str)] = &[
            (dot(), "A", "orders", "A.orders"),
            (dot(), "us-west", "A.orders", "us-west.A.orders"),
            (dot(), "A", "heartbeats", "A.heartbeats"),
            (dot(), "B", "A.heartbeats", "B.A.heartbeats"),
            (sep("_"), "A", "orders", "A_orders"),
            (sep("--"), "A", "x.y", "A--x.y"),
            (ReplicationPolicy::Identity, "A", "orders", "orders"),
            (ReplicationPolicy::Identity, "A", "A.orders", "A.orders"),
            (
                ReplicationPolicy::Identity,
                "A",
                "heartbeats",
                "A.heartbeats",
            ),
            (
                ReplicationPolicy::Identity,
                "B",
                "A.heartbeats",
                "B.A.heartbeats",
            ),
            // MM2's Identity policy: anything ending in "heartbeats" is renamed.
            (
                ReplicationPolicy::Identity,
                "A",
                "my-heartbeats",
                "A.my-heartbeats",
            ),
        ];
        for (policy, source, topic, want) in cases {
            assert_eq!(
                policy.remote_topic(source, topic),
                *want,
                "{policy:?} {source} {topic}"
            );
        }
    }

    #[test]
    fn parsing_names() {
        // (policy, topic, topic_source, upstream_topic, original_topic, source_chain)
        type Case = (
            ReplicationPolicy,
            &'static str,
            Option<&'static str>,
            Option<&'static str>,
            &'static str,
            &'static [&'static str],
        );
        let cases: &[Case] = &[
            (dot(), "orders", None, None, "orders", &[]),
            (
                dot(),
                "A.orders",
                Some("A"),
                Some("orders"),
                "orders",
                &["A"],
            ),
            (dot(), "B.A.x", Some("B"), Some("A.x"), "x", &["B", "A"]),
            (
                dot(),
                "C.B.A.x",
                Some("C"),
                Some("B.A.x"),
                "x",
                &["C", "B", "A"],
            ),
            // `.x` is itself parsed as coming from "" (Java split keeps a leading empty part).
            (dot(), "A..x", Some("A"), Some(".x"), "x", &["A", ""]),
            (dot(), "heartbeats", None, None, "heartbeats", &[]),
            (
                dot(),
                "A.heartbeats",
                Some("A"),
                Some("heartbeats"),
                "heartbeats",
                &["A"],
            ),
            // Java String.split drops trailing empty parts: these are not remote.
            (dot(), "A.", None, None, "A.", &[]),
            (dot(), "A..", None, None, "A..", &[]),
            (dot(), ".", None, None, ".", &[]),
            (dot(), "", None, None, "", &[]),
            (dot(), "B.A.", Some("B"), Some("A."), "A.", &["B"]),
            // A leading separator gives an empty source, as in MM2.
            (dot(), ".x", Some(""), Some("x"), "x", &[""]),
            (
                sep("_"),
                "A_orders",
                Some("A"),
                Some("orders"),
                "orders",
                &["A"],
            ),
            (sep("_"), "A.orders", None, None, "A.orders", &[]),
            (
                sep("_"),
                "B_A_my.topic",
                Some("B"),
                Some("A_my.topic"),
                "my.topic",
                &["B", "A"],
            ),
            (sep("--"), "A--x", Some("A"), Some("x"), "x", &["A"]),
            (sep("--"), "A-x", None, None, "A-x", &[]),
            (sep("--"), "A---x", Some("A"), Some("-x"), "-x", &["A"]),
            (sep("--"), "A----", None, None, "A----", &[]),
            (sep(""), "A.x", None, None, "A.x", &[]),
            (
                ReplicationPolicy::Identity,
                "orders",
                None,
                None,
                "orders",
                &[],
            ),
            (
                ReplicationPolicy::Identity,
                "A.orders",
                None,
                None,
                "A.orders",
                &[],
            ),
            (
                ReplicationPolicy::Identity,
                "heartbeats",
                None,
                None,
                "heartbeats",
                &[],
            ),
            (
                ReplicationPolicy::Identity,
                "A.heartbeats",
                Some("A"),
                Some("heartbeats"),
                "heartbeats",
                &["A"],
            ),
            (
                ReplicationPolicy::Identity,
                "B.A.heartbeats",
                Some("B"),
                Some("A.heartbeats"),
                "heartbeats",
                &["B", "A"],
            ),
            (
                ReplicationPolicy::Identity,
                "A.my-heartbeats",
                Some("A"),
                Some("my-heartbeats"),
                "my-heartbeats",
                &["A"],
            ),
        ];
        for (policy, topic, source, upstream, original, chain) in cases {
            let ctx = format!("{policy:?} {topic:?}");
            assert_eq!(policy.topic_source(topic).as_deref(), *source, "{ctx}");
            assert_eq!(policy.upstream_topic(topic).as_deref(), *upstream, "{ctx}");
            assert_eq!(policy.original_topic(topic), *original, "{ctx}");
            assert_eq!(policy.source_chain(topic), *chain, "{ctx}");
        }
    }

    #[test]
    fn cycles() {
        let cases: &[(ReplicationPolicy, &str, &str, bool)] = &[
            (dot(), "x", "A", false),
            (dot(), "A.x", "A", true),
            (dot(), "A.x", "B", false),
            (dot(), "B.A.x", "A", true),
            (dot(), "B.A.x", "B", true),
            (dot(), "B.A.x", "C", false),
            (dot(), "cluster_a.global_iot", "cluster_a", true),
            (dot(), "cluster_b.x", "cluster_b", true),
            (dot(), "cluster_b.heartbeats", "cluster_b", true),
            (dot(), "heartbeats", "cluster_b", false),
            // Prefix of an alias is not that alias.
            (dot(), "cluster_ab.x", "cluster_a", false),
            (sep("_"), "cluster_a.x", "cluster", true),
            (sep("_"), "cluster_a.x", "cluster_a", false),
            (ReplicationPolicy::Identity, "x", "A", false),
            (ReplicationPolicy::Identity, "A.x", "A", false),
            (ReplicationPolicy::Identity, "A.heartbeats", "A", true),
            (ReplicationPolicy::Identity, "B.A.heartbeats", "A", true),
            (ReplicationPolicy::Identity, "heartbeats", "A", false),
        ];
        for (policy, topic, target, want) in cases {
            assert_eq!(
                policy.would_cycle(topic, target),
                *want,
                "{policy:?} {topic} -> {target}"
            );
            let in_chain = policy.source_chain(topic).iter().any(|s| s == target);
            assert_eq!(in_chain, *want, "{policy:?} {topic} -> {target}");
        }
    }

    #[test]
    fn hops() {
        assert_eq!(dot().hops_from("A.heartbeats", "A"), Some(1));
        assert_eq!(dot().hops_from("B.A.heartbeats", "A"), Some(2));
        assert_eq!(dot().hops_from("B.A.heartbeats", "B"), Some(1));
        assert_eq!(dot().hops_from("B.A.heartbeats", "C"), None);
        assert_eq!(dot().hops_from("heartbeats", "A"), None);
        assert_eq!(dot().hops_from("A.B.A.x", "A"), Some(1));
        assert_eq!(
            ReplicationPolicy::Identity.hops_from("B.A.heartbeats", "A"),
            Some(2)
        );
    }

    fn hop(source: &str, target: &str, prefix: &str) -> MirrorHop {
        MirrorHop {
            source: source.into(),
            target: target.into(),
            prefix: prefix.into(),
        }
    }

    #[test]
    fn mirror_loops_through_prefixes() {
        // Active-active: west -> east as `west.`, east -> west as `east.`.
        let pair = [hop("west", "east", "west."), hop("east", "west", "east.")];
        let cycles = |source, target, topic| mirror_would_cycle(&pair, source, target, topic);
        assert!(cycles("east", "west", "west.trades"));
        assert!(cycles("west", "east", "east.payments"));
        assert!(!cycles("west", "east", "trades"));
        assert!(!cycles("east", "west", "payments"));
        assert!(!cycles("east", "west", "east.local"), "east's own prefix");
        assert!(
            !cycles("east", "west", "west."),
            "the prefix alone is no topic"
        );
        // A -> B (`a.`), B -> C (`b.`), C -> A: `b.a.x` on C came from A over two hops.
        let ring = [
            hop("A", "B", "a."),
            hop("B", "C", "b."),
            hop("C", "A", "c."),
        ];
        assert!(mirror_would_cycle(&ring, "C", "A", "b.a.x"));
        assert!(mirror_would_cycle(&ring, "C", "B", "b.a.x"));
        assert!(!mirror_would_cycle(&ring, "C", "A", "b.x"), "from B only");
        assert!(mirror_would_cycle(&ring, "C", "B", "b.x"));
        assert!(!mirror_would_cycle(&ring, "C", "A", "a.x"), "no hop A -> C");
        assert!(mirror_would_cycle(&ring, "A", "B", "c.b.x"));
        // Around the ring more than once: still found, and the walk ends.
        assert!(mirror_would_cycle(&ring, "A", "C", "c.b.a.c.b.a.x"));
        // Unprefixed hops are not followed: their names look local.
        let plain = [hop("west", "east", ""), hop("east", "west", "")];
        assert!(!mirror_would_cycle(&plain, "east", "west", "trades"));
        // Several hops into one cluster whose prefixes both match: each is followed.
        let two = [
            hop("X", "S", "p."),
            hop("T", "S", "p.q."),
            hop("S", "T", "s."),
        ];
        assert!(mirror_would_cycle(&two, "S", "T", "p.q.x"));
        assert!(!mirror_would_cycle(&two, "S", "T", "p.x"));
        assert!(!mirror_would_cycle(&[], "S", "T", "p.x"));
    }

    #[test]
    fn checkpoint_topics_follow_mm2_renaming() {
        // Group on A consumes `x`: checkpoint on B names `A.x`.
        assert_eq!(dot().checkpoint_target_topic("A", "B", "x"), "A.x");
        // Group on A consumes `B.x` (came from B): checkpoint on B names `x` (failback).
        assert_eq!(dot().checkpoint_target_topic("A", "B", "B.x"), "x");
        assert_eq!(dot().checkpoint_target_topic("A", "B", "B.C.x"), "x");
        assert_eq!(dot().checkpoint_target_topic("A", "B", "C.x"), "A.C.x");
        assert_eq!(
            ReplicationPolicy::Identity.checkpoint_target_topic("A", "B", "x"),
            "x"
        );
    }

    /// Separators and aliases for which `<alias><sep>` has its first separator right after the
    /// alias, so the remote name parses back unambiguously.
    fn alias_for(sep: &'static str) -> impl Strategy<Value = String> {
        "[a-zA-Z0-9_.-]{1,12}".prop_filter("first separator must follow the alias", move |a| {
            format!("{a}{sep}").find(sep) == Some(a.len())
        })
    }

    fn separator() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec![".", "_", "-", "--", "::", ".."])
    }

    /// Kafka-legal topic names that are not made only of separators (MM2 would not parse those).
    fn topic_for(sep: &'static str) -> impl Strategy<Value = String> {
        "[a-zA-Z0-9._-]{1,40}".prop_filter("not only separators", move |t| {
            !t.split(sep).all(str::is_empty)
        })
    }

    proptest! {
        #[test]
        fn remote_names_round_trip(
            (sep_str, alias, topic) in separator()
                .prop_flat_map(|s| (Just(s), alias_for(s), topic_for(s)))
        ) {
            let policy = sep(sep_str);
            let remote = policy.remote_topic(&alias, &topic);
            prop_assert_eq!(policy.topic_source(&remote), Some(alias.clone()));
            prop_assert_eq!(policy.upstream_topic(&remote), Some(topic.clone()));
            prop_assert!(policy.would_cycle(&remote, &alias));
            let chain = policy.source_chain(&remote);
            prop_assert_eq!(chain.first(), Some(&alias));
        }

        #[test]
        fn multi_hop_chains_round_trip(
            aliases in prop::collection::vec("[a-z0-9_-]{1,8}", 1..5),
            topic in "[a-z0-9_-]{1,20}",
            other in "[a-z0-9_-]{1,8}",
        ) {
            let policy = dot();
            // Replicate from aliases[last] outwards: the nearest source is aliases[0].
            let mut name = topic.clone();
            for alias in aliases.iter().rev() {
                name = policy.remote_topic(alias, &name);
            }
            prop_assert_eq!(policy.source_chain(&name), aliases.clone());
            prop_assert_eq!(policy.original_topic(&name), topic);
            for alias in &aliases {
                prop_assert!(policy.would_cycle(&name, alias));
            }
            prop_assert_eq!(policy.would_cycle(&name, &other), aliases.contains(&other));
        }

        #[test]
        fn identity_keeps_names_except_heartbeats(alias in "[a-z0-9_-]{1,8}", topic in "[a-z0-9._-]{1,30}") {
            let policy = ReplicationPolicy::Identity;
            let remote = policy.remote_topic(&alias, &topic);
            if topic.ends_with("heartbeats") {
                prop_assert_eq!(remote, format!("{alias}.{topic}"));
            } else {
                prop_assert_eq!(&remote, &topic);
                prop_assert!(!policy.would_cycle(&remote, &alias));
            }
        }

        #[test]
        fn mirror_chains_are_found_from_every_cluster_on_them(
            prefixes in prop::collection::vec("[a-z0-9._-]{1,5}", 1..6),
            topic in "[a-zA-Z0-9._-]{1,20}",
            other in prop::collection::vec("[a-z0-9._-]{0,4}", 0..4),
        ) {
            // c0 -> c1 -> ... -> cn, hop i with prefixes[i]; `topic` produced on c0. Other
            // flows (from cluster zN, any prefix, empty too) never hide the chain.
            let c = |i: usize| format!("c{i}");
            let mut hops: Vec<MirrorHop> = prefixes
                .iter()
                .enumerate()
                .map(|(i, p)| hop(&c(i), &c(i + 1), p))
                .collect();
            for (j, p) in other.iter().enumerate() {
                hops.push(hop(&format!("z{j}"), &c(j % (prefixes.len() + 1)), p));
            }
            let mut name = topic.clone();
            for (i, p) in prefixes.iter().enumerate() {
                name = format!("{p}{name}");
                let here = c(i + 1);
                for back in 0..=i {
                    prop_assert!(mirror_would_cycle(&hops, &here, &c(back), &name), "{name} on {here} from c{back}");
                }
            }
        }

        #[test]
        fn a_name_no_prefix_starts_is_never_a_loop(
            prefixes in prop::collection::vec("[a-z]{1,4}\\.", 1..5),
            topic in "[A-Z0-9_-][a-zA-Z0-9._-]{0,20}",
        ) {
            // Prefixes in lower case and a dot; the topic starts with none of them.
            let hops: Vec<MirrorHop> = prefixes
                .iter()
                .enumerate()
                .flat_map(|(i, p)| [hop("S", &format!("T{i}"), p), hop(&format!("T{i}"), "S", p)])
                .collect();
            for i in 0..prefixes.len() {
                let target = format!("T{}", i);
                prop_assert!(!mirror_would_cycle(&hops, "S", &target, &topic), "{} {}", topic, target);
            }
        }

        #[test]
        fn the_mirror_walk_never_panics_and_ends(
            edges in prop::collection::vec((0u8..4, 0u8..4, "[ab.]{0,3}"), 0..12),
            topic in "[ab.]{0,40}",
            s in 0u8..4,
            t in 0u8..4,
        ) {
            let hops: Vec<MirrorHop> = edges
                .iter()
                .map(|(a, b, p)| hop(&a.to_string(), &b.to_string(), p))
                .collect();
            let _ = mirror_would_cycle(&hops, &s.to_string(), &t.to_string(), &topic);
        }

        #[test]
        fn parsing_never_panics_and_terminates(topic in ".{0,60}", s in ".{0,3}") {
            let policy = sep(&s);
            let chain = policy.source_chain(&topic);
            prop_assert!(chain.len() <= topic.len());
            let _ = policy.original_topic(&topic);
            let _ = policy.would_cycle(&topic, "A");
            let _ = ReplicationPolicy::Identity.source_chain(&topic);
        }
    }
}
