//! The `fwsvm` command: parse, run, print the error chain, exit 0 / 1 (runtime) / 2 (usage or input).

use clap::Parser;
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

fn main() -> ExitCode {
    #[cfg(unix)]
    ensure_runtime_dir();
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
