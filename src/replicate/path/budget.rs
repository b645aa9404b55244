//! The flow's bandwidth cap (`max_bytes_per_second`): a token bucket on the record bytes
//! fetched from the source.
//!
//! Why fetched bytes: the bucket then decides what enters the buffer, so nothing beyond the
//! budget is ever held in memory (the buffer bound holds as without a cap), and the cap is
//! exact where it is charged. Every byte fetched is produced (control batches and aborted data
//! aside, which are not produced and still crossed the source link), and the target is
//! faster than the cap, so the target sees the same rate one round later. Charging produced
//! bytes instead would let the fetches run ahead until the buffer is full and then follow
//! the producer: the same long-run rate with a full buffer and a longer lag.
//!
//! How: a Fetch request is planned only while at least a grain of budget is available, and it
//! asks for no more than the budget (its request-level `max_bytes`, which Apache Kafka honours
//! except that the first batch always comes, KIP-74). Its `max_bytes` is reserved when it is
//! planned; its answer charges the whole batches it brought and returns the rest. A batch cut
//! off at the end of an answer (Apache Kafka slices the log at `max_bytes`, mid-batch) is not
//! charged: it is fetched again and charged when it comes whole, so the cap counts each record
//! byte once (the source link carries the cut-off parts on top). The bucket holds
//! at most one second of the rate (the burst) and may go into debt by the part of one batch
//! beyond `max_bytes`. While the budget is spent, the data path plans nothing and sets a
//! deadline for when it has refilled by a grain.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::{DataPath, RequestId, Timer};

/// Most the bucket holds: this long at the cap.
pub const BURST: Duration = Duration::from_secs(1);

/// Fewest of the source's largest batches a capped Fetch asks for, while the burst allows.
pub const GRAIN_BATCHES: usize = 8;

/// The token bucket of one flow.
#[derive(Debug, Clone)]
pub struct Budget {
    /// Bytes per second.
    rate: f64,
    /// Most tokens held.
    burst: f64,
    /// Least tokens worth a Fetch request: a quarter of the burst, or more with big batches.
    grain: f64,
    /// The grain as configured, before [`Budget::available`] sizes it to the batches.
    base_grain: f64,
    /// Most one Fetch request asks for (`fetch_max_bytes`).
    request_max: f64,
    /// Tokens now (negative: debt), less what outstanding requests reserved.
    tokens: f64,
    /// When `tokens` was last refilled.
    at: Instant,
    /// Reserved by outstanding Fetch requests.
    reserved: HashMap<RequestId, usize>,
}

impl Budget {
    /// A full bucket of `rate` bytes per second, for requests of at most `fetch_max_bytes`.
    pub fn new(rate: u64, fetch_max_bytes: i32, now: Instant) -> Budget {
        let rate = rate.max(1) as f64;
        let burst = rate * BURST.as_secs_f64();
        let request_max = f64::from(fetch_max_bytes.max(1));
        let grain = (burst / 4.0).min(request_max).max(1.0);
        Budget {
            rate,
            burst,
            grain,
            base_grain: grain,
            request_max,
            tokens: burst,
            at: now,
            reserved: HashMap::new(),
        }
    }

    fn refill(&mut self, now: Instant) {
        let dt = now.saturating_duration_since(self.at).as_secs_f64();
        self.at = self.at.max(now);
        self.tokens = (self.tokens + dt * self.rate).min(self.burst);
    }

    /// Bytes that may be asked for now (`None`: less than a grain; wait until
    /// [`Budget::ready_at`]), for a source whose largest batch is `batch` bytes.
    ///
    /// A request asks for at least [`GRAIN_BATCHES`] such batches while the burst allows, and
    /// for a whole number of them: an answer ends in the middle of a batch, and that cut-off
    /// part crosses the source link again in the next answer, so a request of a few batches
    /// would carry a large share of it (and with batches of one size, none is cut).
    pub fn available(&mut self, now: Instant, batch: usize) -> Option<usize> {
        self.refill(now);
        // No more than a request can ask for (one batch at least: it comes whole).
        let want = self
            .base_grain
            .max((GRAIN_BATCHES * batch) as f64)
            .min(self.burst)
            .min(self.request_max.max(batch as f64));
        self.grain = whole_batches(want as usize, batch) as f64;
        // Half a byte of slack: the deadline from `ready_at` is rounded, not exact.
        (self.tokens + 0.5 >= self.grain).then_some(self.tokens.max(1.0) as usize)
    }

