//! The command line: clap types and one module per subcommand.

mod bench;
mod check;
mod common;
mod convert;
mod generate;
mod grid;
mod info;
mod matrix;
mod predict;
mod scale;
mod scale_bench;
mod train;

use clap::{Parser, Subcommand};

/// Kernel SVMs trained with Frank–Wolfe methods (LIBSVM-compatible models).
#[derive(Debug, Parser)]
#[command(name = "fwsvm", version, about, long_about = None, max_term_width = 100)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Train an SVM and write a LIBSVM model file.
    Train(train::TrainArgs),
    /// Predict labels with a model; prints the accuracy when the data are labelled.
    Predict(predict::PredictArgs),
    /// Convert raw datasets (KDD Cup 99) to LIBSVM format.
    #[command(subcommand)]
    Convert(convert::ConvertCommand),
    /// Min-max scale features, like svm-scale.
    Scale(scale::ScaleArgs),
    /// Generate synthetic data: `fwsvm gen checkerboard --rows N OUT`.
    #[command(subcommand)]
    Gen(generate::GenCommand),
    /// Benchmarks: the algorithm matrix (`fwsvm bench -a fw,partan --datasets A,B,C`) with
    /// tables, plots and significance tests; `fwsvm bench kernels` for kernel throughput.
    Bench(bench::BenchArgs),
    /// Cross-validated accuracy over log2 grids of C and γ (as LIBSVM's grid.py).
    Grid(grid::GridArgs),
    /// Train on the CPU and on the GPU and compare: objectives, gradients, labels.
    Check(check::CheckArgs),
    /// List GPU adapters: name, backend, type, f64 support, binding and buffer limits.
    Info(info::InfoArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish or powershell) to standard
    /// output, e.g. `fwsvm completions bash > ~/.local/share/bash-completion/completions/fwsvm`.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

/// Every option that takes a value accepts one that starts with `-`, so that `-c -1` reaches
/// the option's own check ("expected a positive number, found `-1`") instead of being read as
/// an unknown flag.
fn allow_negative_values(cmd: clap::Command) -> clap::Command {
    cmd.mut_args(|a| {
        if a.get_action().takes_values() && !a.is_positional() {
            a.allow_negative_numbers(true)
        } else {
            a
        }
    })
    .mut_subcommands(allow_negative_values)
}

/// The command definition as `fwsvm` parses it.
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    allow_negative_values(Cli::command())
}

/// Parses the process's arguments (exits with clap's message and code 2 on a usage error).
pub fn parse() -> Cli {
    use clap::FromArgMatches;
    let matches = command().get_matches_from(libsvm_args(std::env::args_os()));
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

/// svm-train's class weights, `-wLABEL WEIGHT` (`-w1 5`, `-w-1 0.5`), which no option parser
/// reads as one flag, become `--class-weight LABEL=WEIGHT`; every other argument passes
/// unchanged.
pub fn libsvm_args(args: impl IntoIterator<Item = std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let mut out = Vec::new();
    let mut it = args.into_iter().peekable();
    while let Some(a) = it.next() {
        let label = a
            .to_str()
            .and_then(|s| s.strip_prefix("-w"))
            .filter(|l| !l.is_empty() && l.parse::<f64>().is_ok())
            .map(str::to_owned);
        match (label, it.peek()) {
            (Some(l), Some(w)) => {
                let w = w.to_string_lossy().into_owned();
                it.next();
                // One token: a value starting with `-` (label −1) would read as a flag.
                out.push(format!("--class-weight={l}={w}").into());
            }
            _ => out.push(a),
        }
    }
    out
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> crate::Result<()> {
    match cli.command {
        Command::Train(a) => train::run(a),
        Command::Predict(a) => predict::run(a),
        Command::Convert(c) => convert::run(c),
        Command::Scale(a) => scale::run(a),
        Command::Gen(c) => generate::run(c),
        Command::Info(a) => info::run(a),
        Command::Check(a) => check::run(a),
        Command::Grid(a) => grid::run(a),
        Command::Bench(c) => bench::run(c),
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut command(), "fwsvm", &mut std::io::stdout());
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn cli_definition_is_consistent() {
        super::command().debug_assert();
    }
}
