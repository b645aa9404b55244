//! Fixtures written by kafka-python (see fixtures/README.md) against `fixtures/manifest.json`.

use std::path::PathBuf;

use bytes::Bytes;
use serde_json::Value;
use strait::records::batch::{ATTRIBUTES, CRC, HEADER_LEN};
use strait::records::legacy::decode_legacy;
use strait::records::record::decode_records;
use strait::records::rules::{check_producible, Rule};
use strait::records::{split, Entry, HeaderRewrite, RecordBatch};

const LIMIT: usize = 64 * 1024 * 1024;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

fn manifest() -> Value {
    let text = std::fs::read_to_string(dir().join("manifest.json")).expect("manifest.json");
    serde_json::from_str(&text).expect("manifest parses")
}

fn load(name: &str) -> Bytes {
    Bytes::from(std::fs::read(dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}")))
}

fn hex(v: &Value) -> Option<Vec<u8>> {
    let s = v.as_str()?;
    Some(
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
            .collect(),
    )
}

/// The CRC-32C of the `crc` crate: a second implementation, independent of the code under test.
fn independent_crc32c(data: &[u8]) -> u32 {
    crc::Crc::<u32>::new(&crc::CRC_32_ISCSI).checksum(data)
}

fn entries(name: &str) -> Vec<Entry> {
    let mut it = split(load(name));
    let v: Vec<Entry> = it.by_ref().collect::<Result<_, _>>().expect("split");
    assert_eq!(it.truncated_tail(), 0, "{name}: no tail expected");
    v
}

#[test]
fn every_fixture_decodes_as_the_manifest_says() {
    let m = manifest();
    let files = m["files"].as_object().expect("files");
    let mut checked_records = 0;
    for (name, spec) in files {
        let got = entries(name);
        let batches = spec["batches"].as_array().expect("batches");
        assert_eq!(got.len(), batches.len(), "{name}: batch count");
        for (entry, want) in got.iter().zip(batches) {
            assert_eq!(
                entry.bytes().len() as u64,
                want["byte_length"].as_u64().unwrap(),
                "{name}: length"
            );
            match entry {
                Entry::V2(b) => {
                    assert_eq!(
                        b.base_offset(),
                        want["base_offset"].as_i64().unwrap(),
                        "{name}"
                    );
                    assert_eq!(
                        i64::from(b.attributes()),
                        want["attributes"].as_i64().unwrap(),
                        "{name}"
                    );
                    assert_eq!(
                        b.producer_id(),
                        want["producer_id"].as_i64().unwrap(),
                        "{name}"
                    );
                    assert_eq!(
                        i64::from(b.producer_epoch()),
                        want["producer_epoch"].as_i64().unwrap()
                    );
                    assert_eq!(
                        i64::from(b.base_sequence()),
                        want["base_sequence"].as_i64().unwrap()
                    );
                    assert_eq!(
                        i64::from(b.last_offset_delta()),
                        want["last_offset_delta"].as_i64().unwrap()
                    );
                    assert_eq!(
                        i64::from(b.records_count()),
                        want["record_count"].as_i64().unwrap()
                    );
                    assert_eq!(
                        u64::from(b.crc()),
                        want["crc"].as_u64().unwrap(),
                        "{name}: crc"
                    );
                    assert_eq!(
                        b.max_timestamp(),
                        want["max_timestamp"].as_i64().unwrap(),
                        "{name}"
                    );
                    assert_eq!(b.is_control(), want["is_control"].as_bool().unwrap());
                    assert_eq!(
                        b.is_transactional(),
                        want["is_transactional"].as_bool().unwrap()
                    );
                    b.verify_crc().expect("crc");
                    assert_eq!(b.crc(), independent_crc32c(&b.bytes()[ATTRIBUTES..]));
                    let Some(records) = want.get("records").and_then(Value::as_array) else {
                        continue;
                    };
                    let decoded =
                        decode_records(b, LIMIT).unwrap_or_else(|e| panic!("{name}: {e}"));
                    assert_eq!(decoded.len(), records.len(), "{name}: records");
                    for (r, w) in decoded.iter().zip(records) {
                        assert_eq!(
                            r.offset(b.base_offset()),
                            w["offset"].as_i64().unwrap(),
                            "{name}"
                        );
                        let ts = if b.is_log_append_time() {
                            b.max_timestamp()
                        } else {
                            r.timestamp(b.base_timestamp())
                        };
                        assert_eq!(ts, w["timestamp"].as_i64().unwrap(), "{name}: timestamp");
                        assert_eq!(
                            r.key.as_deref().map(<[u8]>::to_vec),
                            hex(&w["key"]),
                            "{name}: key"
                        );
                        assert_eq!(
                            r.value.as_deref().map(<[u8]>::to_vec),
                            hex(&w["value"]),
                            "{name}: value"
                        );
                        let headers = w["headers"].as_array().unwrap();
                        assert_eq!(r.headers.len(), headers.len());
                        for (h, wh) in r.headers.iter().zip(headers) {
                            assert_eq!(&h.key[..], wh[0].as_str().unwrap().as_bytes());
                            assert_eq!(h.value.as_deref().map(<[u8]>::to_vec), hex(&wh[1]));
                        }
                        checked_records += 1;
                    }
                }
                Entry::Legacy(raw) => {
                    let records = want["records"].as_array().expect("legacy records");
                    let decoded =
                        decode_legacy(raw, LIMIT).unwrap_or_else(|e| panic!("{name}: {e}"));
                    assert_eq!(decoded.len(), records.len(), "{name}");
                    for (r, w) in decoded.iter().zip(records) {
                        assert_eq!(r.offset, w["offset"].as_i64().unwrap(), "{name}");
                        assert_eq!(r.timestamp, w["timestamp"].as_i64().unwrap_or(-1), "{name}");
                        assert_eq!(r.key.as_deref().map(<[u8]>::to_vec), hex(&w["key"]));
                        assert_eq!(r.value.as_deref().map(<[u8]>::to_vec), hex(&w["value"]));
                        checked_records += 1;
                    }
                }
            }
        }
    }
    assert!(
        checked_records > 100,
        "only {checked_records} records checked"
    );
}

#[test]
fn all_codecs_hold_the_same_records() {
    let decode = |name: &str| match &entries(name)[0] {
        Entry::V2(b) => decode_records(b, LIMIT).expect("decode"),
        Entry::Legacy(_) => panic!("v2 expected"),
    };
    let plain = decode("v2_none.bin");
    for codec in ["gzip", "snappy", "lz4", "zstd"] {
        assert_eq!(decode(&format!("v2_{codec}.bin")), plain, "{codec}");
    }
}

/// Header bytes a rewrite of base offset, leader epoch, producer fields and CRC may change.
fn rewritable(i: usize) -> bool {
    (0..8).contains(&i)
        || (12..16).contains(&i)
        || (CRC..CRC + 4).contains(&i)
        || (43..57).contains(&i)
}

#[test]
fn rewrite_changes_only_the_intended_header_bytes() {
    let mut rewritten = 0;
    for name in [
        "v2_none.bin",
        "v2_gzip.bin",
        "v2_snappy.bin",
        "v2_lz4.bin",
        "v2_zstd.bin",
        "v2_multi.bin",
        "v2_idempotent.bin",
        "v2_transactional.bin",
        "bench_1k_zstd.bin",
    ] {
        for entry in entries(name) {
            let Entry::V2(b) = entry else { continue };
            let out = b.rewrite(&HeaderRewrite {
                base_offset: Some(0),
                partition_leader_epoch: Some(-1),
                producer_id: Some(123_456),
                producer_epoch: Some(7),
                base_sequence: Some(1_000_000),
                attributes: None,
            });
            let bytes = out.to_bytes();
            assert_eq!(bytes.len(), b.len());
            // The records region is the very same memory, not a copy.
            assert_eq!(
                out.records.as_ptr(),
                b.bytes()[HEADER_LEN..].as_ptr(),
                "{name}: zero-copy"
            );
            for (i, (x, y)) in b.bytes().iter().zip(bytes.iter()).enumerate() {
                if x != y {
                    assert!(rewritable(i), "{name}: byte {i} changed");
                }
            }
            let stored = u32::from_be_bytes(bytes[CRC..CRC + 4].try_into().unwrap());
            assert_eq!(
                stored,
                independent_crc32c(&bytes[ATTRIBUTES..]),
                "{name}: CRC after rewrite"
            );
            let again = RecordBatch::new(bytes).unwrap();
            assert_eq!(again.producer_id(), 123_456);
            assert_eq!(again.producer_epoch(), 7);
            assert_eq!(again.base_sequence(), 1_000_000);
            assert_eq!(
                decode_records(&again, LIMIT).unwrap(),
                decode_records(&b, LIMIT).unwrap()
            );
            rewritten += 1;
        }
    }
    assert!(rewritten >= 25);
}

#[test]
fn produce_rules_name_the_rule_that_fails() {
    let first = |name: &str| match entries(name).into_iter().next() {
        Some(Entry::V2(b)) => b,
        _ => panic!("{name}"),
    };
    assert!(check_producible(&first("v2_zstd.bin"), None).is_ok());
    let gaps = first("v2_compacted_gaps.bin");
    assert_eq!(
        check_producible(&gaps, None).unwrap_err().rule,
        Rule::ContiguousOffsets
    );
    let marker = match &entries("v2_transactional.bin")[1] {
        Entry::V2(b) => b.clone(),
        Entry::Legacy(_) => panic!(),
    };
    assert_eq!(
        check_producible(&marker, None).unwrap_err().rule,
        Rule::NoControlBatch
    );
    let big = first("v2_none.bin");
    assert_eq!(
        check_producible(&big, Some(1000)).unwrap_err().rule,
        Rule::WithinMaxMessageBytes
    );
    let mut corrupt = big.bytes().to_vec();
    corrupt[HEADER_LEN + 5] ^= 0x40;
    let corrupt = RecordBatch::new(Bytes::from(corrupt)).unwrap();
    assert_eq!(
        check_producible(&corrupt, None).unwrap_err().rule,
        Rule::ValidCrc
    );
    // Producer id without a sequence.
    let bad = big.rewrite(&HeaderRewrite {
        producer_id: Some(5),
        producer_epoch: Some(0),
        ..Default::default()
    });
    let bad = RecordBatch::new(bad.to_bytes()).unwrap();
    assert_eq!(
        check_producible(&bad, None).unwrap_err().rule,
        Rule::ProducerFieldsConsistent
    );
}

#[test]
fn truncated_blob_yields_complete_batches_and_a_tail() {
    let blob = load("v2_multi.bin");
    let full: Vec<_> = split(blob.clone()).collect::<Result<_, _>>().unwrap();
    let cut = blob.len() - 100;
    let mut it = split(blob.slice(..cut));
    let got: Vec<_> = it.by_ref().collect::<Result<_, _>>().unwrap();
    assert_eq!(got.len(), full.len() - 1);
    assert_eq!(
        it.truncated_tail(),
        full.last().unwrap().bytes().len() - 100
    );
}
