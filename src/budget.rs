//! How long a training may go on: the time limit's deadline and the stop request
//! ([`crate::interrupt`]), seen by the solver loops between iterations and by the long passes
//! over every row (the exact gradient, the certification's screen and panels) between chunks
//! of rows.
//!
//! A training sets its deadline once ([`within`]); a solve nested in it (the warm start's
//! subsample, each class pair) sees the earliest deadline of those around it. A pass captures
//! the thread's budget before it fans out to worker threads ([`current`]), skips every chunk
//! it reaches once the budget is spent ([`Budget::spent`]), and its caller asks afterwards
//! whether it ran whole ([`Budget::cut`]): a pass that was cut leaves numbers nobody may use,
//! and the run ends with the iterate it had, saying that it is not certified.
//!
//! After a stop, the certification of the iterate gets a short budget of its own ([`grace`]):
//! it runs whole where it is cheap, and is cut where it is not, so a stopped run writes its
//! model within seconds either way.

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Whether passes under a budget may be cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Outside any training (prediction, a solver called directly): never spent.
    Free,
    /// A training's: spent at its deadline or on a stop request.
    Cuttable,
    /// A distributed run's collective passes: never spent, whatever is nested inside (the
    /// ranks must agree on what every pass computed).
    Collective,
}

/// A deadline and whether a stop request ends it too; `cut` records that it was found spent.
#[derive(Debug)]
pub struct Budget {
    deadline: Option<Instant>,
    interrupts: bool,
    mode: Mode,
    cut: AtomicBool,
}

impl Budget {
    fn new(deadline: Option<Instant>, interrupts: bool, mode: Mode) -> Self {
        Budget {
            deadline,
            interrupts,
            mode,
            cut: AtomicBool::new(false),
        }
    }

    /// True once the deadline has passed or (for a training's budget) a stop was requested;
    /// remembered, so [`Budget::cut`] tells the pass's caller. Never outside a training
    /// ([`within`]) nor inside [`unlimited`].
    pub fn spent(&self) -> bool {
        if self.mode != Mode::Cuttable {
            return false;
        }
        if self.cut.load(Ordering::Relaxed) {
            return true;
        }
        let spent = (self.interrupts && crate::interrupt::requested())
            || self.deadline.is_some_and(|d| Instant::now() >= d);
        if spent {
            self.cut.store(true, Ordering::Relaxed);
        }
        spent
    }

    /// True when a [`Budget::spent`] found it spent: a pass that asked may have skipped work.
    pub fn cut(&self) -> bool {
        self.cut.load(Ordering::Relaxed)
    }

    /// The deadline, if there is one.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<Budget>>> = const { RefCell::new(None) };
}

/// The calling thread's budget (outside any [`within`], one that is never spent: prediction
/// and other work outside a training is never cut). A pass takes it before handing rows to
/// other threads.
pub fn current() -> Arc<Budget> {
    CURRENT.with(|c| {
        c.borrow_mut()
            .get_or_insert_with(|| Arc::new(Budget::new(None, false, Mode::Free)))
            .clone()
    })
}

/// The mode a budget nested in the current one takes: a collective scope stays collective,
/// and `training` says whether the new scope is a training's own.
fn nested_mode(training: bool) -> Mode {
    match current().mode {
        Mode::Collective => Mode::Collective,
        Mode::Cuttable => Mode::Cuttable,
        Mode::Free if training => Mode::Cuttable,
        Mode::Free => Mode::Free,
    }
}

/// True when the calling thread's budget is spent.
pub fn spent() -> bool {
    current().spent()
}

/// Runs `f` under `budget` on this thread, then restores the one before.
fn with<R>(budget: Budget, f: impl FnOnce() -> R) -> R {
    adopt(Arc::new(budget), f)
}

/// Runs `f` on this thread under `budget`, a budget taken with [`current`] on another thread:
/// work a training hands to threads of its own (class pairs side by side) stays within the
/// training's deadline and stop request.
pub fn adopt<R>(budget: Arc<Budget>, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Arc<Budget>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let prev = self.0.take();
            CURRENT.with(|c| *c.borrow_mut() = prev);
        }
    }
    let prev = CURRENT.with(|c| c.borrow_mut().replace(budget));
    let _restore = Restore(prev);
    f()
}

/// Runs `f` with the deadline `deadline` (None: the enclosing one's), or the enclosing
/// budget's deadline where that is earlier; a stop request ends it too.
pub fn within<R>(deadline: Option<Instant>, f: impl FnOnce() -> R) -> R {
    let outer = current().deadline();
    let deadline = match (outer, deadline) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    with(Budget::new(deadline, true, nested_mode(true)), f)
}

