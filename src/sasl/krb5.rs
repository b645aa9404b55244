//! Kerberos through the system's GSS-API library (MIT krb5, `libgssapi_krb5`): credentials of
//! a cluster from a keytab or a ticket cache, and the client side of the GSS context.
//!
//! Why bindings and not a Kerberos in Rust: Kerberos is more than the AP exchange a SASL client
//! needs — krb5.conf realms and KDC discovery, encryption types, pre-authentication, referrals,
//! keytab and credential-cache formats shared with `kinit` and the rest of the host — and
//! operators expect strait to behave like every other Kerberos client on the machine. The MIT
//! library is what Kafka's own C client (librdkafka, through Cyrus SASL) uses; no pure-Rust
//! implementation covers that ground. The `libgssapi` crate wraps the GSS-API safely;
//! `gss_acquire_cred_from` (an MIT extension the crate does not wrap) gives each set of
//! credentials its own keytab and in-memory credential cache, so clusters with different
//! principals share no process-wide state (`KRB5CCNAME`, `KRB5_CLIENT_KTNAME`). Only the realm
//! configuration (`krb5.conf`, `KRB5_CONFIG`) is per process.
//!
//! Every call that may talk to the KDC blocks: callers run [`GssExchange::start`] and
//! [`GssExchange::step`] off the async runtime (they use `spawn_blocking` themselves).
//!
//! Tickets from a keytab go into a fresh `MEMORY:` cache each time, obtained when the previous
//! ones reach 80 % of their lifetime (Kafka's renew window); the old cache is destroyed once no
//! exchange uses it. A ticket cache is re-read at the same point, so a `kinit` or `k5start` that
//! keeps it fresh is picked up.

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CString};
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use libgssapi::context::{ClientCtx, CtxFlags, SecurityContext};
use libgssapi::credential::Cred;
use libgssapi::error::{Error as GssError, MajorFlags};
use libgssapi::name::Name;
use libgssapi::oid::{GSS_MECH_KRB5, GSS_NT_HOSTBASED_SERVICE};
use libgssapi_sys as sys;

use super::gssapi::{
    renew_after, security_layer_answer, GssapiError, KerberosSettings, KerberosSource,
};

/// krb5 error codes (minor statuses) meaning the KDC could not be reached: worth retrying.
const KRB5_KDC_UNREACH: i32 = -1_765_328_228;
const KRB5_REALM_CANT_RESOLVE: i32 = -1_765_328_164;
/// krb5 error codes of a key that does not match the KDC's (a stale keytab).
const KRB5KRB_AP_ERR_BAD_INTEGRITY: i32 = -1_765_328_353;
const KRB5KDC_ERR_PREAUTH_FAILED: i32 = -1_765_328_360;

/// The DER value of the Kerberos principal name type (1.2.840.113554.1.2.2.1).
const KRB5_PRINCIPAL_NAME_OID: &[u8] = b"\x2a\x86\x48\x86\xf7\x12\x01\x02\x02\x01";
/// The DER value of the Kerberos V5 mechanism (1.2.840.113554.1.2.2).
const KRB5_MECH_OID: &[u8] = b"\x2a\x86\x48\x86\xf7\x12\x01\x02\x02";

#[link(name = "krb5")]
unsafe extern "C" {
    fn krb5_init_context(context: *mut *mut c_void) -> i32;
    fn krb5_free_context(context: *mut c_void);
    fn krb5_cc_resolve(context: *mut c_void, name: *const c_char, cache: *mut *mut c_void) -> i32;
    fn krb5_cc_destroy(context: *mut c_void, cache: *mut c_void) -> i32;
}

/// A `MEMORY:` credential cache of ours, destroyed when dropped.
struct MemoryCache(CString);

impl Drop for MemoryCache {
    fn drop(&mut self) {
        // SAFETY: plain krb5 calls on a context and cache we create and free here.
        unsafe {
            let mut ctx = ptr::null_mut();
            if krb5_init_context(&mut ctx) != 0 {
                return;
            }
            let mut cc = ptr::null_mut();
            if krb5_cc_resolve(ctx, self.0.as_ptr(), &mut cc) == 0 {
                krb5_cc_destroy(ctx, cc);
            }
            krb5_free_context(ctx);
        }
    }
}

/// Credentials in use: the GSS handle, then (dropped after it) the cache it reads.
pub(crate) struct HeldCred {
    cred: Cred,
    renew_at: Instant,
    expires_at: Instant,
    _cache: Option<MemoryCache>,
}

/// The credentials of one [`KerberosSettings`], shared by every connection that uses them.
#[derive(Default)]
struct Credentials {
    current: Mutex<Option<Arc<HeldCred>>>,
}

