//! A team of spinning threads for the short parallel passes of a solver's iteration.
//!
//! An iteration of the working-set solver makes two or three parallel passes of tens of µs
//! each, separated by serial host work. A rayon call that short spends more time waking a
//! worker that has gone to sleep between calls (a futex wake; on a virtual machine, of a halted
//! virtual CPU) than in the pass itself, so a second core gains little. This team keeps its
//! workers spinning for [`SPIN`] after each job, as OpenMP's runtimes do, and hands a job over
//! through one atomic counter (docs/BENCHMARKS.md has the measured cost of both).
//!
//! One job runs at a time. A call made while the team is busy (another thread's job) runs on
//! rayon instead, and a call from inside a job runs serially, so nothing waits on itself.
//! Workers that have spun for [`SPIN`] without work park until the next job wakes them; while
//! they spin they may do short steps of idle work ([`set_idle_work`]: the column cache's page
//! faults, taken ahead of its growth).

use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// How long an idle worker spins (yielding after the first few µs) before it parks.
pub const SPIN: Duration = Duration::from_millis(2);

/// A job: n tasks, each run once by whichever thread takes it.
#[derive(Clone, Copy)]
struct Job {
    n: usize,
    /// Valid from the epoch that publishes it until every worker has acknowledged that epoch.
    f: *const (dyn Fn(usize) + Sync),
}

struct Shared {
    /// Bumped once per job; workers start a job when they see it change.
    epoch: AtomicU64,
    job: UnsafeCell<Job>,
    /// The next task to take.
    next: AtomicUsize,
    /// Workers done with the current epoch.
    done: AtomicUsize,
    /// Per worker: parked (or about to park) and waiting for an unpark.
    parked: Vec<AtomicBool>,
    panic: Mutex<Option<Box<dyn std::any::Any + Send>>>,
}

// SAFETY: `job` is written only by the dispatcher holding `Team::dispatch`, while no worker
// reads it (all acknowledged the previous epoch); workers read it after the epoch's Acquire.
unsafe impl Sync for Shared {}
// SAFETY: as for Sync; the job's closure is only called while its dispatcher waits.
unsafe impl Send for Shared {}

struct Team {
    shared: Arc<Shared>,
    threads: Vec<Thread>,
    dispatch: Mutex<()>,
}

thread_local! {
    /// Set while this thread runs a team job's tasks (nested calls run serially).
    static IN_JOB: Cell<bool> = const { Cell::new(false) };
}

/// Teams by size (the size of the rayon pool the caller runs in).
fn team(size: usize) -> Arc<Team> {
    static TEAMS: Mutex<Vec<(usize, Arc<Team>)>> = Mutex::new(Vec::new());
    let mut teams = TEAMS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, t)) = teams.iter().find(|(n, _)| *n == size) {
        return t.clone();
    }
    let t = Arc::new(Team::new(size));
    teams.push((size, t.clone()));
    t
}

impl Team {
    fn new(size: usize) -> Team {
        let workers = size.saturating_sub(1);
        let noop: &'static (dyn Fn(usize) + Sync) = &|_| {};
        let shared = Arc::new(Shared {
            epoch: AtomicU64::new(0),
            // A no-op job that is never run (n = 0).
            job: UnsafeCell::new(Job { n: 0, f: noop }),
            next: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            parked: (0..workers).map(|_| AtomicBool::new(false)).collect(),
            panic: Mutex::new(None),
        });
        // Workers the system refuses to start are left out: the team is then smaller (at
        // worst the caller alone), and `run` waits only for those that exist.
        let mut threads = Vec::with_capacity(workers);
        for w in 0..workers {
            let s = shared.clone();
            match std::thread::Builder::new()
                .name(format!("fwsvm-team-{w}"))
                .spawn(move || worker(&s, w))
            {
                Ok(h) => threads.push(h.thread().clone()),
                Err(_) => break,
            }
        }
        Team {
            shared,
            threads,
            dispatch: Mutex::new(()),
        }
    }
}

/// Takes and runs tasks of `job` until none is left; a panic is kept for the dispatcher.
fn work(s: &Shared, job: Job) {
    IN_JOB.with(|c| c.set(true));
    loop {
        let t = s.next.fetch_add(1, Ordering::Relaxed);
        if t >= job.n {
            break;
        }
        // SAFETY: the dispatcher keeps the closure alive until every worker has acknowledged.
        let f = unsafe { &*job.f };
        if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(t))) {
            let mut slot = s.panic.lock().unwrap_or_else(|e| e.into_inner());
            slot.get_or_insert(p);
            // Leave no task for anyone else.
            s.next.store(usize::MAX / 2, Ordering::Relaxed);
        }
    }
    IN_JOB.with(|c| c.set(false));
}

