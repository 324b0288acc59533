//! `host`: the command-line front end. Every subcommand lives in `host::cli`.

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = host::cli::Cli::parse();
    match host::cli::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