/// The instant `limit` after `start`; None where it lies beyond the clock's range: a limit
/// that long never ends a run.
pub fn deadline_after(start: Instant, limit: Duration) -> Option<Instant> {
    start.checked_add(limit)
}

/// Runs `f` with `time` from now and nothing else: a stop request already made, or an
/// enclosing deadline already passed, does not end it (the certification of a stopped run).
pub fn grace<R>(time: Duration, f: impl FnOnce() -> R) -> R {
    let b = Budget::new(
        deadline_after(Instant::now(), time),
        false,
        nested_mode(false),
    );
    with(b, f)
}

/// Runs `f` with the enclosing deadline moved `time` later (none stays none), ended by a
/// stop request as before: the certification of a run that converged just before its
/// deadline finishes within the grace a stopped run's would have.
pub fn extended<R>(time: Duration, f: impl FnOnce() -> R) -> R {
    let deadline = current().deadline().and_then(|d| deadline_after(d, time));
    with(Budget::new(deadline, true, nested_mode(false)), f)
}

/// Runs `f` with no deadline and no stop request, whatever budgets are nested inside: the
/// passes of a distributed run, which every process must finish alike.
pub fn unlimited<R>(f: impl FnOnce() -> R) -> R {
    with(Budget::new(None, false, Mode::Collective), f)
}

/// The time a stopped run's certification may take: 3 s after a stop request (none after
/// [`crate::interrupt::abandon`], whose caller discards the result), and after a time limit
/// `limit` 4 % of it within [0.25 s, 3 s] (the run then ends within the limit and 5 %,
/// besides writing the model).
pub fn grace_after(limit: Option<Duration>) -> Duration {
    grace_for(
        limit,
        crate::interrupt::requested(),
        crate::interrupt::abandoned(),
    )
}

/// [`grace_after`] given whether a stop was requested and whether it was abandoned.
fn grace_for(limit: Option<Duration>, requested: bool, abandoned: bool) -> Duration {
    match limit {
        _ if abandoned => Duration::ZERO,
        Some(t) if !requested => Duration::from_secs_f64((0.04 * t.as_secs_f64()).clamp(0.25, 3.0)),
        _ => Duration::from_secs(3),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nested_budget_keeps_the_earlier_deadline_and_the_grace_its_own() {
        let hour = Duration::from_secs(3600);
        let later = Instant::now() + hour;
        within(Some(later), || {
            let b = current();
            assert!(!b.spent() && !b.cut());
            within(Some(later + hour), || {
                assert_eq!(current().deadline(), Some(later))
            });
            within(None, || assert_eq!(current().deadline(), Some(later)));
        });
        let past = Instant::now().checked_sub(Duration::from_millis(1));
        within(past, || {
            let b = current();
            assert!(b.spent() && b.cut());
            // The grace ignores the deadline that passed, and ends on its own.
            grace(hour, || assert!(!spent()));
            grace(Duration::ZERO, || assert!(spent()));
            // Back to the enclosing budget, still spent; moved later, it is not.
            assert!(spent());
            extended(hour, || assert!(!spent()));
        });
        // Outside any training nothing is cut, whatever the deadline of a grace.
        assert_eq!(current().deadline(), None);
        assert!(!spent());
        grace(Duration::ZERO, || assert!(!spent()));
        // A collective scope is never cut, even by a training nested in it.
        unlimited(|| within(past, || assert!(!spent())));
        // Limits beyond the clock's range are no deadline, and nothing overflows.
        assert_eq!(deadline_after(Instant::now(), Duration::MAX), None);
        within(Some(later), || {
            extended(Duration::MAX, || assert_eq!(current().deadline(), None));
            grace(Duration::MAX, || assert!(!spent()));
        });
    }

    #[test]
    fn an_abandoned_run_gets_no_grace() {
        let minute = Some(Duration::from_secs(60));
        assert_eq!(grace_for(None, true, true), Duration::ZERO);
        assert_eq!(grace_for(minute, true, true), Duration::ZERO);
        assert_eq!(grace_for(None, true, false), Duration::from_secs(3));
        assert_eq!(grace_for(minute, true, false), Duration::from_secs(3));
        assert_eq!(
            grace_for(minute, false, false),
            Duration::from_secs_f64(2.4)
        );
    }

    #[test]
    fn the_grace_after_a_time_limit_is_a_share_of_it() {
        assert_eq!(
            grace_after(Some(Duration::from_secs(60))),
            Duration::from_secs_f64(2.4)
        );
        assert_eq!(
            grace_after(Some(Duration::from_secs(1))),
            Duration::from_millis(250)
        );
        assert_eq!(
            grace_after(Some(Duration::from_secs(600))),
            Duration::from_secs(3)
        );
    }
}
