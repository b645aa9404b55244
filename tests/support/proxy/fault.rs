//! Fault-injection plan consulted by the proxy's forwarding loops.
//!
//! The proxy locks the plan once per frame (and once per accepted connection), so tests can
//! change it at any time through [`super::ProduceCheckProxy::fault_plan`]. Add new fault kinds
//! here: give them a field, make `on_request` / `on_response` / `on_connect` return the action.

use std::time::Duration;

/// What the forwarding loop should do with the current frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultAction {
    /// Forward unchanged.
    Forward,
    /// Sleep, then forward.
    Delay(Duration),
    /// Forward the frame, then close the whole proxied connection (e.g. the broker handles a
    /// Produce but the client never sees the response: exercises retries/idempotence).
    ForwardThenClose,
    /// Close the whole proxied connection without forwarding this frame.
    Close,
}

/// A one-shot-or-counted trigger on an API key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyTrigger {
    pub api_key: i16,
    /// How many more matching frames fire this trigger.
    pub remaining: u32,
}

/// Fault plan. `Default` injects nothing.
#[derive(Debug, Clone, Default)]
pub struct FaultPlan {
    /// Delay added before forwarding every request (client->broker).
    pub request_delay: Option<Duration>,
    /// Delay added before forwarding every response (broker->client).
    pub response_delay: Option<Duration>,
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
}

fn fire(triggers: &mut [KeyTrigger], api_key: i16) -> bool {
    for t in triggers.iter_mut() {
        if t.api_key == api_key && t.remaining > 0 {
            t.remaining -= 1;
            return true;
        }
    }
    false
}

impl FaultPlan {
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

    /// Removes every fault.
    pub fn clear(&mut self) {
        *self = FaultPlan::default();
    }

    /// Called for each new client connection; `false` means close it at once.
    pub fn on_connect(&mut self) -> bool {
        !self.refuse_connections
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

    /// Called for each complete broker->client frame (`api_key` of the matching request when
    /// known).
    pub fn on_response(&mut self, api_key: Option<i16>) -> FaultAction {
        if let Some(k) = api_key {
            if fire(&mut self.drop_response, k) {
                return FaultAction::Close;
            }
        }
        match self.response_delay {
            Some(d) => FaultAction::Delay(d),
            None => FaultAction::Forward,
        }
    }
}
