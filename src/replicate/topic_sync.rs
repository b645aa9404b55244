//! A flow's remote topics kept in step with their source topics while it runs: topic configs
//! (MirrorMaker 2's `sync.topic.configs.enabled`, Cluster Linking's topic config sync) and
//! topic ACLs (MirrorMaker 2's `sync.topic.acls.enabled`, Cluster Linking's ACL sync), each on
//! its own interval. A mirror flow syncs only its live mirror topics: one promoted or failed
//! over is an ordinary topic whose settings are its own. A control task of its own beside the
//! data path and the duties: its requests go over the clusters' control connections and never
//! delay a Fetch or a Produce.
//!
//! Configs: the settings strait copies when it creates a remote topic
//! ([`REPLICABLE_CONFIGS`], the source topic's own values, and [`EFFECTIVE_CONFIGS`] whatever
//! their origin), less MirrorMaker 2's default exclusions ([`EXCLUDED_CONFIGS`]), are made equal
//! with IncrementalAlterConfigs: a value the source topic sets is set on the remote topic, and a
//! value the remote topic sets that the source topic does not is removed (the target's default
//! applies, as MirrorMaker 2 does with `use.defaults.from = target`).
//!
//! ACLs, as MirrorMaker 2's `MirrorSourceConnector.syncTopicAcls`: every literal ACL on a topic
//! the flow replicates is created on the remote topic, except ALLOW WRITE (only strait writes
//! there); ALLOW ALL becomes ALLOW READ. ACLs are only added, never removed.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_protocol::messages::ApiKey;

use super::flow::{EFFECTIVE_CONFIGS, REPLICABLE_CONFIGS};
use super::lists::{self, ListKind, Lists};
use super::membership::Ownership;
use super::mirrors;
use crate::client::admin::acl;
use crate::client::{AclBinding, Cluster, ConfigOp};
use crate::config::{FlowConfig, FlowMode};
use crate::error::{Error, ErrorKind, Result};
use crate::filter::{topic_should_replicate, NameFilter};
use crate::naming::{Mm2Topics, ReplicationPolicy};
use crate::observe::Observer;
use crate::protocol::error_code;
use crate::Shutdown;

/// Topic configs MirrorMaker 2 never syncs by default (`DefaultConfigPropertyFilter`'s
/// `config.properties.exclude`); strait does not sync them either.
pub const EXCLUDED_CONFIGS: &[&str] = &[
    "follower.replication.throttled.replicas",
    "leader.replication.throttled.replicas",
    "message.timestamp.difference.max.ms",
    "message.timestamp.type",
    "unclean.leader.election.enable",
    "min.insync.replicas",
];

/// How soon after the start the first passes run (or sooner, with a shorter interval): the
/// flow creates its remote topics meanwhile.
const FIRST_PASS: Duration = Duration::from_secs(5);

/// The configs the sync keeps equal: those copied at creation, less [`EXCLUDED_CONFIGS`].
pub fn synced_configs() -> impl Iterator<Item = &'static str> {
    REPLICABLE_CONFIGS
        .iter()
        .copied()
        .filter(|c| !EXCLUDED_CONFIGS.contains(c))
}

/// The changes that make a remote topic's [`synced_configs`] follow its source topic's.
/// `source` and `target` are (name, value, set on the topic itself) as DescribeConfigs
/// answers them ([`Cluster::describe_topic_overrides`]).
pub fn config_changes(
    source: &[(String, String, bool)],
    target: &[(String, String, bool)],
) -> Vec<ConfigOp> {
    let index = |configs: &[(String, String, bool)]| -> HashMap<String, (String, bool)> {
        configs
            .iter()
            .map(|(k, v, own)| (k.clone(), (v.clone(), *own)))
            .collect()
    };
    let (src, dst) = (index(source), index(target));
    let mut ops = Vec::new();
    for name in synced_configs() {
        let want = match src.get(name) {
            Some((v, own)) if *own || EFFECTIVE_CONFIGS.contains(&name) => Some(v),
            _ => None,
        };
        let have = dst.get(name);
        match want {
            Some(v) if have.map(|h| &h.0) != Some(v) => ops.push(ConfigOp::Set {
                name: name.to_string(),
                value: v.clone(),
            }),
            None if have.is_some_and(|h| h.1) => ops.push(ConfigOp::Delete {
                name: name.to_string(),
            }),
            _ => {}
        }
    }
    ops
}

