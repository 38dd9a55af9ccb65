//! The integration tests of `apiary-classify`, in one test binary: the property tests of each
//! machine and rule (each module was its own binary once; one binary links once).

#[path = "../common/mod.rs"]
mod common;

mod duration_props;
mod expiry_props;
mod gc_pass_props;
mod gc_props;
mod inventory_props;
mod machine_props;
mod status_props;
mod undeploy_props;
