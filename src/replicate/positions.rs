//! The acknowledged positions of a flow's partitions, as the pump hands them to the tasks
//! beside it (the duties task's checkpoints and group offset sync): a request channel the
//! pump answers between two of its rounds, without waiting.

use std::collections::HashMap;

use tokio::sync::{mpsc, oneshot};

use crate::offsets::OffsetMap;

/// The acknowledged offset maps of the partitions the data path runs: (source topic,
/// partition) → (target topic, map).
pub type Positions = HashMap<(String, i32), (String, OffsetMap)>;

/// The data path's side of the positions channel: requests to answer between rounds.
pub type PositionRequests = mpsc::Receiver<oneshot::Sender<Positions>>;

/// How the duties task asks the data path for its positions.
#[derive(Debug, Clone)]
pub struct PositionsHandle(mpsc::Sender<oneshot::Sender<Positions>>);

impl PositionsHandle {
    /// A handle and the receiver the data path answers from.
    pub fn channel() -> (PositionsHandle, PositionRequests) {
        let (tx, rx) = mpsc::channel(4);
        (PositionsHandle(tx), rx)
    }

    /// The data path's positions now, or `None` if it has stopped.
    pub async fn get(&self) -> Option<Positions> {
        let (tx, rx) = oneshot::channel();
        self.0.send(tx).await.ok()?;
        rx.await.ok()
    }
}
