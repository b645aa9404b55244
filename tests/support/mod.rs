//! Shared integration-test harness. Use from a test file with `mod support;`.
//!
//! - [`broker`]: a one-node Apache Kafka cluster per `Broker` (`Broker::start`,
//!   `Broker::start_behind_proxy`).
//! - [`kafka`]: Apache Kafka clusters of any size or with secured listeners, optionally behind
//!   the proxy.
//! - [`proxy`]: `ProduceCheckProxy`, a forwarding proxy that checks Kafka's produce rules.
//! - [`leaders`]: `SplitLeaders`, one broker posing as two leaders (Metadata rewritten).
//! - [`data`]: rdkafka helpers (topic names, create topics, produce, consume).
//! - [`records`]: record-batch parsing and an independent batch builder (CRC via `crc`).
//! - [`wire`]: Kafka framing helpers and an ApiVersions probe.
//! - [`certs`]: test certificates generated at test time (CA, server, client, unrelated CA).
//! - [`cli`]: strait commands from a test, their output, `assert_no_secret`.
//! - [`stores`]: JKS and PKCS12 key and trust stores made at test time by the JDK's keytool.
//! - [`kdc`]: a test Kerberos realm (MIT KDC on a loopback port, principals, keytabs).
//! - [`java`]: Java programs of `tests/java/`, compiled against Apache Kafka's jars and run.
//! - [`load`]: continuous production, and the exactly-once check after it.
//! - [`oidc`]: an OIDC identity provider on loopback (token endpoint and JWKS, RS256).
#![allow(dead_code, unused_imports)]

pub mod broker;
pub mod certs;
pub mod cli;
pub mod data;
pub mod java;
pub mod kafka;
pub mod kdc;
pub mod leaders;
pub mod load;
pub mod oidc;
pub mod proxy;
pub mod records;
pub mod stores;
pub mod strait;
pub mod wire;

pub use broker::{Broker, BrokerOptions};
pub use certs::TestPki;
pub use data::{
    consume_all, create_topic, produce_records, topic_name, Codec, OwnedRecord, TestRecord,
};
pub use proxy::{ProduceCheckProxy, ProxyConfig};
pub use strait::StraitRun;
