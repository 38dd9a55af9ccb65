//! The `apiary` binary: argument parsing, wiring, output and exit codes. Decides nothing itself.

use clap::Parser;

/// Deploy an agent as exactly one started pod; discover cluster seeds from pods.
#[derive(Parser, Debug)]
#[command(name = "apiary", version, about)]
struct Cli {}

fn main() {
    let _cli = Cli::parse();
}