/// Work an idle worker may do in small steps while it waits ([`set_idle_work`]).
static IDLE_WORK: std::sync::RwLock<Option<fn() -> bool>> = std::sync::RwLock::new(None);

/// Gives the team's waiting workers something to do, and returns what they had: `step` does one
/// short piece of work (a few µs: a new job waits for it) and says whether there was any.
/// Workers call it while they spin, within [`SPIN`] of their last job, never once they park.
pub fn set_idle_work(step: Option<fn() -> bool>) -> Option<fn() -> bool> {
    let mut w = IDLE_WORK.write().unwrap_or_else(|e| e.into_inner());
    std::mem::replace(&mut *w, step)
}

fn worker(s: &Shared, w: usize) {
    let mut seen = 0u64;
    loop {
        let start = Instant::now();
        let mut spins = 0u32;
        let mut idle = *IDLE_WORK.read().unwrap_or_else(|e| e.into_inner());
        loop {
            if s.epoch.load(Ordering::Acquire) != seen {
                break;
            }
            if let Some(step) = idle {
                if start.elapsed() >= SPIN {
                    // Not again before the next job.
                    idle = None;
                } else if step() {
                    continue;
                }
            }
            spins = spins.wrapping_add(1);
            if spins < 1 << 12 {
                std::hint::spin_loop();
                continue;
            }
            if start.elapsed() < SPIN {
                std::thread::yield_now();
                continue;
            }
            // Park: announce it, then look once more (the dispatcher bumps the epoch before
            // it reads the flag, so one of the two sees the other).
            s.parked[w].store(true, Ordering::SeqCst);
            while s.epoch.load(Ordering::SeqCst) == seen {
                std::thread::park();
            }
            s.parked[w].store(false, Ordering::SeqCst);
            break;
        }
        seen = s.epoch.load(Ordering::Acquire);
        // SAFETY: published before the epoch (Release/Acquire); not rewritten until this
        // worker acknowledges below.
        let job = unsafe { *s.job.get() };
        work(s, job);
        s.done.fetch_add(1, Ordering::Release);
    }
}

