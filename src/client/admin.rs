//! Topic config and ACL requests of the control plane, encoded with `kafka-protocol`:
//! IncrementalAlterConfigs (KIP-339), DescribeAcls and CreateAcls (KIP-140, KIP-290 pattern
//! types). Any broker serves them (KRaft brokers forward changes to the controller).

use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::{
    CreateAclsRequest, DescribeAclsRequest, IncrementalAlterConfigsRequest,
};
use kafka_protocol::protocol::StrBytes;

use super::cluster::{Cluster, Route};
use crate::error::{Error, ErrorKind, Result};
use crate::protocol::error_code;

/// The codes ACL requests use for resource types, pattern types, operations and permissions
/// (Kafka's `ResourceType`, `PatternType`, `AclOperation`, `AclPermissionType`).
pub mod acl {
    /// Resource type: topic.
    pub const RESOURCE_TOPIC: i8 = 2;
    /// Pattern type filter: any pattern type.
    pub const PATTERN_ANY: i8 = 1;
    /// Pattern type: the resource name is literal.
    pub const PATTERN_LITERAL: i8 = 3;
    /// Pattern type: the resource name is a prefix.
    pub const PATTERN_PREFIXED: i8 = 4;
    /// Operation filter: any operation.
    pub const OP_ANY: i8 = 1;
    /// Operation: all operations.
    pub const OP_ALL: i8 = 2;
    /// Operation: read.
    pub const OP_READ: i8 = 3;
    /// Operation: write.
    pub const OP_WRITE: i8 = 4;
    /// Operation: describe.
    pub const OP_DESCRIBE: i8 = 8;
    /// Permission filter: any permission.
    pub const PERMISSION_ANY: i8 = 1;
    /// Permission: deny.
    pub const PERMISSION_DENY: i8 = 2;
    /// Permission: allow.
    pub const PERMISSION_ALLOW: i8 = 3;
}

/// One change of a topic config.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum ConfigOp {
    /// Set the config `name` to `value` on the topic.
    Set {
        /// The config.
        name: String,
        /// Its new value.
        value: String,
    },
    /// Remove the topic's own value of `name`: the broker's default applies again.
    Delete {
        /// The config.
        name: String,
    },
}

impl ConfigOp {
    /// The config this changes.
    pub fn name(&self) -> &str {
        match self {
            ConfigOp::Set { name, .. } | ConfigOp::Delete { name } => name,
        }
    }
}

/// An ACL binding: a resource pattern and an access control entry, in the wire codes of
/// [`acl`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AclBinding {
    /// Resource type ([`acl::RESOURCE_TOPIC`], ...).
    pub resource_type: i8,
    /// Resource name (a topic name, or a prefix with [`acl::PATTERN_PREFIXED`]).
    pub resource_name: String,
    /// Pattern type ([`acl::PATTERN_LITERAL`], [`acl::PATTERN_PREFIXED`]).
    pub pattern_type: i8,
    /// The principal, such as `User:alice`.
    pub principal: String,
    /// The host, `*` for any.
    pub host: String,
    /// The operation ([`acl::OP_READ`], ...).
    pub operation: i8,
    /// [`acl::PERMISSION_ALLOW`] or [`acl::PERMISSION_DENY`].
    pub permission: i8,
}

const TOPIC_RESOURCE: i8 = 2;
const OP_SET: i8 = 0;
const OP_DELETE: i8 = 1;

impl Cluster {
    /// Applies `ops` to the configs of `topic` (IncrementalAlterConfigs): the topic's other
    /// settings stay as they are.
    pub async fn alter_topic_configs(&self, topic: &str, ops: &[ConfigOp]) -> Result<()> {
        if ops.is_empty() {
            return Ok(());
        }
        let mut res = AlterConfigsResource::default();
        res.resource_type = TOPIC_RESOURCE;
        res.resource_name = StrBytes::from_string(topic.to_string());
        res.configs = ops
            .iter()
            .map(|op| {
                let mut c = AlterableConfig::default();
                c.name = StrBytes::from_string(op.name().to_string());
                match op {
                    ConfigOp::Set { value, .. } => {
                        c.config_operation = OP_SET;
                        c.value = Some(StrBytes::from_string(value.clone()));
                    }
                    ConfigOp::Delete { .. } => {
                        c.config_operation = OP_DELETE;
                        c.value = None;
                    }
                }
                c
            })
            .collect();
        let mut req = IncrementalAlterConfigsRequest::default();
        req.resources = vec![res];
        let (_, resp) = self.send(Route::Any, &req).await?;
        let r = self.only("IncrementalAlterConfigs", resp.responses.first())?;
        self.topic_outcome(r.error_code, r.error_message.as_ref(), topic)
    }

    /// Every ACL binding on a topic resource (DescribeAcls), or `None` when the cluster has no
    /// authorizer (it answers SECURITY_DISABLED).
    pub async fn describe_topic_acls(&self) -> Result<Option<Vec<AclBinding>>> {
        let mut req = DescribeAclsRequest::default();
        req.resource_type_filter = acl::RESOURCE_TOPIC;
        req.resource_name_filter = None;
        req.pattern_type_filter = acl::PATTERN_ANY;
        req.principal_filter = None;
        req.host_filter = None;
        req.operation = acl::OP_ANY;
        req.permission_type = acl::PERMISSION_ANY;
        let (_, resp) = self.send(Route::Any, &req).await?;
        match resp.error_code {
            error_code::NONE => {}
            error_code::SECURITY_DISABLED => return Ok(None),
            code => {
                return Err(self.ctx(Error::broker(
                    code,
                    resp.error_message.as_ref().map(|m| m.to_string()),
                )))
            }
        }
        let mut out = Vec::new();
        for r in &resp.resources {
            for a in &r.acls {
                out.push(AclBinding {
                    resource_type: r.resource_type,
                    resource_name: r.resource_name.to_string(),
                    pattern_type: r.pattern_type,
                    principal: a.principal.to_string(),
                    host: a.host.to_string(),
                    operation: a.operation,
                    permission: a.permission_type,
                });
            }
        }
        Ok(Some(out))
    }

    /// Creates `bindings` (CreateAcls; one that exists already is left as it is). The first
    /// binding the cluster refuses is the error.
    pub async fn create_acls(&self, bindings: &[AclBinding]) -> Result<()> {
        if bindings.is_empty() {
            return Ok(());
        }
        let mut req = CreateAclsRequest::default();
        req.creations = bindings
            .iter()
            .map(|b| {
                let mut c = AclCreation::default();
                c.resource_type = b.resource_type;
                c.resource_name = StrBytes::from_string(b.resource_name.clone());
                c.resource_pattern_type = b.pattern_type;
                c.principal = StrBytes::from_string(b.principal.clone());
                c.host = StrBytes::from_string(b.host.clone());
                c.operation = b.operation;
                c.permission_type = b.permission;
                c
            })
            .collect();
        let (_, resp) = self.send(Route::Any, &req).await?;
        for (b, r) in bindings.iter().zip(&resp.results) {
            self.topic_outcome(r.error_code, r.error_message.as_ref(), &b.resource_name)?;
        }
        if resp.results.len() != bindings.len() {
            return Err(self.ctx(Error::new(ErrorKind::Protocol(format!(
                "CreateAcls answered {} results for {} bindings",
                resp.results.len(),
                bindings.len()
            )))));
        }
        Ok(())
    }
}