    /// When a grain is available again.
    pub fn ready_at(&self) -> Instant {
        let short = (self.grain - self.tokens).max(0.0);
        self.at + Duration::from_nanos((short / self.rate * 1e9).ceil() as u64)
    }

    /// Request `id` asks for up to `bytes`.
    pub fn reserve(&mut self, id: RequestId, bytes: usize) {
        self.tokens -= bytes as f64;
        self.reserved.insert(id, bytes);
    }

    /// Request `id` brought `got` bytes (0 for a failed or unsent one): the rest of its
    /// reservation comes back.
    pub fn settle(&mut self, id: RequestId, got: usize) {
        if let Some(r) = self.reserved.remove(&id) {
            self.tokens += r as f64 - got as f64;
            self.tokens = self.tokens.min(self.burst);
        }
    }

    /// Returns the reservations of requests that are no longer outstanding (forgotten by the
    /// data path without an answer).
    pub fn forget_except(&mut self, outstanding: &[RequestId]) {
        let gone: Vec<RequestId> = self
            .reserved
            .keys()
            .filter(|id| !outstanding.contains(id))
            .copied()
            .collect();
        for id in gone {
            self.settle(id, 0);
        }
    }
}

/// `bytes` rounded down to a whole number of batches of `batch` bytes, when it holds more than
/// one.
pub fn whole_batches(bytes: usize, batch: usize) -> usize {
    match batch {
        0 => bytes,
        b if bytes <= b => bytes,
        b => bytes / b * b,
    }
}

/// What the Fetch requests planned now may ask for.
#[derive(Debug, Clone, Copy)]
pub(super) struct FetchBudget {
    /// Bytes in all (`usize::MAX`: no cap).
    pub bytes: usize,
    /// The largest batch of the flow's partitions so far (0 without a cap).
    pub batch: usize,
}

impl DataPath {
    /// With a cap: what the Fetch requests planned now may ask for, or `None` when the budget
    /// is spent (then a deadline is set for when it has refilled). Without a cap: unlimited.
    pub(super) fn fetch_budget(&mut self, now: Instant) -> Option<FetchBudget> {
        let Some(rate) = self.cfg.max_bytes_per_second else {
            return Some(FetchBudget {
                bytes: usize::MAX,
                batch: 0,
            });
        };
        let outstanding: Vec<RequestId> = self.fetching.iter().map(|f| f.id).collect();
        let fetch_max = self.cfg.fetch_max_bytes;
        let batch = self
            .parts
            .values()
            .map(|p| p.largest_batch)
            .max()
            .unwrap_or(0);
        let b = self
            .budget
            .get_or_insert_with(|| Budget::new(rate, fetch_max, now));
        b.forget_except(&outstanding);
        let Some(bytes) = b.available(now, batch) else {
            let at = b.ready_at();
            self.timers.set(Timer::BudgetRefill, at);
            return None;
        };
        Some(FetchBudget { bytes, batch })
    }

    /// Shares `budget` among `n` Fetch requests: the request-level `max_bytes` of each, a
    /// whole number of the largest batches.
    pub(super) fn budget_share(&self, budget: FetchBudget, n: usize) -> i32 {
        let most = usize::try_from(self.cfg.fetch_max_bytes.max(1)).unwrap_or(1);
        let share = whole_batches((budget.bytes / n.max(1)).min(most), budget.batch);
        i32::try_from(share).unwrap_or(i32::MAX).max(1)
    }

    /// Fetch request `id` asks for up to `bytes` of the budget.
    pub(super) fn reserve_budget(&mut self, id: RequestId, bytes: i32) {
        if let Some(b) = self.budget.as_mut() {
            b.reserve(id, usize::try_from(bytes).unwrap_or(0));
        }
    }