/// Runs `f(t)` for every t in 0..n, in parallel on the calling thread's team (the size of its
/// rayon pool), and returns when all have run. A panic in a task is resumed here.
pub fn run(n: usize, f: &(dyn Fn(usize) + Sync)) {
    let size = rayon::current_num_threads();
    if n <= 1 || size <= 1 || IN_JOB.with(|c| c.get()) {
        (0..n).for_each(f);
        return;
    }
    let team = team(size);
    let Ok(_guard) = team.dispatch.try_lock() else {
        use rayon::prelude::*;
        (0..n).into_par_iter().for_each(f);
        return;
    };
    let s = &*team.shared;
    // SAFETY: every worker acknowledged the last epoch (we waited), so none reads `job`; the
    // closure's lifetime is erased for the workers, who are done with it before we return.
    unsafe {
        *s.job.get() = Job {
            n,
            f: std::mem::transmute::<
                *const (dyn Fn(usize) + Sync + '_),
                *const (dyn Fn(usize) + Sync),
            >(f),
        };
    }
    s.next.store(0, Ordering::Relaxed);
    s.done.store(0, Ordering::Relaxed);
    s.epoch.fetch_add(1, Ordering::SeqCst);
    for (w, t) in team.threads.iter().enumerate() {
        if s.parked[w].load(Ordering::SeqCst) {
            t.unpark();
        }
    }
    // SAFETY: this dispatcher holds `Team::dispatch` and wrote the job before the epoch.
    work(s, unsafe { *s.job.get() });
    let workers = team.threads.len();
    let mut spins = 0u32;
    while s.done.load(Ordering::Acquire) < workers {
        spins = spins.wrapping_add(1);
        if spins < 1 << 14 {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
    let panic = s.panic.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(p) = panic {
        std::panic::resume_unwind(p);
    }
}

/// Runs `f` with this thread's team calls made serially, as inside a team job: for tasks that
/// run side by side on rayon's workers, each of which should keep its passes to itself.
pub fn serially<R>(f: impl FnOnce() -> R) -> R {
    let was = IN_JOB.with(|c| c.replace(true));
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            IN_JOB.with(|c| c.set(self.0));
        }
    }
    let _restore = Restore(was);
    f()
}

/// `out` ← [f(0), …, f(n − 1)], computed in parallel by [`run`].
pub fn map_into<R: Send>(n: usize, f: impl Fn(usize) -> R + Sync, out: &mut Vec<R>) {
    struct Ptr<R>(*mut R);
    // SAFETY: each task writes its own element.
    unsafe impl<R> Sync for Ptr<R> {}
    out.clear();
    out.reserve(n);
    let p = Ptr(out.as_mut_ptr());
    let p = &p;
    // SAFETY: task t writes element t < n of the reserved capacity, once.
    run(n, &|t| unsafe { p.0.add(t).write(f(t)) });
    // SAFETY: `run` returned without a panic, so every element 0..n was written once.
    unsafe { out.set_len(n) };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Inside `serially` a team call runs every task on the calling thread, in order; after
    /// it the thread dispatches to its team again.
    #[test]
    fn serially_keeps_team_calls_on_the_calling_thread() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        pool.install(|| {
            let me = std::thread::current().id();
            let seen = Mutex::new(Vec::new());
            serially(|| {
                run(64, &|t| {
                    seen.lock().unwrap().push((t, std::thread::current().id()));
                })
            });
            let seen = seen.into_inner().unwrap();
            assert_eq!(seen.len(), 64);
            assert!(
                seen.iter()
                    .enumerate()
                    .all(|(k, &(t, id))| t == k && id == me)
            );
            assert!(!IN_JOB.with(|c| c.get()), "the flag is restored");
            let mut out = Vec::new();
            map_into(8, |t| t * 2, &mut out);
            assert_eq!(out, [0, 2, 4, 6, 8, 10, 12, 14]);
        });
    }

    #[test]
    fn every_task_runs_once_and_results_keep_their_order() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        pool.install(|| {
            let mut out = Vec::new();
            for round in 0..200 {
                let n = round % 37 + 2;
                map_into(n, |t| t * t + round, &mut out);
                assert_eq!(out, (0..n).map(|t| t * t + round).collect::<Vec<_>>());
                // Let the workers park now and then.
                if round % 50 == 0 {
                    std::thread::sleep(SPIN * 2);
                }
            }
        });
    }

    /// A waiting worker runs the idle work between jobs (and the jobs still run completely).
    #[test]
    fn waiting_workers_do_the_idle_work() {
        static STEPS: AtomicUsize = AtomicUsize::new(0);
        fn step() -> bool {
            STEPS.fetch_add(1, Ordering::Relaxed) < 1000
        }
        // A team of its own (teams are per size).
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(4)
            .build()
            .unwrap();
        // Another test may register the column cache's idle work once while this one runs:
        // a second attempt then has the workers to itself.
        for _ in 0..3 {
            let before = set_idle_work(Some(step));
            pool.install(|| {
                let mut out = Vec::new();
                for round in 0..20 {
                    map_into(4, |t| t + round, &mut out);
                    assert_eq!(out, (0..4).map(|t| t + round).collect::<Vec<_>>());
                    std::thread::sleep(Duration::from_micros(200));
                }
            });
            set_idle_work(before);
            if STEPS.load(Ordering::Relaxed) > 0 {
                break;
            }
        }
        assert!(STEPS.load(Ordering::Relaxed) > 0, "no idle step ran");
    }

    #[test]
    fn a_panicking_task_reaches_the_caller_and_the_team_goes_on() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        pool.install(|| {
            let r = std::panic::catch_unwind(|| {
                run(8, &|t| {
                    if t == 5 {
                        panic!("task five");
                    }
                })
            });
            let msg = r.expect_err("the panic comes back");
            assert_eq!(msg.downcast_ref::<&str>(), Some(&"task five"));
            let mut out = Vec::new();
            map_into(4, |t| t + 1, &mut out);
            assert_eq!(out, vec![1, 2, 3, 4]);
        });
    }

    #[test]
    fn concurrent_and_nested_calls_complete() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        pool.install(|| {
            let total = AtomicUsize::new(0);
            std::thread::scope(|sc| {
                for _ in 0..3 {
                    sc.spawn(|| {
                        for _ in 0..100 {
                            run(4, &|_| {
                                // A nested call runs serially inside the job.
                                run(3, &|_| {
                                    total.fetch_add(1, Ordering::Relaxed);
                                });
                            });
                        }
                    });
                }
            });
            assert_eq!(total.load(Ordering::Relaxed), 3 * 100 * 4 * 3);
        });
    }
}
