//! Wire conformance: strait's record and protocol code against bytes made by independent
//! encoders (kafka-python fixtures, the `kafka-protocol` crate, the `crc` crate), plus
//! malformed and random input.

mod fetch_by_id;
mod fetch_session;
mod fixtures;
mod frames;
mod malformed;
mod planner;
mod sasl;
