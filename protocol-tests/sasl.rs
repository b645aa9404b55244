//! SASL on the wire, against a scripted fake broker (nisshi offers only SCRAM): the exact
//! SaslHandshake and SaslAuthenticate request bytes of PLAIN, broker refusals, and KIP-368
//! re-authentication when the broker gives the session a lifetime.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{
    ApiVersionsResponse, ResponseHeader, SaslAuthenticateResponse, SaslHandshakeResponse,
};
use kafka_protocol::protocol::{Encodable, HeaderVersion, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use strait::client::{Connection, ConnectionConfig};
use strait::protocol::api_versions;
use strait::sasl::{SaslMechanism, SaslSettings};
use strait::secret::Secret;
use strait::ErrorKind;

/// What the fake broker answers to SaslAuthenticate, in order (the last one repeats).
#[derive(Clone)]
struct Script {
    /// `(error_code, error_message, session_lifetime_ms)` per SaslAuthenticate.
    authenticate: Vec<(i16, Option<&'static str>, i64)>,
    /// Mechanisms enabled.
    mechanisms: Vec<&'static str>,
}

/// Every request frame the fake broker received (without the size prefix), in order.
type Seen = Arc<Mutex<Vec<Vec<u8>>>>;

fn frame<R: Encodable + HeaderVersion>(correlation_id: i32, version: i16, body: &R) -> Vec<u8> {
    let mut buf = BytesMut::new();
    buf.put_i32(0);
    ResponseHeader::default()
        .with_correlation_id(correlation_id)
        .encode(&mut buf, R::header_version(version))
        .unwrap();
    body.encode(&mut buf, version).unwrap();
    let size = (buf.len() - 4) as i32;
    buf[..4].copy_from_slice(&size.to_be_bytes());
    buf.to_vec()
}

async fn serve_one(mut sock: TcpStream, script: Script, seen: Seen) {
    let mut auth_round = 0usize;
    loop {
        let mut len = [0u8; 4];
        if sock.read_exact(&mut len).await.is_err() {
            return;
        }
        let mut req = vec![0u8; i32::from_be_bytes(len) as usize];
        if sock.read_exact(&mut req).await.is_err() {
            return;
        }
        seen.lock().unwrap().push(req.clone());
        let key = i16::from_be_bytes([req[0], req[1]]);
        let version = i16::from_be_bytes([req[2], req[3]]);
        let id = i32::from_be_bytes([req[4], req[5], req[6], req[7]]);
        let out = match key {
            18 => {
                let keys = [(18, 0, 3), (17, 0, 1), (36, 0, 2), (3, 0, 12)]
                    .into_iter()
                    .map(|(k, min, max)| {
                        ApiVersion::default()
                            .with_api_key(k)
                            .with_min_version(min)
                            .with_max_version(max)
                    })
                    .collect();
                frame(
                    id,
                    version,
                    &ApiVersionsResponse::default().with_api_keys(keys),
                )
            }
            17 => {
                let mech = &req[req.len() - 5..];
                let enabled = script
                    .mechanisms
                    .iter()
                    .any(|m| m.as_bytes().ends_with(mech));
                frame(
                    id,
                    version,
                    &SaslHandshakeResponse::default()
                        .with_error_code(if enabled { 0 } else { 33 })
                        .with_mechanisms(
                            script
                                .mechanisms
                                .iter()
                                .map(|m| StrBytes::from_static_str(m))
                                .collect(),
                        ),
                )
            }
            36 => {
                let (code, message, lifetime) =
                    script.authenticate[auth_round.min(script.authenticate.len() - 1)];
                auth_round += 1;
                frame(
                    id,
                    version,
                    &SaslAuthenticateResponse::default()
                        .with_error_code(code)
                        .with_error_message(message.map(StrBytes::from_static_str))
                        .with_auth_bytes(Bytes::new())
                        .with_session_lifetime_ms(lifetime),
                )
            }
            other => panic!("fake broker: unexpected API key {other}"),
        };
        if sock.write_all(&out).await.is_err() {
            return;
        }
    }
}

async fn fake_broker(script: Script) -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let seen: Seen = Arc::default();
    let s = seen.clone();
    tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            tokio::spawn(serve_one(sock, script.clone(), s.clone()));
        }
    });
    (addr, seen)
}

fn plain_config(password: &str) -> ConnectionConfig {
    ConnectionConfig {
        sasl: Some(SaslSettings::password(
            SaslMechanism::Plain,
            "user",
            Secret::literal(password),
        )),
        ..ConnectionConfig::default()
    }
}

