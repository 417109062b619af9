//! The counters a backend keeps for diagnostics ([`BackendStats`]) and the names of the calls
//! whose time it keeps ([`call`]).

/// Counters a backend keeps for diagnostics. The device traffic (submits, round trips,
/// dispatches, bytes each way) is what decides speed on a real GPU, and is counted on any
/// adapter; the CPU backend leaves it at zero.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BackendStats {
    /// Kernel columns computed from the data.
    pub columns_computed: u64,
    /// Kernel columns served by the cache.
    pub cache_hits: u64,
    /// Columns computed ahead of use by batched passes ([`Columns::prefetch_columns`](crate::backend::Columns::prefetch_columns)).
    pub prefetched: u64,
    /// Update passes.
    pub updates: u64,
    /// Command buffers submitted to the device.
    pub submits: u64,
    /// Submits the host waited for (a readback).
    pub round_trips: u64,
    /// Compute dispatches recorded.
    pub dispatches: u64,
    /// Bytes written to device buffers.
    pub bytes_up: u64,
    /// Bytes read back from the device.
    pub bytes_down: u64,
    /// Nanoseconds the host spent in round trips: submitting the pending work and waiting
    /// for its results.
    pub wait_ns: u64,
    /// Nanoseconds spent inside the backend's calls, by [`call`] index (host time: the work
    /// a device runs asynchronously lands in the call that waits for it).
    pub call_ns: [u64; call::NAMES.len()],
}

/// Indices of [`BackendStats::call_ns`]: the calls whose time the CPU and GPU backends keep.
pub mod call {
    /// [`Backend::reduce`](crate::backend::Backend::reduce).
    pub const REDUCE: usize = 0;
    /// [`Columns::lowest`](crate::backend::Columns::lowest).
    pub const LOWEST: usize = 1;
    /// [`Backend::gather`](crate::backend::Backend::gather).
    pub const GATHER: usize = 2;
    /// [`Columns::block`](crate::backend::Columns::block).
    pub const BLOCK: usize = 3;
    /// [`Columns::update_many`](crate::backend::Columns::update_many).
    pub const UPDATE_MANY: usize = 4;
    /// [`Backend::update`](crate::backend::Backend::update).
    pub const UPDATE: usize = 5;
    /// The backend's construction: its buffers, the data's upload or layout, bind groups
    /// (one per working-set round of a shrinking run, and the warm start's).
    pub const SETUP: usize = 6;
    /// [`Columns::away_candidates`](crate::backend::Columns::away_candidates).
    pub const AWAY: usize = 7;
    /// [`DeviceLoop::run_batch`](crate::backend::DeviceLoop::run_batch).
    pub const DEVICE_LOOP: usize = 8;
    /// [`Columns::prefetch_columns`](crate::backend::Columns::prefetch_columns).
    pub const PREFETCH: usize = 9;
    /// The calls' names, by index.
    pub const NAMES: [&str; 10] = [
        "reduce",
        "lowest",
        "gather",
        "block",
        "update_many",
        "update",
        "setup",
        "away",
        "device_loop",
        "prefetch",
    ];
}

impl BackendStats {
    /// The sum of two runs' counters.
    pub fn add(&mut self, o: &BackendStats) {
        self.columns_computed += o.columns_computed;
        self.cache_hits += o.cache_hits;
        self.prefetched += o.prefetched;
        self.updates += o.updates;
        self.submits += o.submits;
        self.round_trips += o.round_trips;
        self.dispatches += o.dispatches;
        self.bytes_up += o.bytes_up;
        self.bytes_down += o.bytes_down;
        self.wait_ns += o.wait_ns;
        for (a, b) in self.call_ns.iter_mut().zip(&o.call_ns) {
            *a += b;
        }
    }

    /// "time in backend calls: reduce 1.20s, lowest 0.31s, …" (the calls that took any).
    pub fn call_times(&self) -> Option<String> {
        let parts: Vec<String> = call::NAMES
            .iter()
            .zip(&self.call_ns)
            .filter(|&(_, &ns)| ns > 0)
            .map(|(name, &ns)| format!("{name} {:.2}s", ns as f64 * 1e-9))
            .collect();
        (!parts.is_empty()).then(|| format!("time in backend calls: {}", parts.join(", ")))
    }

    /// True when a device was used (any traffic counted).
    pub fn has_device_traffic(&self) -> bool {
        self.submits > 0 || self.bytes_up > 0
    }

    /// "per iteration: R round trips, S submits, D dispatches, U B up, W B down" (over
    /// `iterations`).
    pub fn per_iteration(&self, iterations: u64) -> String {
        let n = iterations.max(1) as f64;
        format!(
            "per iteration: {:.2} round trips, {:.2} submits, {:.2} dispatches, {:.0} B up, {:.0} B \
             down",
            self.round_trips as f64 / n,
            self.submits as f64 / n,
            self.dispatches as f64 / n,
            self.bytes_up as f64 / n,
            self.bytes_down as f64 / n
        )
    }
}

/// Runs `$body` — a block that may `return` or use `?`, as a closure returning `$ty` — and
/// adds its host time to `$stats.call_ns[$call]`: the call times of a backend's methods.
macro_rules! timed_call {
    ($stats:expr, $call:expr, $ty:ty, $body:block) => {{
        let start = std::time::Instant::now();
        #[allow(clippy::redundant_closure_call)]
        let r = (|| -> $ty { $body })();
        $stats.call_ns[$call] += start.elapsed().as_nanos() as u64;
        r
    }};
}
pub(crate) use timed_call;