/// The ACL MirrorMaker 2 creates on the target for a source topic ACL
/// (`MirrorSourceConnector.shouldReplicateAcl` and `targetAclBinding`), on the remote topic
/// `remote`; `None` for one it does not copy: other than a literal topic name, the wildcard
/// `*` (it would name no topic on the target), or ALLOW WRITE.
pub fn target_acl(binding: &AclBinding, remote: &str) -> Option<AclBinding> {
    let literal_topic = binding.resource_type == acl::RESOURCE_TOPIC
        && binding.pattern_type == acl::PATTERN_LITERAL;
    let allow = binding.permission == acl::PERMISSION_ALLOW;
    if !literal_topic
        || binding.resource_name == "*"
        || (allow && binding.operation == acl::OP_WRITE)
    {
        return None;
    }
    let operation = if allow && binding.operation == acl::OP_ALL {
        acl::OP_READ
    } else {
        binding.operation
    };
    Some(AclBinding {
        resource_name: remote.to_string(),
        operation,
        ..binding.clone()
    })
}

/// The config and ACL sync of one replicate flow.
pub struct TopicSync {
    cfg: FlowConfig,
    source: Arc<Cluster>,
    target: Arc<Cluster>,
    policy: ReplicationPolicy,
    mm2: Mm2Topics,
    ownership: Option<Arc<Ownership>>,
    obs: Arc<Observer>,
    /// What was reported once: a cluster without an authorizer, or without an API.
    reported: BTreeSet<String>,
    /// Mirror flows: the mirror topics not ended (promoted or failed over), read at each pass.
    live_mirrors: Option<BTreeSet<String>>,
}

impl TopicSync {
    /// The sync task of the flow `cfg`, or `None` when both syncs are turned off.
    pub fn new(
        cfg: FlowConfig,
        source: Arc<Cluster>,
        target: Arc<Cluster>,
        ownership: Option<Arc<Ownership>>,
        obs: Arc<Observer>,
    ) -> Option<TopicSync> {
        if !(cfg.sync_topic_configs || cfg.sync_topic_acls) {
            return None;
        }
        Some(TopicSync {
            policy: cfg.replication_policy(),
            mm2: cfg.mm2_topic_names(),
            cfg,
            source,
            target,
            ownership,
            obs,
            reported: BTreeSet::new(),
            live_mirrors: None,
        })
    }

    fn name(&self) -> String {
        self.cfg.name()
    }

    /// Whether this instance does the flow's duties and may write now (scale-out: it owns the
    /// duties unit and its membership lease is valid), as for heartbeats and checkpoints.
    fn active(&self) -> bool {
        let mirror = self.cfg.mode == FlowMode::Mirror;
        Ownership::does_duties(self.ownership.as_deref(), &self.name(), mirror)
    }

    /// Mirror flows: reads which mirror topics are live now.
    async fn read_live_mirrors(&mut self) -> Result<()> {
        if self.cfg.mode != FlowMode::Mirror {
            return Ok(());
        }
        let view =
            mirrors::read_view(&self.target, self.source.name(), &self.cfg.link_name()).await?;
        self.live_mirrors = Some(
            view.records
                .values()
                .filter(|r| !r.state.is_stopped())
                .map(|r| r.topic.clone())
                .collect(),
        );
        Ok(())
    }

