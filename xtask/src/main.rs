//! `cargo xtask`: the one entry point for checks beyond `cargo build`.
fn main() {}
