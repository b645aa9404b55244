//! Checks on the names of the topics strait itself writes: its control and progress topics, and
//! MirrorMaker 2's heartbeats, checkpoints and offset-syncs topics as a flow names them. Each
//! is a legal Kafka topic name; internal topics stay internal (never replicated, by strait or
//! by MirrorMaker 2), and the heartbeats topic stays replicable.

use super::error::{ConfigError, FlowProv};
use super::{FlowConfig, InternalTopics, NamingPolicy};
use crate::mm2::HEARTBEATS_TOPIC;
use crate::naming::{SOURCE_PLACEHOLDER, TARGET_PLACEHOLDER};

/// What a Kafka topic name may be.
pub(super) const TOPIC_NAME_RULE: &str = "1 to 249 characters of a-z, A-Z, 0-9, `.`, `_`, `-`";

/// Checks a Kafka topic name; the problem in one line.
pub(super) fn check_topic_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 249 || name == "." || name == ".." {
        return Err(format!(
            "`{name}` is not a Kafka topic name (1 to 249 characters)"
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(format!(
            "`{name}` has `{c}`: Kafka topic names use letters, digits, `.`, `_` and `-`"
        ));
    }
    Ok(())
}

/// strait's own topic names on a cluster: legal Kafka topic names, different from each other,
/// and internal by MirrorMaker 2's name rule, so that neither strait nor MirrorMaker 2 ever
/// replicates them.
pub(super) fn check_internal_topics(t: &InternalTopics) -> Result<(), (&'static str, String)> {
    for (field, name) in [
        ("control_topic", &t.control),
        ("progress_topic", &t.progress),
    ] {
        check_topic_name(name).map_err(|p| (field, p))?;
        if !crate::naming::is_internal_topic(name) {
            return Err((
                field,
                format!("`{name}` would be replicated by strait and MirrorMaker 2: an internal topic name ends with `.internal` or `-internal` (or starts with `__` or `.`)"),
            ));
        }
    }
    if t.control == t.progress {
        return Err((
            "progress_topic",
            format!(
                "`{}` is the control topic too: give the two different names",
                t.progress
            ),
        ));
    }
    Ok(())
}

/// MirrorMaker 2's topics as the flow names them: legal names for the flow's aliases, three
/// different topics, the heartbeats topic not internal (it is replicated), and a renamed
/// heartbeats topic only with the default naming policy (identity naming tells heartbeats
/// topics apart by the name `heartbeats`).
pub(super) fn check_mm2_topics(
    file: &str,
    flow: &FlowConfig,
    prov: &FlowProv,
) -> Result<(), ConfigError> {
    let names = flow.mm2_topic_names();
    let heartbeats = names.heartbeats();
    let checkpoints = names.checkpoints(&flow.source);
    let offset_syncs = names.offset_syncs(&flow.target);
    let err = |field: &'static str, problem: String, allowed: &str| {
        Err(prov.at(field).error(file, problem).allowed(allowed))
    };
    for (field, name) in [
        ("heartbeats_topic", heartbeats),
        ("checkpoints_topic", checkpoints.as_str()),
        ("offset_syncs_topic", offset_syncs.as_str()),
    ] {
        if let Err(problem) = check_topic_name(name) {
            return err(field, problem, TOPIC_NAME_RULE);
        }
    }
    if heartbeats != HEARTBEATS_TOPIC && flow.naming == NamingPolicy::Identity {
        return err(
            "heartbeats_topic",
            format!("`{heartbeats}`: identity naming recognises heartbeats topics by the name `{HEARTBEATS_TOPIC}`"),
            "naming = \"default\" to rename the heartbeats topic, or no heartbeats_topic",
        );
    }
    if let NamingPolicy::Default { separator } = &flow.naming {
        if heartbeats.contains(separator.as_str()) {
            return err(
                "heartbeats_topic",
                format!("`{heartbeats}` holds the separator `{separator}`: a heartbeats topic is known by its name after the last alias, as in MirrorMaker 2, so this one would never be"),
                "a name without the separator",
            );
        }
    }
    if names.is_internal_topic(heartbeats) {
        return err(
            "heartbeats_topic",
            format!(
                "`{heartbeats}` is an internal topic name, and heartbeats topics are replicated"
            ),
            "a name that neither starts with `__` or `.` nor ends like an internal topic",
        );
    }
    if checkpoints == offset_syncs || heartbeats == checkpoints || heartbeats == offset_syncs {
        return err(
            "offset_syncs_topic",
            format!("heartbeats `{heartbeats}`, checkpoints `{checkpoints}` and offset syncs `{offset_syncs}` must be three topics"),
            &format!("patterns that differ, with {SOURCE_PLACEHOLDER} and {TARGET_PLACEHOLDER}"),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::config::parse_toml;

    fn flow_toml(keys: &str) -> String {
        format!(
            "[clusters.a]\nbootstrap_servers = \"h:1\"\n[clusters.b]\nbootstrap_servers = \"h:2\"\n\
             [[flows]]\nsource = \"a\"\ntarget = \"b\"\n{keys}\n"
        )
    }

    fn refused(keys: &str) -> String {
        match parse_toml(&flow_toml(keys), "t.toml") {
            Ok(_) => panic!("accepted: {keys}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn renamed_mm2_topics_are_read_and_used() {
        let config = parse_toml(
            &flow_toml(
                "separator = \"_\"\nheartbeats_topic = \"opshb\"\n\
                 checkpoints_topic = \"ops_cp_{source}\"\noffset_syncs_topic = \"ops_os_{target}\"",
            ),
            "t.toml",
        )
        .expect("valid");
        let names = config.flows[0].mm2_topic_names();
        assert_eq!(names.heartbeats(), "opshb");
        assert_eq!(names.checkpoints("a"), "ops_cp_a");
        assert_eq!(names.offset_syncs("b"), "ops_os_b");
        let config = parse_toml(
            &flow_toml("separator = \"_\"\ninternal_topic_separator = false"),
            "t.toml",
        )
        .expect("valid");
        let names = config.flows[0].mm2_topic_names();
        assert_eq!(names.checkpoints("a"), "a.checkpoints.internal");
        let names = parse_toml(&flow_toml("separator = \"_\""), "t.toml")
            .expect("valid")
            .flows[0]
            .mm2_topic_names();
        assert_eq!(names.checkpoints("a"), "a_checkpoints_internal");
    }

    #[test]
    fn bad_names_are_refused_with_the_key() {
        let e = refused("checkpoints_topic = \"ops.checkpoints\"");
        assert!(
            e.contains("flows[0].checkpoints_topic") && e.contains("{source}"),
            "{e}"
        );
        let e = refused("offset_syncs_topic = \"ops/{target}\"");
        assert!(
            e.contains("offset_syncs_topic") && e.contains("has `/`"),
            "{e}"
        );
        let e = refused("heartbeats_topic = \"hb-internal\"");
        assert!(
            e.contains("heartbeats_topic") && e.contains("replicated"),
            "{e}"
        );
        let e = refused("naming = \"identity\"\nheartbeats_topic = \"hb\"");
        assert!(e.contains("identity naming"), "{e}");
        let e = refused(
            "checkpoints_topic = \"{source}-b-sync\"\noffset_syncs_topic = \"a-{target}-sync\"",
        );
        assert!(e.contains("three topics"), "{e}");
        let e = refused("heartbeats_topic = \"ops.hb\"");
        assert!(e.contains("holds the separator `.`"), "{e}");
    }
}
