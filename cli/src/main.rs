//! The `fwsvm` command: clap types and one module per subcommand over the `fwsvm` library;
//! `main` parses, runs, prints the error chain and exits 0 / 1 (runtime) / 2 (usage or input).

mod bench;
mod check;
mod common;
mod convert;
mod experiment;
mod fmt;
mod generate;
mod grid;
mod info;
mod matrix;
mod predict;
mod scale;
mod scale_bench;
mod train;

use clap::{Parser, Subcommand};

/// The version `fwsvm --version` and `fwsvm info` print, with the optional features this
/// command was built with (`gpu`: the wgpu backend; `mpi`: training across processes), so that
/// a benchmark or a bug report says which build it ran.
#[cfg(all(feature = "gpu", feature = "mpi"))]
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (features: gpu, mpi)");
#[cfg(all(feature = "gpu", not(feature = "mpi")))]
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (features: gpu)");
#[cfg(all(not(feature = "gpu"), feature = "mpi"))]
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (features: mpi)");
#[cfg(not(any(feature = "gpu", feature = "mpi")))]
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (features: none)");

/// Kernel SVMs trained with Frank–Wolfe methods (LIBSVM-compatible models).
#[derive(Debug, Parser)]
#[command(name = "fwsvm", version = VERSION, about, long_about = None, max_term_width = 100)]
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
pub fn run(cli: Cli) -> fwsvm::Result<()> {
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

use std::process::ExitCode;

/// The Vulkan and EGL loaders print "XDG_RUNTIME_DIR is invalid or not set" on every adapter
/// probe when the variable is missing (servers, containers, CI). Give this process a private
/// 0700 directory instead, before any thread exists (so setting the variable is sound).
#[cfg(unix)]
fn ensure_runtime_dir() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let valid =
        std::env::var_os("XDG_RUNTIME_DIR").is_some_and(|d| std::path::Path::new(&d).is_dir());
    if valid {
        return;
    }
    let uid = std::fs::metadata("/proc/self").map(|m| m.uid()).ok();
    let dir = std::env::temp_dir().join(match uid {
        Some(u) => format!("fwsvm-runtime-{u}"),
        None => "fwsvm-runtime".into(),
    });
    let _ = std::fs::create_dir(&dir);
    let Ok(meta) = std::fs::metadata(&dir) else {
        return;
    };
    if !meta.is_dir() || uid.is_some_and(|u| meta.uid() != u) {
        return;
    }
    if meta.permissions().mode() & 0o077 != 0
        && std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).is_err()
    {
        return;
    }
    // SAFETY: called first thing in main, while the process has a single thread.
    unsafe { std::env::set_var("XDG_RUNTIME_DIR", &dir) };
}

/// SIGINT and SIGTERM on a thread of their own. The first asks every solver to stop at its
/// current iterate ([`fwsvm::interrupt`]): the run certifies, writes what it has and exits
/// with 128 + the signal's number. The second exits at once with that code, after removing
/// any temporary output file, so that existing files stay as they were.
#[cfg(unix)]
fn install_signal_handlers() {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
        return; // The default handlers stay: the process dies on the signal, as before.
    };
    let spawned = std::thread::Builder::new()
        .name("fwsvm-signals".into())
        .spawn(move || {
            for sig in signals.forever() {
                if fwsvm::interrupt::requested() {
                    eprintln!("\nfwsvm: second interrupt: aborting; no output was changed");
                    fwsvm::output::abort(128 + sig);
                }
                fwsvm::interrupt::request(Some(sig));
                eprintln!(
                    "\nfwsvm: interrupted: stopping at the current iterate and writing the \
                     results (interrupt again to abort without writing)"
                );
            }
        });
    drop(spawned);
}

/// Rust starts a program with SIGPIPE ignored, so a write to a closed pipe (`fwsvm info |
/// head -1`, `fwsvm predict data model /dev/stdout | head`) fails and `println!` panics. A
/// command-line tool ends there instead, as `cat` or `grep` do: SIGPIPE's default action.
#[cfg(unix)]
fn restore_sigpipe() {
    // SAFETY: called first in main, before any thread exists; SIG_DFL is a valid action.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> ExitCode {
    #[cfg(unix)]
    restore_sigpipe();
    #[cfg(unix)]
    ensure_runtime_dir();
    let cli = parse();
    #[cfg(unix)]
    install_signal_handlers();
    let code = match run(cli) {
        Ok(()) => 0,
        Err(e) => {
            // Every message already names the file, line and cause. One write, so that the
            // ranks of an MPI job sharing the terminal do not interleave their lines.
            use std::io::Write as _;
            let line = format!("fwsvm: error: {e}\n");
            let _ = std::io::stderr().write_all(line.as_bytes());
            if e.is_user_error() { 2 } else { 1 }
        }
    };
    // An interrupted run exits as the signal's default action would report it (130 for
    // SIGINT, 143 for SIGTERM), whatever it managed to write.
    match fwsvm::interrupt::signal() {
        Some(sig) => ExitCode::from((128 + sig).clamp(0, 255) as u8),
        None => ExitCode::from(code),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn cli_definition_is_consistent() {
        super::command().debug_assert();
    }
}