    /// Runs until `shutdown` turns true.
    pub async fn run(mut self, shutdown: Shutdown) {
        let start = Instant::now();
        let first = |on: bool, every: Duration| on.then(|| start + every.min(FIRST_PASS));
        let mut next_configs = first(
            self.cfg.sync_topic_configs,
            self.cfg.sync_topic_configs_interval,
        );
        let mut next_acls = first(self.cfg.sync_topic_acls, self.cfg.sync_topic_acls_interval);
        while !shutdown.is_stopped() {
            if next_configs.is_some_and(|t| Instant::now() >= t) {
                if self.active() {
                    if let Err(e) = self.sync_configs().await {
                        tracing::warn!(flow = %self.name(), "topic config sync failed: {e}");
                        self.obs.error(&self.name(), "topic_config_sync");
                    }
                }
                next_configs = Some(Instant::now() + self.cfg.sync_topic_configs_interval);
            }
            if next_acls.is_some_and(|t| Instant::now() >= t) {
                if self.active() {
                    if let Err(e) = self.sync_acls().await {
                        tracing::warn!(flow = %self.name(), "topic ACL sync failed: {e}");
                        self.obs.error(&self.name(), "topic_acl_sync");
                    }
                }
                next_acls = Some(Instant::now() + self.cfg.sync_topic_acls_interval);
            }
            let Some(wake) = [next_configs, next_acls].into_iter().flatten().min() else {
                return;
            };
            tokio::select! {
                _ = tokio::time::sleep_until(wake.into()) => {}
                _ = shutdown.stopped() => {}
            }
        }
    }

    /// The flow's topic selection: the lists stored at runtime, else the configured ones.
    async fn topic_filter(&self) -> Result<NameFilter> {
        let (src, dst) = (self.source.name(), self.target.name());
        let lists = lists::read(&self.target, ListKind::Topics, src, dst)
            .await?
            .unwrap_or_else(|| Lists {
                include: self.cfg.topics.clone(),
                exclude: self.cfg.topics_exclude.clone(),
            });
        NameFilter::new(&lists.include, &lists.exclude).map_err(|e| {
            Error::invalid(format!(
                "bad topic regex in the lists of {}: {e}",
                self.name()
            ))
        })
    }

    /// The name on the target of the source topic `topic`: a mirror flow's mirror topic, or the
    /// naming policy's remote topic.
    fn remote_topic(&self, topic: &str) -> String {
        match self.cfg.mode {
            FlowMode::Mirror => self.cfg.mirror_topic(topic),
            FlowMode::Replicate => self.policy.remote_topic(self.source.name(), topic),
        }
    }

    /// Whether the flow replicates a source topic of this name (as the data path decides).
    fn replicates(&self, filter: &NameFilter, topic: &str) -> bool {
        let (policy, mm2) = (&self.policy, &self.mm2);
        topic_should_replicate(filter, policy, mm2, topic, self.target.name()).replicate()
            && self
                .live_mirrors
                .as_ref()
                .is_none_or(|live| live.contains(topic))
    }