fn keys(seen: &Seen) -> Vec<i16> {
    seen.lock()
        .unwrap()
        .iter()
        .map(|r| i16::from_be_bytes([r[0], r[1]]))
        .collect()
}

async fn api_versions_roundtrip(conn: &Connection) {
    conn.roundtrip(|id, client| api_versions::encode_request(id, client, 3))
        .await
        .unwrap();
}

#[tokio::test]
async fn plain_request_bytes() {
    let (addr, seen) = fake_broker(Script {
        authenticate: vec![(0, None, 0)],
        mechanisms: vec!["PLAIN"],
    })
    .await;
    let conn = Connection::connect(&addr, &plain_config("pass"))
        .await
        .unwrap();
    let frames = seen.lock().unwrap().clone();
    assert_eq!(
        keys(&seen),
        vec![18, 17, 36],
        "ApiVersions, SaslHandshake, SaslAuthenticate"
    );
    // SaslHandshake v1: header v1 (api key, version, correlation id, client id), mechanism.
    let mut handshake = vec![0, 17, 0, 1, 0, 0, 0, 2, 0, 6];
    handshake.extend_from_slice(b"strait");
    handshake.extend_from_slice(&[0, 5]);
    handshake.extend_from_slice(b"PLAIN");
    assert_eq!(frames[1], handshake);
    // SaslAuthenticate v2 (flexible): header v2 (client id, empty tags), compact bytes
    // (length + 1 = 11) holding `\0user\0pass`, empty tags.
    let mut authenticate = vec![0, 36, 0, 2, 0, 0, 0, 3, 0, 6];
    authenticate.extend_from_slice(b"strait");
    authenticate.extend_from_slice(&[0, 11]);
    authenticate.extend_from_slice(b"\0user\0pass");
    authenticate.push(0);
    assert_eq!(frames[2], authenticate);
    // No lifetime: no re-authentication later.
    api_versions_roundtrip(&conn).await;
    assert_eq!(keys(&seen), vec![18, 17, 36, 18]);
}

#[tokio::test]
async fn refused_credentials_and_mechanisms_are_auth_errors() {
    let (addr, _) = fake_broker(Script {
        authenticate: vec![(
            58,
            Some("Authentication failed: Invalid username or password"),
            0,
        )],
        mechanisms: vec!["PLAIN"],
    })
    .await;
    let e = Connection::connect(&addr, &plain_config("wrong-pass-xyz"))
        .await
        .unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Auth(_)), "{e}");
    assert!(e.is_security() && !e.is_retriable());
    let text = e.to_string();
    assert!(
        text.contains(
            "SASL authentication failed: Authentication failed: Invalid username or password"
        ) && text.contains(&addr),
        "{text}"
    );
    assert!(!text.contains("wrong-pass-xyz"));

    let (addr, _) = fake_broker(Script {
        authenticate: vec![(0, None, 0)],
        mechanisms: vec!["SCRAM-SHA-512"],
    })
    .await;
    let e = Connection::connect(&addr, &plain_config("p"))
        .await
        .unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Auth(_)), "{e}");
    assert!(
        e.to_string()
            .contains("the broker does not enable PLAIN (it offers: SCRAM-SHA-512)"),
        "{e}"
    );
}

#[tokio::test]
async fn reauthenticates_before_the_session_lifetime_ends() {
    // First session: 100 ms; the second: no lifetime.
    let (addr, seen) = fake_broker(Script {
        authenticate: vec![(0, None, 100), (0, None, 0)],
        mechanisms: vec!["PLAIN"],
    })
    .await;
    let conn = Connection::connect(&addr, &plain_config("pass"))
        .await
        .unwrap();
    // Past 95 % of the lifetime, so the next request must re-authenticate first.
    tokio::time::sleep(Duration::from_millis(150)).await;
    api_versions_roundtrip(&conn).await;
    assert_eq!(keys(&seen), vec![18, 17, 36, 17, 36, 18]);
    api_versions_roundtrip(&conn).await;
    assert_eq!(keys(&seen), vec![18, 17, 36, 17, 36, 18, 18]);
}

#[tokio::test]
async fn no_reauthentication_well_before_the_lifetime() {
    let (addr, seen) = fake_broker(Script {
        authenticate: vec![(0, None, 3_600_000)],
        mechanisms: vec!["PLAIN"],
    })
    .await;
    let conn = Connection::connect(&addr, &plain_config("pass"))
        .await
        .unwrap();
    api_versions_roundtrip(&conn).await;
    api_versions_roundtrip(&conn).await;
    assert_eq!(keys(&seen), vec![18, 17, 36, 18, 18]);
}
