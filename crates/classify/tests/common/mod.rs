//! Fixtures shared by classify's property tests over answer sequences (`machine_props.rs`,
//! `undeploy_props.rs`): the agent under test, another agent, the pod name, and the stream of
//! generated choices a test draws its answers from.
//!
//! Test support only: builds values, decides nothing, performs no I/O.

/// The agent id of the agent under test (`Research Bot #1`).
pub const AGENT_ID: &str = "72bea12366a35432ab394024ae44c214b8cee51a8e1c04be8797a1dc17805c98";
/// Another agent's id.
pub const OTHER_ID: &str = "f9b32d5e68dde69e024b9bb5268f0b7a00000000000000000000000000000000";
/// The pod name of the agent under test.
pub const POD: &str = "apiary-research-bot-1-72bea12366a3";

/// An endless stream of choices cycled from the generated vector (never empty).
pub struct Choices {
    values: Vec<u16>,
    next: usize,
}

impl Choices {
    /// Choices drawn from `values`, from the first.
    pub fn new(values: Vec<u16>) -> Choices {
        Choices { values, next: 0 }
    }

    /// The next choice among `n` (`0..n`).
    pub fn pick(&mut self, n: u16) -> u16 {
        let v = self.values[self.next % self.values.len()];
        self.next += 1;
        v % n
    }
}
