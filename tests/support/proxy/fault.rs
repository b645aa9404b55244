//! Fault-injection plan consulted by the proxy's forwarding loops.
//!
//! The proxy locks the plan once per frame (and once per accepted connection, and while it
//! writes, for the blackhole and the bandwidth limit), so tests can change it at any time through
//! [`super::ProduceCheckProxy::fault_plan`] or [`super::ProduceCheckProxy::update_faults`]. Add
//! new fault kinds here: give them a field, make `on_request` / `on_response` / `on_connect`
//! return the action (or have the writers in `mod.rs` read the field).
//!
//! Every random choice of the plan (latency jitter, where a response frame is cut) comes from
//! [`FaultPlan::rng`], a [`SplitMix64`] a test seeds with [`FaultPlan::seed`] (and prints), so a
//! failing run replays the same draws. (Which frame a draw lands on still depends on timing.)

use std::time::{Duration, Instant};

/// What the forwarding loop should do with the current frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultAction {
    /// Forward unchanged.
    Forward,
    /// Sleep, then forward (frames of the connection behind it wait too).
    Delay(Duration),
    /// Forward the frame, then close the whole proxied connection (e.g. the broker handles a
    /// Produce but the client never sees the response: exercises retries/idempotence).
    ForwardThenClose,
    /// Close the whole proxied connection without forwarding this frame.
    Close,
    /// Forward only the first `.0` bytes of the frame (size prefix included), then reset the
    /// whole proxied connection abruptly (RST to both sides): a network that dies in the middle
    /// of a response.
    ResetAfter(usize),
}

/// `api_key` of a [`KeyTrigger`] that matches frames of every API key.
pub const ANY_API_KEY: i16 = -1;

/// A one-shot-or-counted trigger on an API key ([`ANY_API_KEY`]: any).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyTrigger {
    pub api_key: i16,
    /// How many more matching frames fire this trigger.
    pub remaining: u32,
}

/// Added latency: every frame, in both directions, is delivered `base` plus a uniformly random
/// extra in `[0, jitter]` after the proxy read it, never before the frame read before it on the
/// same connection and direction (frames stay in order; a frame that drew less waits for its
/// predecessor).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Latency {
    pub base: Duration,
    pub jitter: Duration,
}

/// A small deterministic PRNG (SplitMix64, Steele/Lea/Flood 2014): the harness's source of
/// randomness, so a seed replays a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, n)` (`n > 0`; the modulo bias is negligible for the small `n` used here).
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "SplitMix64::below(0)");
        self.next_u64() % n
    }

    /// Uniform in `[lo, hi]`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        assert!(lo <= hi, "SplitMix64::range({lo}, {hi})");
        lo + self.below(hi - lo + 1)
    }

    /// Uniform duration in `[lo, hi]`, at millisecond resolution.
    pub fn duration(&mut self, lo: Duration, hi: Duration) -> Duration {
        Duration::from_millis(self.range(lo.as_millis() as u64, hi.as_millis() as u64))
    }

    /// `true` with probability `percent` / 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// Fault plan. `Default` injects nothing.
#[derive(Debug, Clone, Default)]
pub struct FaultPlan {
    /// Delay added before forwarding every request (client->broker).
    pub request_delay: Option<Duration>,
    /// Delay added before forwarding every response (broker->client).
    pub response_delay: Option<Duration>,
    /// Delay added before forwarding responses to requests of one API key (on top of
    /// `response_delay`): a broker slow at one kind of request.
    pub response_delay_for: Vec<(i16, Duration)>,
    /// Close the connection right after forwarding matching requests.
    pub close_after_request: Vec<KeyTrigger>,
    /// Close the connection instead of forwarding matching requests.
    pub close_before_request: Vec<KeyTrigger>,
    /// Close the connection instead of forwarding the response to matching requests.
    pub drop_response: Vec<KeyTrigger>,
    /// Accept and immediately close new client connections.
    pub refuse_connections: bool,
    /// Requests on connections accepted before the one numbered `.0` (counting from 0) are
    /// read and kept, and delivered to the broker only at `.1`, even if their client has gone
    /// by then: a network that held an instance's requests and delivered them late.
    pub hold: Option<(u64, std::time::Instant)>,
    /// Latency with jitter on every frame, both directions (see [`Latency`]).
    pub latency: Option<Latency>,
    /// Bandwidth limit in bytes per second on forwarded bytes, per direction: one token bucket
    /// per direction, shared by every connection of the proxy (a link), holding at most one
    /// second's worth. Frames are written in chunks as the tokens allow.
    pub bandwidth: Option<u64>,
    /// Blackhole until this instant: connections are still accepted and existing ones stay
    /// open, but nothing is written to either side until then (what was read is delivered
    /// afterwards, in order, as TCP would retransmit it). Clearing it ends it at once.
    pub blackhole_until: Option<Instant>,
    /// Reset the connection in the middle of matching responses: a random part of the frame
    /// (at least 1 byte, never all of it) reaches the client, then both sides get an RST.
    pub reset_mid_response: Vec<KeyTrigger>,
    /// Source of every random choice of the plan; see [`FaultPlan::seed`].
    pub rng: SplitMix64,
}

fn fire(triggers: &mut [KeyTrigger], api_key: i16) -> bool {
    for t in triggers.iter_mut() {
        if (t.api_key == api_key || t.api_key == ANY_API_KEY) && t.remaining > 0 {
            t.remaining -= 1;
            return true;
        }
    }
    false
}