    /// One config pass over the replicated topics whose remote topic exists; a topic that
    /// fails is logged and the others go on. Returns how many topics were changed.
    async fn sync_configs(&mut self) -> Result<usize> {
        if let Err(e) = self
            .target
            .negotiated(ApiKey::IncrementalAlterConfigs)
            .await
        {
            let target = self.target.name().to_string();
            return if self.unsupported(&target, "IncrementalAlterConfigs", &e) {
                Ok(0)
            } else {
                Err(e)
            };
        }
        let filter = self.topic_filter().await?;
        self.read_live_mirrors().await?;
        let meta = self.source.metadata(None).await?;
        let mut changed = 0;
        for t in meta
            .topics
            .iter()
            .filter(|t| t.error_code == error_code::NONE && !t.is_internal)
        {
            if !self.replicates(&filter, &t.name) {
                continue;
            }
            let remote = self.remote_topic(&t.name);
            match self.sync_topic_configs(&t.name, &remote).await {
                Ok(true) => changed += 1,
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(flow = %self.name(), topic = %t.name, %remote, "cannot sync topic configs: {e}");
                    self.obs.error(&self.name(), "topic_config_sync");
                }
            }
        }
        tracing::debug!(flow = %self.name(), changed, "topic config pass done");
        Ok(changed)
    }

    /// Makes `remote`'s synced configs follow `topic`'s; whether anything changed.
    async fn sync_topic_configs(&self, topic: &str, remote: &str) -> Result<bool> {
        if !self.active() || self.target.topic(remote).await?.is_none() {
            return Ok(false); // not created yet: the flow creates it with the source's configs
        }
        let source = self.source.describe_topic_overrides(topic).await?;
        let target = self.target.describe_topic_overrides(remote).await?;
        let ops = config_changes(&source, &target);
        if ops.is_empty() {
            return Ok(false);
        }
        self.target.alter_topic_configs(remote, &ops).await?;
        let what: Vec<String> = ops
            .iter()
            .map(|op| match op {
                ConfigOp::Set { name, value } => format!("{name}={value}"),
                ConfigOp::Delete { name } => format!("{name} (removed)"),
            })
            .collect();
        tracing::info!(flow = %self.name(), %topic, %remote, configs = %what.join(", "), "synced topic configs from the source topic");
        Ok(true)
    }

    /// Whether `e` says `cluster` does not offer the API `what`; reported once.
    fn unsupported(&mut self, cluster: &str, what: &str, e: &Error) -> bool {
        if !matches!(e.kind, ErrorKind::UnsupportedVersion { .. }) {
            return false;
        }
        if self.reported.insert(format!("{cluster}|{what}")) {
            tracing::warn!(flow = %self.name(), %cluster, "the cluster does not offer {what}, so this is not synced: {e}");
        }
        true
    }

    /// The topic ACLs of `cluster`, or `None` (reported once) when it has no authorizer or
    /// does not offer DescribeAcls.
    async fn topic_acls(&mut self, cluster: &Cluster) -> Result<Option<Vec<AclBinding>>> {
        let acls = match cluster.describe_topic_acls().await {
            Ok(acls) => acls,
            Err(e) if self.unsupported(cluster.name(), "DescribeAcls", &e) => return Ok(None),
            Err(e) => return Err(e),
        };
        if acls.is_none()
            && self
                .reported
                .insert(format!("{}|authorizer", cluster.name()))
        {
            tracing::info!(flow = %self.name(), cluster = %cluster.name(), "the cluster has no authorizer: no topic ACLs to sync (set sync_topic_acls = false to stop asking)");
        }
        Ok(acls)
    }

    /// One ACL pass: the source's topic ACLs that the target lacks are created there. Returns
    /// how many were created.
    async fn sync_acls(&mut self) -> Result<usize> {
        let source = Arc::clone(&self.source);
        let Some(acls) = self.topic_acls(&source).await? else {
            return Ok(0);
        };
        let filter = self.topic_filter().await?;
        self.read_live_mirrors().await?;
        let wanted: BTreeSet<AclBinding> = acls
            .iter()
            .filter(|b| self.replicates(&filter, &b.resource_name))
            .filter_map(|b| {
                let remote = self.remote_topic(&b.resource_name);
                target_acl(b, &remote)
            })
            .collect();
        if wanted.is_empty() {
            return Ok(0);
        }
        let target = Arc::clone(&self.target);
        let Some(existing) = self.topic_acls(&target).await? else {
            return Ok(0);
        };
        let existing: BTreeSet<AclBinding> = existing.into_iter().collect();
        let missing: Vec<AclBinding> = wanted.difference(&existing).cloned().collect();
        if missing.is_empty() || !self.active() {
            return Ok(0);
        }
        self.target.create_acls(&missing).await?;
        for b in &missing {
            tracing::info!(flow = %self.name(), topic = %b.resource_name, principal = %b.principal, host = %b.host, operation = b.operation, permission = b.permission, "copied a topic ACL from the source");
        }
        Ok(missing.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(name: &str, value: &str, own: bool) -> (String, String, bool) {
        (name.to_string(), value.to_string(), own)
    }

    fn set(name: &str, value: &str) -> ConfigOp {
        ConfigOp::Set {
            name: name.into(),
            value: value.into(),
        }
    }

    #[test]
    fn exclusions_are_mirrormaker2_defaults() {
        // DefaultConfigPropertyFilter.CONFIG_PROPERTIES_EXCLUDE_DEFAULT of Kafka 4.1.1.
        assert_eq!(EXCLUDED_CONFIGS.len(), 6);
        let synced: Vec<&str> = synced_configs().collect();
        assert!(synced.contains(&"retention.ms") && synced.contains(&"cleanup.policy"));
        assert!(!synced.contains(&"message.timestamp.type"));
        assert!(!synced.contains(&"message.timestamp.difference.max.ms"));
    }

    #[test]
    fn own_values_are_set_and_others_removed() {
        let source = [
            c("retention.ms", "1000", true),
            c("segment.ms", "604800000", false),
            c("cleanup.policy", "compact", true),
            c("max.message.bytes", "1048588", false),
            c("message.timestamp.type", "LogAppendTime", true),
            c("min.insync.replicas", "2", true),
        ];
        let target = [
            c("retention.ms", "5000", true),
            c("segment.ms", "3600000", true),
            c("retention.bytes", "-1", false),
            c("cleanup.policy", "delete", true),
            c("max.message.bytes", "1048588", false),
            c("message.timestamp.type", "CreateTime", false),
            c("min.insync.replicas", "1", false),
        ];
        let mut ops = config_changes(&source, &target);
        ops.sort();
        assert_eq!(
            ops,
            vec![
                set("cleanup.policy", "compact"),
                set("retention.ms", "1000"),
                ConfigOp::Delete {
                    name: "segment.ms".into()
                },
            ]
        );
    }

    #[test]
    fn effective_values_count_for_the_configs_copied_whatever_their_origin() {
        // The source broker's default max.message.bytes is larger than the target's.
        let source = [c("max.message.bytes", "4194304", false)];
        let target = [c("max.message.bytes", "1048588", false)];
        assert_eq!(
            config_changes(&source, &target),
            vec![set("max.message.bytes", "4194304")]
        );
        // Equal already: nothing to do, however each side got its value.
        let target = [c("max.message.bytes", "4194304", true)];
        assert!(config_changes(&source, &target).is_empty());
    }

    fn binding(name: &str, pattern: i8, op: i8, permission: i8) -> AclBinding {
        AclBinding {
            resource_type: acl::RESOURCE_TOPIC,
            resource_name: name.into(),
            pattern_type: pattern,
            principal: "User:alice".into(),
            host: "*".into(),
            operation: op,
            permission,
        }
    }

    #[test]
    fn acls_follow_mirrormaker2() {
        let lit = acl::PATTERN_LITERAL;
        let allow = acl::PERMISSION_ALLOW;
        let deny = acl::PERMISSION_DENY;
        let read = binding("t", lit, acl::OP_READ, allow);
        assert_eq!(
            target_acl(&read, "a.t"),
            Some(binding("a.t", lit, acl::OP_READ, allow))
        );
        let describe = binding("t", lit, acl::OP_DESCRIBE, allow);
        assert_eq!(
            target_acl(&describe, "a.t"),
            Some(binding("a.t", lit, acl::OP_DESCRIBE, allow))
        );
        assert_eq!(
            target_acl(&binding("t", lit, acl::OP_ALL, allow), "a.t"),
            Some(binding("a.t", lit, acl::OP_READ, allow))
        );
        assert_eq!(
            target_acl(&binding("t", lit, acl::OP_WRITE, allow), "a.t"),
            None
        );
        // Denials are copied as they are, DENY WRITE and DENY ALL included.
        assert_eq!(
            target_acl(&binding("t", lit, acl::OP_WRITE, deny), "a.t"),
            Some(binding("a.t", lit, acl::OP_WRITE, deny))
        );
        assert_eq!(
            target_acl(&binding("t", lit, acl::OP_ALL, deny), "a.t"),
            Some(binding("a.t", lit, acl::OP_ALL, deny))
        );
        assert_eq!(
            target_acl(
                &binding("t", acl::PATTERN_PREFIXED, acl::OP_READ, allow),
                "a.t"
            ),
            None
        );
        assert_eq!(
            target_acl(&binding("*", lit, acl::OP_READ, allow), "a.*"),
            None
        );
    }
}
