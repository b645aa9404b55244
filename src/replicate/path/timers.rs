//! Every deadline of a state machine in one table: what is due next is one lookup, and a test
//! drives time by calling `handle_timeout` with any instant it likes.

use std::collections::BTreeMap;
use std::time::Instant;

/// Deadlines by kind; at most one per kind.
#[derive(Debug, Clone)]
pub struct TimerTable<T: Ord + Copy> {
    deadlines: BTreeMap<T, Instant>,
}

impl<T: Ord + Copy> Default for TimerTable<T> {
    fn default() -> Self {
        TimerTable {
            deadlines: BTreeMap::new(),
        }
    }
}

impl<T: Ord + Copy> TimerTable<T> {
    /// Sets (or moves) the deadline of `kind`.
    pub fn set(&mut self, kind: T, at: Instant) {
        self.deadlines.insert(kind, at);
    }

    /// Sets the deadline of `kind` unless an earlier one is set.
    pub fn set_earliest(&mut self, kind: T, at: Instant) {
        let e = self.deadlines.entry(kind).or_insert(at);
        *e = (*e).min(at);
    }

    /// Clears the deadline of `kind`.
    pub fn stop(&mut self, kind: T) {
        self.deadlines.remove(&kind);
    }

    /// The deadline of `kind`, if set.
    pub fn get(&self, kind: T) -> Option<Instant> {
        self.deadlines.get(&kind).copied()
    }

    /// Whether `kind` is set and not yet due at `now`.
    pub fn pending(&self, kind: T, now: Instant) -> bool {
        self.get(kind).is_some_and(|at| at > now)
    }

    /// The earliest deadline.
    pub fn next(&self) -> Option<Instant> {
        self.deadlines.values().min().copied()
    }

    /// Removes and returns the kinds due at `now`, earliest first.
    pub fn expire(&mut self, now: Instant) -> Vec<T> {
        let mut due: Vec<(Instant, T)> = self
            .deadlines
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(k, at)| (*at, *k))
            .collect();
        due.sort_by_key(|(at, _)| *at);
        for (_, k) in &due {
            self.deadlines.remove(k);
        }
        due.into_iter().map(|(_, k)| k).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn expires_what_is_due_earliest_first() {
        let t0 = Instant::now();
        let mut t = TimerTable::default();
        t.set(2u8, t0 + Duration::from_millis(20));
        t.set(1u8, t0 + Duration::from_millis(30));
        t.set(3u8, t0 + Duration::from_millis(10));
        t.set_earliest(1, t0 + Duration::from_millis(40));
        assert_eq!(t.next(), Some(t0 + Duration::from_millis(10)));
        assert_eq!(t.expire(t0 + Duration::from_millis(25)), vec![3, 2]);
        assert!(t.pending(1, t0 + Duration::from_millis(25)));
        t.set_earliest(1, t0 + Duration::from_millis(5));
        assert_eq!(t.expire(t0 + Duration::from_millis(25)), vec![1]);
        assert_eq!(t.next(), None);
    }
}
