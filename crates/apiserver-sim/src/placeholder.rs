//! Temporary stand-in until apiary-cluster-model's API lands. Holds no objects.
#![allow(missing_docs, dead_code, clippy::all)] // temporary: replaced by the real model

use jiff::Timestamp;

#[derive(Debug)]
pub struct ClusterModel {
    now: Timestamp,
}

impl ClusterModel {
    pub fn new(now: Timestamp) -> Self {
        ClusterModel { now }
    }
    pub fn advance_to(&mut self, now: Timestamp) {
        self.now = now;
    }
    pub fn latest_resource_version(&self) -> u64 {
        0
    }
    pub fn ensure_namespace(&mut self, _name: &str) {}
}
