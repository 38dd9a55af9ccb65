//! The model clock and what runs when it moves: every kubelet step, graceful removal and
//! ServiceAccount-controller creation that falls due on the way runs at its own due time, in
//! time order. The clock never goes backwards.
//!
//! Layer: part of the pure model. The caller moves the clock; nothing here reads a real one.

use std::time::Duration;

use jiff::Timestamp;

use super::ClusterModel;
use super::time::add;

impl ClusterModel {
    /// Advance the clock by `by`, running every kubelet step and graceful removal that falls due
    /// on the way, each at its own due time (in time order; ties in namespace/name order).
    pub fn advance(&mut self, by: Duration) {
        self.advance_to(add(self.now, by));
    }

    /// Move the clock to `at` (as [`ClusterModel::advance`]). The clock never goes backwards:
    /// an earlier `at` only runs what is already due.
    pub fn advance_to(&mut self, at: Timestamp) {
        loop {
            let pod = self.kubelet.next_due();
            // The ServiceAccount controller's pending creations run in time order with the
            // kubelet's steps; on a tie the account comes first.
            if let Some((due, namespace)) = self.accounts.next_due()
                && due <= at
                && pod.as_ref().is_none_or(|(pod_due, _)| due <= *pod_due)
            {
                if due > self.now {
                    self.now = due;
                }
                self.create_due_account(&namespace);
                continue;
            }
            let Some((due, key)) = pod else { break };
            if due > at {
                break;
            }
            if due > self.now {
                self.now = due;
            }
            self.run_due(&key);
        }
        if at > self.now {
            self.now = at;
        }
    }

    /// Same as [`ClusterModel::advance_to`]; the name the simulator's scaled clock uses.
    pub fn set_now(&mut self, at: Timestamp) {
        self.advance_to(at);
    }

    /// Run whatever is due at the current time without moving the clock (for example the
    /// scheduling of a pod created just now).
    pub fn settle(&mut self) {
        self.advance_to(self.now);
    }

    /// When the next kubelet step or graceful removal is due, if any.
    pub fn next_due(&self) -> Option<Timestamp> {
        let pod = self.kubelet.next_due().map(|(t, _)| t);
        let account = self.accounts.next_due().map(|(t, _)| t);
        pod.into_iter().chain(account).min()
    }
}
