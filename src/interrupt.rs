//! A request to stop, set by a signal (the command line installs the handlers) or by a
//! library user, and read by the solver loops between iterations.
//!
//! The first request ends each running solver at its current iterate, like a time limit: the
//! certified gap is still computed and the model is still built, with the stop reason
//! [`crate::solver::StopReason::Interrupted`]. Loops over several fits (cross-validation, grid,
//! bench) stop after the fit that was running.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// 0, or the number of the first signal that asked to stop (−1 for a request made in code).
static REQUEST: AtomicI32 = AtomicI32::new(0);
/// Set with a request whose caller will discard the result (see [`abandon`]).
static ABANDON: AtomicBool = AtomicBool::new(false);

/// Asks every solver to stop at its current iterate; `signal` is the signal number, or None
/// for a request made in code. Only the first request is kept.
pub fn request(signal: Option<i32>) {
    let _ = REQUEST.compare_exchange(0, signal.unwrap_or(-1), Ordering::SeqCst, Ordering::SeqCst);
}

/// A stop request from a caller that will discard what the running fits return (the Python
/// package, which raises KeyboardInterrupt): the fits stop as after [`request`], but a stopped
/// run gets no time to certify its iterate (`budget::grace_after` is zero), so the
/// caller gets control back as soon as the running pass has stopped.
pub fn abandon() {
    ABANDON.store(true, Ordering::SeqCst);
    request(None);
}

/// True once [`abandon`] was called (and not cleared).
pub fn abandoned() -> bool {
    ABANDON.load(Ordering::Relaxed)
}

/// True once a stop was requested.
pub fn requested() -> bool {
    REQUEST.load(Ordering::Relaxed) != 0
}

/// The signal that asked to stop, if one did.
pub fn signal() -> Option<i32> {
    match REQUEST.load(Ordering::SeqCst) {
        s if s > 0 => Some(s),
        _ => None,
    }
}

/// Forgets a request (for library users that go on after an interrupted fit).
pub fn clear() {
    ABANDON.store(false, Ordering::SeqCst);
    REQUEST.store(0, Ordering::SeqCst);
}