impl FaultPlan {
    /// Seeds the plan's random choices (see the module docs).
    pub fn seed(&mut self, seed: u64) -> &mut Self {
        self.rng = SplitMix64::new(seed);
        self
    }

    /// Close the connection right after forwarding the next `times` requests with `api_key`.
    pub fn close_after_request(&mut self, api_key: i16, times: u32) -> &mut Self {
        self.close_after_request.push(KeyTrigger {
            api_key,
            remaining: times,
        });
        self
    }

    /// Close the connection instead of forwarding the next `times` requests with `api_key`.
    pub fn close_before_request(&mut self, api_key: i16, times: u32) -> &mut Self {
        self.close_before_request.push(KeyTrigger {
            api_key,
            remaining: times,
        });
        self
    }

    /// Close the connection instead of delivering the next `times` responses to `api_key`.
    pub fn drop_response(&mut self, api_key: i16, times: u32) -> &mut Self {
        self.drop_response.push(KeyTrigger {
            api_key,
            remaining: times,
        });
        self
    }

    /// Cut the next `times` responses to `api_key` ([`ANY_API_KEY`]: to any request) in the
    /// middle, then reset their connection (see [`FaultPlan::reset_mid_response`]).
    pub fn reset_mid_response(&mut self, api_key: i16, times: u32) -> &mut Self {
        self.reset_mid_response.push(KeyTrigger {
            api_key,
            remaining: times,
        });
        self
    }

    /// Every frame delayed by `base` plus a random extra up to `jitter` (see [`Latency`]).
    pub fn latency(&mut self, base: Duration, jitter: Duration) -> &mut Self {
        self.latency = Some(Latency { base, jitter });
        self
    }

    /// At most `bytes_per_sec` forwarded bytes per second in each direction.
    pub fn bandwidth(&mut self, bytes_per_sec: u64) -> &mut Self {
        assert!(bytes_per_sec > 0, "a bandwidth limit of 0 is a blackhole");
        self.bandwidth = Some(bytes_per_sec);
        self
    }

    /// Nothing forwarded, either way, for `d` from now (see [`FaultPlan::blackhole_until`]).
    pub fn blackhole_for(&mut self, d: Duration) -> &mut Self {
        self.blackhole_until = Some(Instant::now() + d);
        self
    }

    /// Whether a blackhole is on at `now`, and until when.
    pub fn blackholed_at(&self, now: Instant) -> Option<Instant> {
        self.blackhole_until.filter(|until| *until > now)
    }

    /// Holds the requests of every connection accepted so far (`accepted` of them) until
    /// `until`; later connections pass.
    pub fn hold_existing(&mut self, accepted: u64, until: std::time::Instant) -> &mut Self {
        self.hold = Some((accepted, until));
        self
    }

    /// Until when a request of connection number `conn` read at `received` is held, if it is.
    pub fn held_until_for(
        &self,
        conn: u64,
        received: std::time::Instant,
    ) -> Option<std::time::Instant> {
        self.hold
            .filter(|(below, until)| conn < *below && received < *until)
            .map(|(_, until)| until)
    }

    /// Removes every fault (the random generator goes on where it was, so a seeded sequence
    /// of faults and clears replays).
    pub fn clear(&mut self) {
        let rng = self.rng;
        *self = FaultPlan::default();
        self.rng = rng;
    }

    /// Called for each new client connection; `false` means close it at once.
    pub fn on_connect(&mut self) -> bool {
        !self.refuse_connections
    }

    /// The latency to add to a frame read now (a draw from `rng` when there is jitter).
    pub fn latency_sample(&mut self) -> Option<Duration> {
        let l = self.latency?;
        let extra = if l.jitter.is_zero() {
            Duration::ZERO
        } else {
            self.rng.duration(Duration::ZERO, l.jitter)
        };
        Some(l.base + extra)
    }

    /// Called for each complete client->broker frame (api key `None` if unparsable).
    pub fn on_request(&mut self, api_key: Option<i16>, _api_version: Option<i16>) -> FaultAction {
        if let Some(k) = api_key {
            if fire(&mut self.close_before_request, k) {
                return FaultAction::Close;
            }
            if fire(&mut self.close_after_request, k) {
                return FaultAction::ForwardThenClose;
            }
        }
        match self.request_delay {
            Some(d) => FaultAction::Delay(d),
            None => FaultAction::Forward,
        }
    }

    /// Called for each complete broker->client frame of `frame_len` bytes (size prefix
    /// included; `api_key` of the matching request when known).
    pub fn on_response(&mut self, api_key: Option<i16>, frame_len: usize) -> FaultAction {
        if let Some(k) = api_key {
            if fire(&mut self.drop_response, k) {
                return FaultAction::Close;
            }
        }
        if frame_len >= 2 && fire(&mut self.reset_mid_response, api_key.unwrap_or(ANY_API_KEY)) {
            return FaultAction::ResetAfter(self.rng.range(1, frame_len as u64 - 1) as usize);
        }
        let keyed = api_key.and_then(|k| {
            self.response_delay_for
                .iter()
                .find(|(key, _)| *key == k)
                .map(|(_, d)| *d)
        });
        match (self.response_delay, keyed) {
            (Some(a), Some(b)) => FaultAction::Delay(a + b),
            (Some(d), None) | (None, Some(d)) => FaultAction::Delay(d),
            (None, None) => FaultAction::Forward,
        }
    }
}