    /// Fetch request `id` brought `got` bytes of whole batches.
    pub(super) fn settle_budget(&mut self, id: RequestId, got: usize) {
        if let Some(b) = self.budget.as_mut() {
            b.settle(id, got);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refills_at_the_rate_up_to_one_second_and_charges_what_came() {
        let t0 = Instant::now();
        let mut b = Budget::new(100_000, 1 << 20, t0);
        assert_eq!(b.available(t0, 0), Some(100_000), "starts full: one second");
        b.reserve(RequestId(1), 100_000);
        assert_eq!(b.available(t0, 0), None);
        // Only 30 000 came: 70 000 back.
        b.settle(RequestId(1), 30_000);
        assert_eq!(b.available(t0, 0), Some(70_000));
        // One batch beyond max_bytes: debt, and the wait until a grain (25 000) is back.
        b.reserve(RequestId(2), 70_000);
        b.settle(RequestId(2), 80_000);
        assert_eq!(b.available(t0, 0), None);
        let at = b.ready_at();
        let wait = at - t0;
        assert!(
            wait >= Duration::from_millis(349) && wait <= Duration::from_millis(351),
            "{wait:?}"
        );
        assert!(b.available(at - Duration::from_millis(1), 0).is_none());
        assert!(b.available(at, 0).is_some());
        // Never more than the burst, however long it was idle.
        assert_eq!(b.available(t0 + Duration::from_secs(60), 0), Some(100_000));
        // A reservation forgotten without an answer comes back.
        b.reserve(RequestId(3), 60_000);
        b.forget_except(&[]);
        assert_eq!(b.available(t0 + Duration::from_secs(60), 0), Some(100_000));
    }

    #[test]
    fn requests_are_whole_numbers_of_batches() {
        assert_eq!(whole_batches(25_000, 0), 25_000);
        assert_eq!(whole_batches(25_000, 6_000), 24_000);
        assert_eq!(whole_batches(6_000, 6_000), 6_000);
        assert_eq!(
            whole_batches(5_000, 6_000),
            5_000,
            "less than one: the first comes whole"
        );
    }

    #[test]
    fn a_request_waits_for_several_of_the_largest_batches_within_the_burst() {
        let t0 = Instant::now();
        let mut b = Budget::new(100_000, 1 << 20, t0);
        b.reserve(RequestId(1), 100_000);
        b.settle(RequestId(1), 100_000);
        // Batches of 1 000 bytes: the quarter-second grain (25 000) is worth a request.
        let t = t0 + Duration::from_millis(250);
        assert_eq!(b.available(t, 1_000), Some(25_000));
        // Batches of 10 000 bytes: eight of them (80 000), 0.8 s at the cap.
        assert_eq!(b.available(t, 10_000), None);
        assert_eq!(b.ready_at(), t0 + Duration::from_millis(800));
        assert!(b
            .available(t0 + Duration::from_millis(800), 10_000)
            .is_some());
        // Batches of 30 000 bytes: eight would be beyond the burst; three fit in it.
        b.reserve(RequestId(2), 80_000);
        b.settle(RequestId(2), 80_000);
        assert_eq!(b.available(t0 + Duration::from_millis(1_500), 30_000), None);
        assert_eq!(b.ready_at(), t0 + Duration::from_millis(1_700));
        // Requests of at most 60 000 bytes (`fetch_max_bytes`): two batches of 30 000 are
        // worth one, not more.
        let mut small = Budget::new(100_000, 60_000, t0);
        small.reserve(RequestId(1), 100_000);
        small.settle(RequestId(1), 100_000);
        assert_eq!(small.available(t0, 30_000), None);
        assert_eq!(small.ready_at(), t0 + Duration::from_millis(600));
        // Batches larger than the burst: a second's worth (an answer brings one batch whole).
        assert_eq!(
            b.available(t0 + Duration::from_millis(1_500), 150_000),
            None
        );
        assert_eq!(b.ready_at(), t0 + Duration::from_millis(1_800));
    }
}
