//! One way to wait for "stop": [`Shutdown`], in the manner of mini-redis's `Shutdown`.
//!
//! Every long-running loop of the engine (the flows' control tasks, topic sync, group
//! membership, the HTTP server, the status follower) selects on [`Shutdown::stopped`] and
//! checks [`Shutdown::is_stopped`] between steps. A stop is the sender sending `true` **or**
//! the sender being dropped: a closed channel never leaves a loop running (or waking again and
//! again, as `watch::Receiver::changed` does once its sender is gone).

use tokio::sync::watch;

/// Listens for the stop signal: `true` on a `watch` channel, or the channel closed. Cheap to
/// clone (one reference count); every clone sees the same signal.
#[derive(Debug, Clone)]
pub struct Shutdown {
    rx: watch::Receiver<bool>,
}

impl Shutdown {
    /// A stop trigger and the [`Shutdown`] it stops: send `true` (or drop the sender) to stop.
    pub fn channel() -> (watch::Sender<bool>, Shutdown) {
        let (tx, rx) = watch::channel(false);
        (tx, Shutdown { rx })
    }

    /// Whether the stop was signalled: `true` sent, or the sender dropped.
    pub fn is_stopped(&self) -> bool {
        *self.rx.borrow() || self.rx.has_changed().is_err()
    }

    /// Resolves once the stop is signalled (at once if it already was). Cancel-safe: select
    /// on it in a loop, nothing is lost when another branch wins.
    pub async fn stopped(&self) {
        if self.is_stopped() {
            return;
        }
        let mut rx = self.rx.clone();
        // `Err` means the sender is gone: that is a stop too.
        let _ = rx.wait_for(|stop| *stop).await;
    }

    /// A `watch::Receiver<bool>` that turns `true` when this stops, either way (`true` sent or
    /// the sender dropped), for code that still takes a receiver (the flow's loop). Spawns a
    /// small task on the current tokio runtime that ends with the stop, or when every such
    /// receiver is gone.
    pub fn to_watch(&self) -> watch::Receiver<bool> {
        let (tx, rx) = watch::channel(self.is_stopped());
        if !self.is_stopped() {
            let me = self.clone();
            tokio::spawn(async move {
                tokio::select! {
                    _ = me.stopped() => {
                        let _ = tx.send(true);
                    }
                    _ = tx.closed() => {}
                }
            });
        }
        rx
    }
}

impl From<watch::Receiver<bool>> for Shutdown {
    fn from(rx: watch::Receiver<bool>) -> Shutdown {
        Shutdown { rx }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// Whether `stopped()` resolves within a short while.
    async fn resolves(s: &Shutdown) -> bool {
        tokio::time::timeout(Duration::from_millis(200), s.stopped())
            .await
            .is_ok()
    }

    #[tokio::test]
    async fn true_stops() {
        let (tx, s) = Shutdown::channel();
        assert!(!s.is_stopped());
        assert!(!resolves(&s).await, "nothing sent yet");
        let waiter = {
            let s = s.clone();
            tokio::spawn(async move { s.stopped().await })
        };
        let _ = tx.send(true);
        assert!(s.is_stopped());
        assert!(resolves(&s).await);
        assert!(tokio::time::timeout(Duration::from_secs(1), waiter)
            .await
            .is_ok_and(|r| r.is_ok()));
        // Stays stopped: a second wait returns at once.
        assert!(resolves(&s).await);
    }

    #[tokio::test]
    async fn false_does_not_stop() {
        let (tx, s) = Shutdown::channel();
        let _ = tx.send(false);
        assert!(!s.is_stopped());
        assert!(!resolves(&s).await);
    }

    #[tokio::test]
    async fn a_dropped_sender_stops() {
        let (tx, s) = Shutdown::channel();
        let waiter = {
            let s = s.clone();
            tokio::spawn(async move { s.stopped().await })
        };
        tokio::task::yield_now().await;
        drop(tx);
        assert!(s.is_stopped());
        assert!(resolves(&s).await);
        assert!(tokio::time::timeout(Duration::from_secs(1), waiter)
            .await
            .is_ok_and(|r| r.is_ok()));
    }

    #[tokio::test]
    async fn already_true_at_creation_stops() {
        let (tx, rx) = watch::channel(true);
        let s = Shutdown::from(rx);
        assert!(s.is_stopped());
        assert!(resolves(&s).await);
        drop(tx);
        assert!(s.is_stopped());
    }

    #[tokio::test]
    async fn its_watch_receiver_turns_true_when_the_sender_is_dropped() {
        let (tx, s) = Shutdown::channel();
        let mut rx = s.to_watch();
        assert!(!*rx.borrow());
        drop(tx);
        let turned = tokio::time::timeout(Duration::from_secs(1), rx.wait_for(|v| *v)).await;
        assert!(turned.is_ok_and(|r| r.is_ok()));
        // Made after the stop: true at once.
        assert!(*s.to_watch().borrow());
    }

    #[tokio::test]
    async fn its_watch_receiver_turns_true_on_true() {
        let (tx, s) = Shutdown::channel();
        let mut rx = s.to_watch();
        let _ = tx.send(true);
        let turned = tokio::time::timeout(Duration::from_secs(1), rx.wait_for(|v| *v)).await;
        assert!(turned.is_ok_and(|r| r.is_ok()));
    }

    #[tokio::test]
    async fn a_clone_made_after_the_stop_is_stopped() {
        let (tx, s) = Shutdown::channel();
        let _ = tx.send(true);
        let later = s.clone();
        assert!(later.is_stopped());
        assert!(resolves(&later).await);
    }
}
