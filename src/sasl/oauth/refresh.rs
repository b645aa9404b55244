//! When to refresh a token, and how long to wait after a failed attempt, sans-io. The rules
//! and defaults are Kafka's login refresh settings (`sasl.login.refresh.*`,
//! `sasl.login.retry.backoff.*`), so a configuration taken from a Kafka client behaves the
//! same.

use std::time::Duration;

/// Refresh and retry settings of a token source.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RefreshSettings {
    /// `sasl.login.refresh.window.factor`: refresh when this share of the token's remaining
    /// lifetime has passed (0.5 to 1.0, default 0.8).
    pub window_factor: f64,
    /// `sasl.login.refresh.window.jitter`: a random share up to this is added (0 to 0.25,
    /// default 0.05).
    pub window_jitter: f64,
    /// `sasl.login.refresh.min.period.seconds`: the least time between refreshes (default 60 s).
    pub min_period: Duration,
    /// `sasl.login.refresh.buffer.seconds`: refresh at least this long before expiry (default
    /// 300 s).
    pub buffer: Duration,
    /// `sasl.login.retry.backoff.ms`: the first wait after a failed attempt (default 100 ms).
    pub retry_backoff: Duration,
    /// `sasl.login.retry.backoff.max.ms`: the longest wait (default 10 s).
    pub retry_backoff_max: Duration,
}

impl Eq for RefreshSettings {}

impl Default for RefreshSettings {
    fn default() -> Self {
        RefreshSettings {
            window_factor: 0.8,
            window_jitter: 0.05,
            min_period: Duration::from_secs(60),
            buffer: Duration::from_secs(300),
            retry_backoff: Duration::from_millis(100),
            retry_backoff_max: Duration::from_secs(10),
        }
    }
}

impl RefreshSettings {
    /// Checks the ranges Kafka allows; the problem names the TOML field's suffix.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if !(0.5..=1.0).contains(&self.window_factor) {
            return Err((
                "refresh_window_factor",
                "must be between 0.5 and 1.0".to_string(),
            ));
        }
        if !(0.0..=0.25).contains(&self.window_jitter) {
            return Err((
                "refresh_window_jitter",
                "must be between 0 and 0.25".to_string(),
            ));
        }
        if self.min_period > Duration::from_secs(900) {
            return Err((
                "refresh_min_period",
                "must be at most 900 seconds".to_string(),
            ));
        }
        if self.buffer > Duration::from_secs(3600) {
            return Err(("refresh_buffer", "must be at most 3600 seconds".to_string()));
        }
        if self.retry_backoff.is_zero() || self.retry_backoff > self.retry_backoff_max {
            return Err((
                "retry_backoff",
                "must be more than 0 and at most the maximum backoff".to_string(),
            ));
        }
        Ok(())
    }

    /// How long after obtaining a token that expires in `lifetime` to refresh it, with
    /// `random` in `[0, 1)` choosing the jitter. The share of the lifetime is the window factor
    /// plus jitter; the refresh is kept out of the buffer before expiry and not sooner than the
    /// minimum period, unless the lifetime is shorter than both together, in which case the
    /// share alone decides.
    pub fn refresh_after(&self, lifetime: Duration, random: f64) -> Duration {
        let random = if random.is_finite() {
            random.clamp(0.0, 1.0)
        } else {
            0.0
        };
        let share = self.window_factor + self.window_jitter * random;
        let proposed = lifetime.mul_f64(share.min(1.0));
        if lifetime < self.min_period + self.buffer {
            return proposed;
        }
        let buffer_start = lifetime - self.buffer;
        proposed.min(buffer_start).max(self.min_period)
    }

    /// How long to wait before the next attempt after `failures` failed attempts in a row
    /// (1 = one failure): the backoff doubles from `retry_backoff` up to `retry_backoff_max`.
    pub fn retry_after(&self, failures: u32) -> Duration {
        let doublings = failures.saturating_sub(1).min(30);
        self.retry_backoff
            .saturating_mul(1u32 << doublings)
            .min(self.retry_backoff_max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: Duration = Duration::from_secs(3600);

    #[test]
    fn long_tokens_refresh_at_the_window_factor() {
        let r = RefreshSettings::default();
        assert_eq!(r.refresh_after(HOUR, 0.0), HOUR.mul_f64(0.8));
        assert_eq!(
            r.refresh_after(HOUR, 0.999),
            HOUR.mul_f64(0.8 + 0.05 * 0.999)
        );
    }

    #[test]
    fn the_buffer_and_the_minimum_period_bound_the_refresh() {
        let r = RefreshSettings {
            window_factor: 1.0,
            ..RefreshSettings::default()
        };
        // A factor of 1 would refresh at expiry: the buffer moves it 300 s before.
        assert_eq!(r.refresh_after(HOUR, 0.0), HOUR - Duration::from_secs(300));
        let r = RefreshSettings {
            window_factor: 0.5,
            window_jitter: 0.0,
            min_period: Duration::from_secs(400),
            buffer: Duration::from_secs(60),
            ..RefreshSettings::default()
        };
        // Half of 10 minutes is 300 s, sooner than the 400 s minimum period.
        assert_eq!(
            r.refresh_after(Duration::from_secs(600), 0.0),
            Duration::from_secs(400)
        );
    }

    #[test]
    fn short_tokens_refresh_at_their_share_of_the_lifetime() {
        let r = RefreshSettings::default();
        let life = Duration::from_secs(30);
        assert_eq!(r.refresh_after(life, 0.0), Duration::from_secs(24));
        let jittered = r.refresh_after(life, 0.5);
        assert!(jittered > Duration::from_secs(24) && jittered < life);
        assert!(r.refresh_after(life, f64::NAN) == Duration::from_secs(24));
    }

    #[test]
    fn backoff_doubles_to_its_maximum() {
        let r = RefreshSettings::default();
        assert_eq!(r.retry_after(1), Duration::from_millis(100));
        assert_eq!(r.retry_after(2), Duration::from_millis(200));
        assert_eq!(r.retry_after(5), Duration::from_millis(1600));
        assert_eq!(r.retry_after(8), Duration::from_secs(10));
        assert_eq!(r.retry_after(u32::MAX), Duration::from_secs(10));
    }

    #[test]
    fn ranges_are_checked() {
        assert!(RefreshSettings::default().check().is_ok());
        let bad = RefreshSettings {
            window_factor: 0.3,
            ..RefreshSettings::default()
        };
        assert_eq!(bad.check().unwrap_err().0, "refresh_window_factor");
        let bad = RefreshSettings {
            retry_backoff: Duration::from_secs(20),
            ..RefreshSettings::default()
        };
        assert_eq!(bad.check().unwrap_err().0, "retry_backoff");
    }
}