static CREDENTIALS: OnceLock<Mutex<HashMap<KerberosSettings, Arc<Credentials>>>> = OnceLock::new();
static CACHES: AtomicU64 = AtomicU64::new(0);

fn credentials_for(settings: &KerberosSettings) -> Arc<Credentials> {
    let map = CREDENTIALS.get_or_init(Mutex::default);
    let mut map = map.lock().unwrap_or_else(|e| e.into_inner());
    map.entry(settings.clone()).or_default().clone()
}

/// The current credentials of `settings`, new ones if there are none or they reached their
/// renewal point. Blocks (may talk to the KDC).
fn credential(settings: &KerberosSettings) -> Result<Arc<HeldCred>, GssapiError> {
    let creds = credentials_for(settings);
    let mut current = creds.current.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(held) = current.as_ref().filter(|h| Instant::now() < h.renew_at) {
        return Ok(held.clone());
    }
    match acquire(settings) {
        Ok(held) => {
            let held = Arc::new(held);
            *current = Some(held.clone());
            Ok(held)
        }
        // The KDC is away but the ticket still lasts: keep using it, try again next time.
        Err(e) if e.transient => match current.as_ref().filter(|h| still_valid(h)) {
            Some(held) => {
                tracing::warn!(
                    credentials = %settings.describe(),
                    expires_in = ?held.expires_at.saturating_duration_since(Instant::now()),
                    "cannot renew the Kerberos ticket yet, using the current one: {e}"
                );
                Ok(held.clone())
            }
            None => Err(e),
        },
        Err(e) => Err(e),
    }
}

/// Whether held credentials last a few more seconds (enough for one authentication).
fn still_valid(held: &HeldCred) -> bool {
    Instant::now() + Duration::from_secs(5) < held.expires_at
}

/// One line from a GSS-API failure (after `what`, if not empty): the mechanism's (Kerberos')
/// own message when there is one, else the GSS-API status. Must run on the thread of the failed call: MIT keeps the detailed
/// message of a minor status per thread.
fn gss_failure(what: &str, e: GssError) -> GssapiError {
    let minor = e.minor as i32;
    let text = match minor_text(e.minor) {
        Some(t) => t,
        None => e.to_string(),
    };
    let text = text.replace('\n', " ");
    let hint = match minor {
        KRB5KRB_AP_ERR_BAD_INTEGRITY | KRB5KDC_ERR_PREAUTH_FAILED => {
            " (the keytab's key is not the KDC's: was the key changed since the keytab was made?)"
        }
        _ => "",
    };
    GssapiError {
        message: match what {
            "" => format!("{}{hint}", text.trim()),
            _ => format!("{what}: {}{hint}", text.trim()),
        },
        transient: minor == KRB5_KDC_UNREACH || minor == KRB5_REALM_CANT_RESOLVE,
    }
}

/// The Kerberos message of a minor status, if it has one.
fn minor_text(minor: u32) -> Option<String> {
    if minor == 0 {
        return None;
    }
    let mut out = Vec::new();
    let mut context = 0;
    loop {
        let mut m = 0;
        let mut buf = sys::gss_buffer_desc {
            length: 0,
            value: ptr::null_mut(),
        };
        // SAFETY: GSS fills `buf`, which we read and release right here.
        let major = unsafe {
            sys::gss_display_status(
                &mut m,
                minor,
                sys::GSS_C_MECH_CODE as c_int,
                ptr::null_mut(),
                &mut context,
                &mut buf,
            )
        };
        if major != sys::GSS_S_COMPLETE {
            break;
        }
        if !buf.value.is_null() && buf.length > 0 {
            // SAFETY: GSS returned `length` readable bytes at `value`.
            let bytes = unsafe { std::slice::from_raw_parts(buf.value as *const u8, buf.length) };
            out.push(String::from_utf8_lossy(bytes).into_owned());
        }
        // SAFETY: releasing the buffer GSS allocated.
        unsafe { sys::gss_release_buffer(&mut m, &mut buf) };
        if context == 0 {
            break;
        }
    }
    let text = out.join("; ");
    (!text.trim().is_empty()).then_some(text)
}

fn check(what: &str, major: u32, minor: u32) -> Result<(), GssapiError> {
    if major == sys::GSS_S_COMPLETE {
        return Ok(());
    }
    Err(gss_failure(
        what,
        GssError {
            major: MajorFlags::from_bits_retain(major),
            minor,
        },
    ))
}

