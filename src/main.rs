//! The `fwsvm` command: parse, run, print the error chain, exit 0 / 1 (runtime) / 2 (usage or input).

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = fwsvm::cli::Cli::parse();
    match fwsvm::cli::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // Every message already names the file, line and cause.
            eprintln!("fwsvm: error: {e}");
            if e.is_user_error() {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}
