//! The `fwsvm` command: parse, run, print the error chain, exit 0 / 1 (runtime) / 2 (usage or input).

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

fn main() -> ExitCode {
    #[cfg(unix)]
    ensure_runtime_dir();
    let cli = fwsvm::cli::parse();
    #[cfg(unix)]
    install_signal_handlers();
    let code = match fwsvm::cli::run(cli) {
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
