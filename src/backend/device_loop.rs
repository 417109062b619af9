//! The working-set loop run on the device ([`DeviceLoop`]): a backend that holds α, g and the
//! kernel columns on a device runs whole outer iterations of ws there — the selection of W,
//! W's columns, the inner solve, the update of g, the reduction and the stop test — and the
//! host reads back one small status record per iteration and W's α, once per batch of
//! iterations, instead of waiting on the device several times per iteration.

use super::Reduction;
use crate::active::ActiveSet;
use crate::error::Result;

/// Where ws runs its outer iterations on a GPU backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum LoopPlace {
    /// On the device where the adapter is hardware, driven by the host on a software adapter
    /// (lavapipe: the host's loop is as fast there, and the long-tested path).
    #[default]
    Auto,
    /// On the device ([`DeviceLoop`]).
    Device,
    /// Driven by the host, one round trip or two per outer iteration.
    Host,
}

impl LoopPlace {
    /// Whether the loop runs on the device on an adapter that is or is not software.
    pub fn on_device(self, software: bool) -> bool {
        match self {
            LoopPlace::Auto => !software,
            LoopPlace::Device => true,
            LoopPlace::Host => false,
        }
    }
}

/// What one batch of device iterations is asked to do.
#[derive(Debug, Clone, Copy)]
pub struct LoopSettings {
    /// Working-set size q (at most [`super::MAX_BLOCK`]).
    pub q: usize,
    /// The stop rule's absolute and relative gap (ε, rel_eps).
    pub eps: f64,
    /// See [`eps`](Self::eps).
    pub rel_eps: f64,
    /// αᵀg of the iterate the batch starts from (the inner solve's tolerance in the first
    /// iteration: the device keeps its own afterwards).
    pub alpha_g: f64,
    /// Outer iterations the run may still take (the batch takes at most this many).
    pub max_iterations: u64,
    /// Iterations per batch; None: from the measured round trip (see the backend's doc).
    pub batch: Option<usize>,
}

/// What a batch did.
#[derive(Debug, Clone, Copy)]
pub struct LoopReport {
    /// The reduction of the iterate the batch ended at.
    pub red: Reduction,
    /// Outer iterations run.
    pub iterations: u64,
    /// Inner (pairwise) steps taken, over all of them.
    pub inner_steps: u64,
    /// The sum of |W| over them.
    pub sizes: u64,
    /// The q the device took (the one asked for, or less where its column cache or a storage
    /// binding holds fewer columns).
    pub q: usize,
}

/// A backend that runs the working-set solver's outer iterations on its device
/// ([`super::Columns::device_loop`]).
pub trait DeviceLoop {
    /// Runs a batch of outer iterations from `alpha` (whose gradient the backend holds),
    /// stopping early where the stop rule holds, and applies their steps to `alpha`. The
    /// batch's length comes from the measured cost of a round trip against an iteration's.
    fn run_batch(&mut self, alpha: &mut ActiveSet, settings: &LoopSettings) -> Result<LoopReport>;
}
