//! Page faults taken ahead of the column cache's growth, in the team's idle time.
//!
//! A cache slot's memory is supplied by the operating system on first write, one page fault per
//! 4 KiB. On the 2-core virtual machine of docs/BENCHMARKS.md a fault on memory the host has not
//! backed recently costs about 1.2 µs, and the working-set solver writes every new column into
//! fresh memory: on ijcnn1 the faults are 0.08 s of the column passes' 0.21 s. Between those
//! passes the host runs an iteration's serial part (the selection of W, the inner solve) while
//! the team's workers spin ([`crate::team`]); there a worker populates the pages just past the
//! cache's frontier (`madvise(MADV_POPULATE_WRITE)`: the page tables filled as a write would
//! fill them, the contents unchanged), at most [`AHEAD`] bytes ahead, in steps of [`STEP`], so a
//! new job waits at most one step for it.
//!
//! Populating never changes what the memory holds, so a step on a range that the cache has
//! since freed or another allocation reuses is harmless (wasted at worst); it needs Linux 5.14,
//! and on an older kernel or another system the steps do nothing.

use std::sync::Mutex;

/// How far past the cache's frontier the idle steps go: about seventy working-set iterations of
/// ijcnn1's new columns, and no more memory than that taken early.
pub const AHEAD: usize = 32 << 20;
/// Bytes one idle step populates (about 5 µs on the machine above).
pub const STEP: usize = 4 * PAGE;
const PAGE: usize = 4096;

/// The range still to populate: byte addresses, page-aligned, `next` ≤ `end`; `base` names the
/// region it lies in.
struct Target {
    base: usize,
    next: usize,
    end: usize,
}

impl Target {
    /// The range for a region at `base` of `len` bytes in use up to `used`: from the page
    /// past `used` (or where the last steps in the same region got to, if further) up to
    /// [`AHEAD`] bytes past `used`, within the region.
    fn set(&mut self, base: usize, len: usize, used: usize) {
        let lo = (base + used.min(len)).next_multiple_of(PAGE);
        let hi = (base + len.min(used.saturating_add(AHEAD))) & !(PAGE - 1);
        if self.base != base {
            self.base = base;
            self.next = lo;
        } else {
            self.next = self.next.max(lo);
        }
        self.end = hi.max(self.next);
    }
}

static TARGET: Mutex<Target> = Mutex::new(Target {
    base: 0,
    next: 0,
    end: 0,
});

/// The region at `base` of `len` bytes is in use up to `used` bytes: the idle steps populate
/// from there up to [`AHEAD`] bytes further (never past the region). Registers the steps with
/// the team on first use.
pub fn publish(base: *const u8, len: usize, used: usize) {
    if !cfg!(target_os = "linux") || len == 0 {
        return;
    }
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        crate::team::set_idle_work(Some(step));
    });
    TARGET
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .set(base as usize, len, used);
}

/// The region at `base` is being freed: nothing more to populate in it.
pub fn retract(base: *const u8) {
    let mut t = TARGET.lock().unwrap_or_else(|e| e.into_inner());
    if t.base == base as usize {
        *t = Target {
            base: 0,
            next: 0,
            end: 0,
        };
    }
}

/// One idle step: populates the next [`STEP`] bytes of the target; false when there was
/// nothing to do (or the system cannot).
pub fn step() -> bool {
    let Ok(mut t) = TARGET.try_lock() else {
        return false;
    };
    if t.next >= t.end {
        return false;
    }
    let (at, n) = (t.next, STEP.min(t.end - t.next));
    t.next += n;
    drop(t);
    if !populate(at, n) {
        // An old kernel (EINVAL) or a range gone (ENOMEM): stop until the next publish.
        let mut t = TARGET.lock().unwrap_or_else(|e| e.into_inner());
        t.end = t.next;
    }
    true
}

#[cfg(target_os = "linux")]
fn populate(at: usize, n: usize) -> bool {
    // SAFETY: MADV_POPULATE_WRITE changes no byte of the range; on memory not mapped it fails.
    unsafe { libc::madvise(at as *mut libc::c_void, n, libc::MADV_POPULATE_WRITE) == 0 }
}

#[cfg(not(target_os = "linux"))]
fn populate(_at: usize, _n: usize) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The target runs from the page past the frontier to AHEAD past it, never past the region,
    /// and never back over pages the steps already did in the same region.
    #[test]
    fn the_target_lies_ahead_of_the_frontier_within_the_region() {
        let mut t = Target {
            base: 0,
            next: 0,
            end: 0,
        };
        let base = 1 << 30;
        t.set(base, 100 * AHEAD, 3 * PAGE + 10);
        assert_eq!((t.next, t.end), (base + 4 * PAGE, base + AHEAD + 3 * PAGE));
        t.next += 10 * PAGE;
        t.set(base, 100 * AHEAD, 5 * PAGE);
        assert_eq!((t.next, t.end), (base + 14 * PAGE, base + AHEAD + 5 * PAGE));
        // The region's end bounds it; a new region starts afresh.
        t.set(base, 8 * PAGE + 100, 5 * PAGE);
        assert_eq!((t.next, t.end), (base + 14 * PAGE, base + 14 * PAGE));
        t.set(2 * base, 8 * PAGE + 100, 5 * PAGE);
        assert_eq!((t.next, t.end), (2 * base + 5 * PAGE, 2 * base + 8 * PAGE));
    }

    /// Populating a range changes none of its bytes (where the system supports it at all).
    #[test]
    fn populating_changes_nothing() {
        let mut region = vec![0u8; 64 * PAGE];
        region[5 * PAGE + 3] = 7;
        let at = (region.as_ptr() as usize).next_multiple_of(PAGE);
        let ok = populate(at, 32 * PAGE);
        if cfg!(target_os = "linux") && !ok {
            eprintln!("SKIPPED: MADV_POPULATE_WRITE is not supported here (Linux < 5.14)");
        }
        for (i, &b) in region.iter().enumerate() {
            assert_eq!(b, if i == 5 * PAGE + 3 { 7 } else { 0 }, "byte {i}");
        }
    }
}