/// Imports a Kerberos principal name (`user@REALM`); release with `gss_release_name`.
fn import_principal(principal: &str) -> Result<sys::gss_name_t, GssapiError> {
    let mut oid = sys::gss_OID_desc {
        length: KRB5_PRINCIPAL_NAME_OID.len() as u32,
        elements: KRB5_PRINCIPAL_NAME_OID.as_ptr() as *mut c_void,
    };
    let mut buf = sys::gss_buffer_desc {
        length: principal.len(),
        value: principal.as_ptr() as *mut c_void,
    };
    let mut name: sys::gss_name_t = ptr::null_mut();
    let mut minor = 0;
    // SAFETY: the buffer and OID point into data that outlives the call; GSS copies them.
    let major = unsafe { sys::gss_import_name(&mut minor, &mut buf, &mut oid, &mut name) };
    check(&format!("principal {principal}"), major, minor)?;
    Ok(name)
}

/// A credential store (`gss_acquire_cred_from`'s key/value pairs): the keytab and a fresh
/// `MEMORY:` cache (destroyed with the returned guard), or the ticket cache to read.
type CredStore = Vec<(&'static std::ffi::CStr, CString)>;

fn cred_store(source: &KerberosSource) -> Result<(CredStore, Option<MemoryCache>), String> {
    match source {
        KerberosSource::Keytab(path) => {
            let keytab = CString::new(path.as_os_str().as_encoded_bytes())
                .map_err(|_| "NUL in the keytab path".to_string())?;
            let n = CACHES.fetch_add(1, Ordering::Relaxed);
            let name = CString::new(format!("MEMORY:strait-{}-{n}", std::process::id()))
                .map_err(|_| "NUL in the cache name".to_string())?;
            let store = vec![(c"client_keytab", keytab), (c"ccache", name.clone())];
            Ok((store, Some(MemoryCache(name))))
        }
        KerberosSource::TicketCache(Some(c)) => {
            let c = CString::new(c.as_bytes()).map_err(|_| "NUL in the cache name".to_string())?;
            Ok((vec![(c"ccache", c)], None))
        }
        KerberosSource::TicketCache(None) => Ok((Vec::new(), None)),
    }
}

/// `gss_acquire_cred_from` for the Kerberos mechanism, initiating only.
fn acquire_cred_from(principal: Option<&str>, store: &CredStore) -> Result<Cred, GssapiError> {
    let mut elements: Vec<sys::gss_key_value_element_desc> = store
        .iter()
        .map(|(k, v)| sys::gss_key_value_element_desc {
            key: k.as_ptr(),
            value: v.as_ptr(),
        })
        .collect();
    let set = sys::gss_key_value_set_desc {
        count: elements.len() as u32,
        elements: elements.as_mut_ptr(),
    };
    let mut name = match principal {
        Some(p) => import_principal(p)?,
        None => ptr::null_mut(),
    };
    let mut mech = sys::gss_OID_desc {
        length: KRB5_MECH_OID.len() as u32,
        elements: KRB5_MECH_OID.as_ptr() as *mut c_void,
    };
    let mut mechs = sys::gss_OID_set_desc {
        count: 1,
        elements: &mut mech,
    };
    let mut raw: sys::gss_cred_id_t = ptr::null_mut();
    let mut minor = 0;
    // SAFETY: every pointer refers to locals that outlive the calls; the name is ours to
    // release, and the output handle ours to own.
    let major = unsafe {
        let major = sys::gss_acquire_cred_from(
            &mut minor,
            name,
            sys::_GSS_C_INDEFINITE,
            &mut mechs,
            sys::GSS_C_INITIATE as c_int,
            &set,
            &mut raw,
            ptr::null_mut(),
            ptr::null_mut(),
        );
        if !name.is_null() {
            let mut m = 0;
            sys::gss_release_name(&mut m, &mut name);
        }
        major
    };
    check("", major, minor)?;
    // SAFETY: `raw` is a fresh handle we own (from a successful gss_acquire_cred_from).
    Ok(unsafe { Cred::from_c(raw) })
}

/// Acquires credentials as `settings` says and finds out how long they last, which makes MIT
/// get the initial ticket from the KDC now (for a keytab).
fn acquire(settings: &KerberosSettings) -> Result<HeldCred, GssapiError> {
    let what = format!(
        "cannot get Kerberos credentials for {}",
        settings.describe()
    );
    let hint = match settings.source {
        KerberosSource::TicketCache(_) => " (kinit or k5start must keep the ticket cache fresh)",
        KerberosSource::Keytab(_) => "",
    };
    let fail = |e: GssapiError| GssapiError {
        message: format!("{what}: {}{hint}", e.message),
        transient: e.transient,
    };
    let (store, cache) = cred_store(&settings.source).map_err(|p| fail(GssapiError::new(p)))?;
    let cred = acquire_cred_from(settings.principal.as_deref(), &store).map_err(fail)?;
    let lifetime = cred.lifetime().map_err(|e| fail(gss_failure("", e)))?;
    if lifetime.is_zero() {
        return Err(fail(GssapiError::new("the ticket has expired")));
    }
    tracing::info!(
        credentials = %settings.describe(),
        lifetime = ?lifetime,
        "got Kerberos credentials"
    );
    let now = Instant::now();
    Ok(HeldCred {
        cred,
        renew_at: now + renew_after(lifetime),
        expires_at: now + lifetime,
        _cache: cache,
    })
}

/// The client side of one GSSAPI authentication: its GSS context and the credentials it uses.
pub struct GssExchange {
    ctx: ClientCtx,
    _cred: Arc<HeldCred>,
}

impl GssExchange {
    /// Gets (or reuses) the credentials and makes the first context token for the broker at
    /// `addr`. Runs the blocking work on tokio's blocking pool.
    pub async fn start(
        settings: &KerberosSettings,
        addr: &str,
    ) -> Result<(GssExchange, Vec<u8>), GssapiError> {
        let settings = settings.clone();
        let target = super::gssapi::target_name(&settings.service_name, addr);
        blocking(move || {
            let held = credential(&settings)?;
            let name = Name::new(target.as_bytes(), Some(GSS_NT_HOSTBASED_SERVICE))
                .map_err(|e| gss_failure(&format!("service name {target}"), e))?;
            let flags = CtxFlags::GSS_C_MUTUAL_FLAG
                | CtxFlags::GSS_C_SEQUENCE_FLAG
                | CtxFlags::GSS_C_INTEG_FLAG;
            let mut ctx = ClientCtx::new(Some(held.cred.clone()), name, flags, Some(GSS_MECH_KRB5));
            let token = ctx.step(None, None).map_err(|e| {
                gss_failure(&format!("cannot get a Kerberos ticket for {target}"), e)
            })?;
            let token = token.map(|t| t.to_vec()).unwrap_or_default();
            Ok((GssExchange { ctx, _cred: held }, token))
        })
        .await
    }

    /// Whether the GSS context is established.
    pub fn is_complete(&self) -> bool {
        self.ctx.is_complete()
    }

    /// Feeds the broker's context token; returns our next one (empty once complete).
    pub async fn step(mut self, token: Vec<u8>) -> Result<(GssExchange, Vec<u8>), GssapiError> {
        blocking(move || {
            let out = self
                .ctx
                .step(Some(&token), None)
                .map_err(|e| gss_failure("the broker's Kerberos answer was refused", e))?;
            Ok((self, out.map(|t| t.to_vec()).unwrap_or_default()))
        })
        .await
    }

    /// Unwraps the broker's security-layer offer and wraps our answer (RFC 4752 3.1).
    pub fn answer_offer(&mut self, wrapped: &[u8]) -> Result<Vec<u8>, GssapiError> {
        let offer = self
            .ctx
            .unwrap(wrapped)
            .map_err(|e| gss_failure("cannot unwrap the broker's security-layer offer", e))?;
        let answer = security_layer_answer(&offer)?;
        let wrapped = self
            .ctx
            .wrap(false, &answer)
            .map_err(|e| gss_failure("cannot wrap the security-layer answer", e))?;
        Ok(wrapped.to_vec())
    }
}

/// Runs `f` on tokio's blocking pool.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, GssapiError> + Send + 'static,
) -> Result<T, GssapiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| GssapiError::new(format!("the Kerberos task failed: {e}")))?
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(minor: i32) -> GssapiError {
        gss_failure(
            "what",
            GssError {
                major: MajorFlags::GSS_S_FAILURE,
                minor: minor as u32,
            },
        )
    }

    #[test]
    fn an_unreachable_kdc_is_transient_a_stale_key_is_not() {
        let e = failure(KRB5_KDC_UNREACH);
        assert!(e.transient, "{e}");
        // (MIT has no text for a minor status no call returned: the GSS status is shown.)
        assert!(e.message.starts_with("what: "), "{e}");
        assert!(!e.message.contains('\n'), "{e}");
        let e = failure(KRB5KRB_AP_ERR_BAD_INTEGRITY);
        assert!(!e.transient);
        assert!(e.message.contains("keytab's key"), "{e}");
        assert!(!e.message.contains('\n'), "{e}");
    }

    #[test]
    fn a_missing_ticket_cache_is_one_permanent_error() {
        let settings = KerberosSettings {
            service_name: "kafka".into(),
            principal: None,
            source: KerberosSource::TicketCache(Some("FILE:/nonexistent/strait-krb5cc".into())),
        };
        let Err(e) = acquire(&settings) else {
            panic!("credentials from a missing cache");
        };
        assert!(!e.transient, "{e}");
        assert!(
            e.message
                .contains("ticket cache FILE:/nonexistent/strait-krb5cc")
                && e.message.contains("kinit"),
            "{e}"
        );
    }
}
