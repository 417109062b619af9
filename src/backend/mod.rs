//! The Backend seam: everything that touches all m points.
//!
//! A backend holds the data in its own layout and the gradient g = Qα (plus, for PARTAN,
//! the previous iterate's gradient g⁻) as m-vectors; the solver variants only ever see the
//! scalar [`Reduction`] it returns and describe each step as an [`Update`]. The CPU backend
//! lives in [`cpu`]; the GPU backend (`gpu`, feature `gpu`) implements the same trait, and the
//! sampled (randomized) iterations can wrap a backend behind the same interface.

mod aligned;
mod binary;
mod cache;
pub mod cpu;
pub mod exact;
#[cfg(feature = "gpu")]
pub mod gpu;
pub mod gram;
mod groups;
pub mod mirror;
mod open;
mod prefault;
pub mod sampled;
pub(crate) mod screen;
mod simd;
mod update;

mod device;
mod device_loop;
pub use device_loop::{DeviceLoop, LoopPlace, LoopReport, LoopSettings};
mod select;
mod stats;
#[cfg(feature = "gpu")]
pub use device::SharedRows;
pub use device::{Backends, Device, or_else_on_cpu};
/// The largest block a backend is asked for in one call ([`Columns::block`]): the working-set
/// solver's largest automatic working set; the GPU sizes its readback and update list by it.
pub const MAX_BLOCK: usize = 1024;

pub use select::{
    ChunkLists, Keep, select_lowest, select_lowest_bounded, select_lowest_bounded_chunks,
    select_lowest_bounded_par, select_lowest_bounded_slice,
};
pub(crate) use simd::{dot_f64, kernel_values, tile_rate};
pub use stats::{BackendStats, call};

pub use cpu::{CpuBackend, CpuConfig};
pub use open::{BackendChoice, DeviceRequest};

/// Held while a training run lasts: the column caches of its problems (the warm start's
/// rungs, then the whole set; a multi-class set's class pairs) hand their memory on to each
/// other, and dropping this frees what the last one left.
pub struct CacheMemoryScope;

impl Drop for CacheMemoryScope {
    fn drop(&mut self) {
        cache::release_kept();
    }
}

use crate::active::ActiveSet;
use crate::error::Result;

/// What one reduction pass returns (the quantities of docs/METHODS.md's Frank–Wolfe steps).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reduction {
    /// s = argmin over all i of g_i (lowest index on ties).
    pub s: usize,
    /// g_s.
    pub g_s: f64,
    /// v = argmax over A of g_i (lowest index on ties); `usize::MAX` when A is empty.
    pub v: usize,
    /// g_v.
    pub g_v: f64,
    /// αᵀg over A (= 2f).
    pub alpha_g: f64,
    /// αᵀg⁻ over A when the previous-gradient slot is enabled (PARTAN's W), else 0.
    pub alpha_g_prev: f64,
}

/// The fused gradient update of one iteration:
///
/// ```text
/// g_new = scale·g + Σ_k coef_k·Q[:, j_k] + prev_coef·g⁻      and, if rotate, g⁻ ← g_old
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Update {
    /// Factor on the current gradient.
    pub scale: f64,
    /// Up to two kernel columns (j, coefficient).
    pub cols: [Option<(usize, f64)>; 2],
    /// Factor on the previous gradient g⁻ (needs [`Backend::enable_prev`]).
    pub prev_coef: f64,
    /// After the update, g⁻ holds the gradient from before it.
    pub rotate: bool,
}

impl Update {
    /// g ← scale·g + coef·Q\[:,j\].
    pub fn one(scale: f64, j: usize, coef: f64) -> Self {
        Update {
            scale,
            cols: [Some((j, coef)), None],
            prev_coef: 0.0,
            rotate: false,
        }
    }

    /// The columns with a repeated column merged into one (coefficients added), so a
    /// backend never computes or reads the same column twice in one update.
    pub fn merged_cols(&self) -> [Option<(usize, f64)>; 2] {
        match self.cols {
            [Some((i, a)), Some((j, b))] if i == j => [Some((i, a + b)), None],
            cols => cols,
        }
    }

    /// g ← scale·g + a·Q\[:,i\] + b·Q\[:,j\].
    pub fn two(scale: f64, i: usize, a: f64, j: usize, b: f64) -> Self {
        Update {
            scale,
            cols: [Some((i, a)), Some((j, b))],
            prev_coef: 0.0,
            rotate: false,
        }
    }
}

/// Set membership of a point in a marked reduction ([`Marks::reduce_marked`]): bit flags.
pub mod mark {
    /// In no set.
    pub const NONE: u8 = 0;
    /// A candidate of the first minimum (`low`).
    pub const LOW: u8 = 1;
    /// A candidate of the second minimum (`mid`).
    pub const MID: u8 = 2;
    /// A candidate of the maximum (`high`).
    pub const HIGH: u8 = 4;
}

/// What a marked reduction returns. With h_i = g_i + shift·y_i: `low` = argmin of h over the
/// points marked [`mark::LOW`], `mid` = argmin over [`mark::MID`], `high` = argmax over
/// [`mark::HIGH`] (lowest index on ties); `(usize::MAX, ±inf)` for an empty set. Sparse
/// re-weighted FW uses it for the inactive and the active vectors, SimpleSVM for its
/// violators at α = 0 and at α = C (the shift is then the bias b, so h_i = y_iF(x_i)).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MarkedReduction {
    /// argmin over LOW and its value.
    pub low: (usize, f64),
    /// argmin over MID and its value.
    pub mid: (usize, f64),
    /// argmax over HIGH and its value.
    pub high: (usize, f64),
}

impl MarkedReduction {
    /// Empty sets everywhere.
    pub const EMPTY: MarkedReduction = MarkedReduction {
        low: (usize::MAX, f64::INFINITY),
        mid: (usize::MAX, f64::INFINITY),
        high: (usize::MAX, f64::NEG_INFINITY),
    };

    /// Folds point i with value h and marks `mk` in (lowest index on ties).
    #[inline]
    pub fn offer(&mut self, i: usize, h: f64, mk: u8) {
        if mk & mark::LOW != 0 && (h < self.low.1 || (h == self.low.1 && i < self.low.0)) {
            self.low = (i, h);
        }
        if mk & mark::MID != 0 && (h < self.mid.1 || (h == self.mid.1 && i < self.mid.0)) {
            self.mid = (i, h);
        }
        if mk & mark::HIGH != 0 && (h > self.high.1 || (h == self.high.1 && i < self.high.0)) {
            self.high = (i, h);
        }
    }

    /// Combines two partial results.
    pub fn merge(mut self, o: &MarkedReduction) -> MarkedReduction {
        if o.low.0 != usize::MAX {
            self.offer(o.low.0, o.low.1, mark::LOW);
        }
        if o.mid.0 != usize::MAX {
            self.offer(o.mid.0, o.mid.1, mark::MID);
        }
        if o.high.0 != usize::MAX {
            self.offer(o.high.0, o.high.1, mark::HIGH);
        }
        self
    }
}

/// What a backend tells the solver about itself, for tuning — one value instead of a query
/// each ([`Backend::hints`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hints {
    /// The solver combines its sums over a set of points through
    /// [`fold_entries`](Ranks::fold_entries) — each process over the points it holds —
    /// rather than gathering the points' entries (a distributed backend asked for partial
    /// sums, [`crate::train::TrainParams::partial_sums`]). False by default.
    pub partial_sums: bool,
    /// How many columns the backend can hold at once (a working set's block must fit);
    /// unbounded by default.
    pub column_capacity: usize,
    /// The smallest automatic working set the working-set solver should take (0: none, the
    /// solver's own): where each outer iteration waits for round trips to a device and
    /// columns are cheap, larger blocks take fewer of them.
    pub ws_floor: usize,
    /// A few entries of a column ([`column_entries`](Backend::column_entries)) cost no round
    /// trip to a device: the working-set solver then ranks its away candidates by the
    /// second-order decrease, reading s's column at the support, and else by their gradient.
    /// True by default.
    pub entries_are_local: bool,
    /// The backend forms the gradient of a starting α of at most [`START_COLUMNS`] points
    /// from their columns ([`start_from_columns`]) — a distributed backend where every rank's
    /// local backend does, as one process's does. False by default: the exact f64 product.
    pub start_from_columns: bool,
}

impl Default for Hints {
    fn default() -> Self {
        Hints {
            start_from_columns: false,
            partial_sums: false,
            column_capacity: usize::MAX,
            ws_floor: 0,
            entries_are_local: true,
        }
    }
}

/// The core of a backend: the gradient work on all m points that every solver does — g = Qα
/// set and updated, reduced and read. What else a backend does is said by the capability
/// traits beside it — [`Columns`] (batched kernel columns), [`Ranks`] (rows held by several
/// processes and the sums across them), [`Certify`] (exact certification), [`Marks`] (marked
/// reductions), [`Guests`] (columns of points held elsewhere) — and its tuning by one
/// [`Hints`] value. The solver runs on [`Solvable`] backends (the core with the first three),
/// the marked algorithms on [`Marks`].
pub trait Backend {
    /// Number of points m.
    fn len(&self) -> usize;

    /// True when m = 0.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Short name ("cpu", `"gpu: <adapter>"`).
    fn name(&self) -> String;

    /// Q_ii (exact).
    fn q_diag(&self, i: usize) -> f64;

    /// Q_ij, one kernel value evaluated on the host (exact f64).
    fn q(&self, i: usize, j: usize) -> f64;

    /// Sets g = Qα from scratch (exact; from the points' columns for a starting α of at most
    /// [`START_COLUMNS`] points where [`Hints::start_from_columns`] says so), and g⁻ = g when
    /// the previous slot is enabled.
    fn set_alpha(&mut self, alpha: &ActiveSet) -> Result<()>;

    /// [`set_alpha`](Self::set_alpha) with g = Qα given (length m), kept by the caller — the
    /// working-set rounds of shrinking hand each round the gradient the last one ended with —
    /// instead of computed again. The default ignores `g` and computes it.
    fn set_alpha_with(&mut self, alpha: &ActiveSet, g: &[f64]) -> Result<()> {
        let _ = g;
        self.set_alpha(alpha)
    }

    /// Allocates the previous-gradient slot g⁻ (PARTAN). Call before `set_alpha`.
    fn enable_prev(&mut self);

    /// Applies the fused update.
    fn update(&mut self, u: &Update) -> Result<()>;

    /// argmin over all, argmax over A and αᵀg (and αᵀg⁻) over A, for the current g.
    fn reduce(&mut self, alpha: &ActiveSet) -> Result<Reduction>;

    /// out\[k\] = g\[idx\[k\]\].
    fn gather(&mut self, idx: &[usize], out: &mut [f64]) -> Result<()>;

    /// out\[k\] = g⁻\[idx\[k\]\].
    fn gather_prev(&mut self, idx: &[usize], out: &mut [f64]) -> Result<()>;

    /// out\[k\] = Q\[idx\[k\], j\] (computes column j if needed; a following update that uses j
    /// reuses it).
    fn column_entries(&mut self, j: usize, idx: &[usize], out: &mut [f64]) -> Result<()>;

    /// g, and g⁻ and Q[idx, j] when asked, at `idx` — what [`gather`](Self::gather),
    /// [`gather_prev`](Self::gather_prev) and [`column_entries`](Self::column_entries) give,
    /// in one round trip where the backend can (the GPU: one submit, one readback).
    fn gather_fused(
        &mut self,
        idx: &[usize],
        g: &mut [f64],
        prev: Option<&mut [f64]>,
        col: Option<(usize, &mut [f64])>,
    ) -> Result<()> {
        gather_by_parts(self, idx, g, prev, col)
    }

    /// What the backend tells the solver about itself for tuning ([`Hints`]); the defaults
    /// describe a backend in this process's memory.
    fn hints(&self) -> Hints {
        Hints::default()
    }

    /// Diagnostics.
    fn stats(&self) -> BackendStats;
}

/// Batched kernel columns (capability): several columns per pass over the data, the
/// working-set block, many columns applied to g at once, a bounded selection of the lowest
/// entries, and columns handed from one backend to the next. Each default does the work
/// column by column through the core, so a backend states `impl Columns for X {}` and
/// overrides what it does faster (the CPU backend all of it, the GPU backend all but
/// `adopt_columns`).
pub trait Columns: Backend {
    /// The working-set loop on this backend's device ([`DeviceLoop`]), where it runs one;
    /// None (the default): the host drives each outer iteration through the calls below.
    fn device_loop(&mut self) -> Option<&mut dyn DeviceLoop> {
        None
    }

    /// Computes the listed columns ahead of use, several per pass over the data where the
    /// backend can (the CPU backend: up to `simd::BATCH` per pass), and keeps them cached.
    /// Returns how many were computed; the default computes none.
    fn prefetch_columns(&mut self, js: &[usize]) -> Result<usize> {
        let _ = js;
        Ok(0)
    }

    /// g ← scale·g + Σ_k c_k·Q[:, j_k] for any number of columns (CVM's flush of an inner
    /// solve, SimpleSVM's change of α over its free set, the working-set solver's Δα_W). The
    /// default applies them two at a time through [`update`](Backend::update).
    fn update_many(&mut self, scale: f64, cols: &[(usize, f64)]) -> Result<()> {
        update_by_pairs(self, scale, cols)
    }

    /// The `k` smallest gradient entries as (g_i, i), ascending (the lower point first on
    /// ties): the toward candidates of a working set. The default gathers all of g.
    fn lowest(&mut self, k: usize, out: &mut Vec<(f64, usize)>) -> Result<()> {
        let m = self.len();
        let all: Vec<usize> = (0..m).collect();
        let mut g = vec![0.0; m];
        self.gather(&all, &mut g)?;
        out.clear();
        out.extend(g.into_iter().zip(all));
        select_lowest(out, k);
        Ok(())
    }

    /// The `k` best away candidates of a working set — the points of the support A of
    /// `alpha` — as (score, i), ascending ([`away_score`]: the decrease of f by a pairwise step
    /// from i to s, read from s's column), bounded by the last choice (`bound`, as
    /// [`select_lowest_bounded`]). The default gathers g and Q[A, s] into `scratch` and
    /// selects on this thread; the CPU backend scores its rows in order, in parallel.
    #[allow(clippy::too_many_arguments)]
    fn away_candidates(
        &mut self,
        s: usize,
        g_s: f64,
        alpha: &ActiveSet,
        k: usize,
        bound: &mut (usize, f64),
        scratch: &mut AwayScratch,
        out: &mut Vec<(f64, usize)>,
    ) -> Result<()> {
        away_candidates_by_gathers(self, s, g_s, alpha.indices(), k, bound, scratch, out)
    }

    /// The kernel block Q[w, w] of a working set into `out` (row-major, |w|² entries) and g at
    /// `w` into `g_w`, the columns of `w` computed in batched passes over the data and kept
    /// for the [`update_many`](Self::update_many) that follows — or, where the backend defers
    /// them (the CPU backend once a block outgrows a core's L2), only W's entries of the
    /// columns it lacks, `update_many` computing those whose coefficient moved. Returns how
    /// many of the columns were already held (cache hits). The default prefetches and reads
    /// column by column.
    fn block(&mut self, w: &[usize], out: &mut [f64], g_w: &mut [f64]) -> Result<usize> {
        block_by_columns(self, w, out, g_w)
    }

    /// The cached columns of the points `keep` (ascending, this backend's numbering),
    /// restricted to those points' rows: what a backend built over `keep` alone takes with
    /// [`adopt_columns`](Self::adopt_columns), so that a round of working-set shrinking keeps
    /// the columns computed before it. With `keep` empty, no column but the cache's memory,
    /// for a backend over any rows (a grown working set) to fill without first-touch page
    /// faults. None by default.
    fn export_columns(&mut self, keep: &[usize]) -> Option<ColumnExport> {
        let _ = keep;
        None
    }

    /// Takes columns from [`export_columns`](Self::export_columns) of a backend of the same
    /// kind, numbered as this backend's points (or only their memory, when they are columns
    /// over other rows); ignores what it cannot use.
    fn adopt_columns(&mut self, cols: ColumnExport) {
        let _ = cols;
    }
}

/// [`Columns::away_candidates`]'s default over the points `a`: g and Q[a, s] gathered into
/// `scratch`, scored and selected on this thread.
#[allow(clippy::too_many_arguments)]
pub fn away_candidates_by_gathers<B: Backend + ?Sized>(
    be: &mut B,
    s: usize,
    g_s: f64,
    a: &[usize],
    k: usize,
    bound: &mut (usize, f64),
    scratch: &mut AwayScratch,
    out: &mut Vec<(f64, usize)>,
) -> Result<()> {
    let m = be.len();
    let sc = scratch;
    sc.g.resize(a.len(), 0.0);
    be.gather(a, &mut sc.g)?;
    sc.qs.resize(a.len(), 0.0);
    be.column_entries(s, a, &mut sc.qs)?;
    if sc.diag.len() != m {
        sc.diag = (0..m).map(|i| be.q_diag(i)).collect();
    }
    // Q_ss from the backend itself: s may be a column of a point outside its rows.
    let (diag, q_ss) = (&sc.diag, be.q_diag(s));
    sc.score.clear();
    sc.score.extend(
        sc.g.iter()
            .zip(&sc.qs)
            .zip(a)
            .map(|((&g, &q_si), &i)| away_score(g, g_s, q_ss, diag[i], q_si)),
    );
    let score = &sc.score;
    select_lowest_bounded(
        || score.iter().zip(a).map(|(&v, &i)| (v, i)),
        a.len(),
        k,
        bound,
        out,
    );
    Ok(())
}

/// An away candidate's score for a pairwise step from i to the toward vertex s:
/// −(g_i − g_s)² / (Q_ss + Q_ii − 2Q_si), the decrease of f before clipping — the second-order
/// choice of LIBSVM's working sets (Fan, Chen and Lin 2005) with s fixed — and +∞ where
/// g_i ≤ g_s (no decrease); the curvature at least [`AWAY_CURVATURE_FLOOR`].
#[inline]
pub fn away_score(g: f64, g_s: f64, q_ss: f64, q_ii: f64, q_si: f64) -> f64 {
    let d = g - g_s;
    let curv = (q_ss + q_ii - 2.0 * q_si).max(AWAY_CURVATURE_FLOOR);
    if d > 0.0 {
        -(d * d / curv)
    } else {
        f64::INFINITY
    }
}

/// Smallest curvature of a pairwise step [`away_score`] divides by (a point whose column
/// equals s's).
pub const AWAY_CURVATURE_FLOOR: f64 = 1e-12;

/// The buffers of [`Columns::away_candidates`]'s default (g and Q[·, s] at the candidates,
/// their scores, and Q_ii of every point), kept by the caller, and the points whose columns
/// the caller wants next.
#[derive(Default)]
pub struct AwayScratch {
    /// The points whose columns the caller computes next, most wanted first (the working-set
    /// solver: the toward candidates its W takes next, nearly all of which move). A backend
    /// that computes s's whole column for the scores may compute the first of these in the
    /// same pass over the rows; the caller fills it before each call.
    pub next: Vec<usize>,
    g: Vec<f64>,
    qs: Vec<f64>,
    diag: Vec<f64>,
    score: Vec<f64>,
}

/// Row ownership and exact sums across ranks (capability): which gradient entries this process
/// holds, rows made available before they are read, and sums over a set of points in an
/// order the backend decides (each process over its own points, combined exactly). The
/// defaults describe a backend that holds every row in this process; a rank's distributed
/// backend ([`crate::dist`]) overrides them all (the CPU backend reads its own entries
/// faster, the sampled backend fetches rows into its sample).
pub trait Ranks: Backend {
    /// The gradient entries this process holds, into `out` (resized), and the points they
    /// belong to: all m by default; a distributed backend's own rows, without a collective.
    fn gather_own(&mut self, out: &mut Vec<f64>) -> Result<std::ops::Range<usize>> {
        let m = self.len();
        let all: Vec<usize> = (0..m).collect();
        out.resize(m, 0.0);
        self.gather(&all, out)?;
        Ok(0..m)
    }

    /// Makes the points `idx` available to [`q`](Backend::q) and [`q_diag`](Backend::q_diag): a
    /// distributed backend fetches the rows other ranks own (every rank must call it alike);
    /// the others hold every row already (the default does nothing).
    fn fetch_rows(&mut self, idx: &[usize]) -> Result<()> {
        let _ = idx;
        Ok(())
    }

    /// Σ_k `f(k, entries of idx[k])`'s two numbers, and the best candidate (value, point) over
    /// the k where `f` offers one (see [`FoldAsk`] for what the entries hold and which
    /// candidate is best). The sums are added in an order of the backend's choosing. The
    /// default gathers the entries and folds them in order.
    fn fold_entries(
        &mut self,
        idx: &[usize],
        ask: FoldAsk,
        f: &mut dyn FnMut(usize, Entries) -> ([f64; 2], Option<f64>),
    ) -> Result<Fold> {
        let n = idx.len();
        let (mut g, mut gp, mut q) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
        self.gather_fused(
            idx,
            &mut g,
            if ask.prev { Some(&mut gp) } else { None },
            ask.col.map(|j| (j, &mut q[..])),
        )?;
        let read = ReadEntries {
            g: &g,
            gp: &gp,
            q: &q,
        };
        Ok(read.fold(ask, |k| self.q_diag(idx[k]), |k| (k, idx[k]), f))
    }
}

/// Exact certification (capability): the certified objective and gap, or the exact f64
/// gradient, computed by the backend itself from what it holds — a distributed backend over
/// every rank's rows, the CPU backend from the cached columns of α's support. Each method
/// answers None where the backend cannot (by default, or when the columns are not resident):
/// the solver then certifies on the problem, with the same result.
pub trait Certify: Backend {
    /// The certified (f, gap) of α when this backend computes it itself (a distributed one:
    /// over every rank's rows); None: the solver certifies on the problem (the default).
    fn certify_exact(&mut self, alpha: &ActiveSet) -> Result<Option<(f64, f64)>> {
        let _ = alpha;
        Ok(None)
    }

    /// [`certify_exact`](Self::certify_exact) over the points `rows` ⊇ supp(α) only (sparse
    /// FW's sub-problem: [`crate::backend::exact::certify_rows`]); None: the solver certifies
    /// on the problem (the default).
    fn certify_exact_rows(
        &mut self,
        alpha: &ActiveSet,
        rows: &[usize],
    ) -> Result<Option<(f64, f64)>> {
        let _ = (alpha, rows);
        Ok(None)
    }

    /// The exact f64 gradient Qα of all m points when this backend computes it itself (a
    /// distributed one: each entry on its owner, gathered exactly to every rank); None: the
    /// solver computes it on the problem (the default). SimpleSVM's certification.
    fn exact_full_gradient(&mut self, alpha: &ActiveSet) -> Result<Option<Vec<f64>>> {
        let _ = alpha;
        Ok(None)
    }
}

/// The marked reductions (capability): what sparse FW and SimpleSVM need besides the core
/// gradient work — a mark per point and, in one pass, the extremes of g over the points with
/// each mark. The full-gradient CPU and GPU backends have it, and the ones built over them
/// (the cross-check mirror, a rank's distributed backend); the sampled backend does not, so
/// a solve that needs marks on it does not compile:
///
/// ```compile_fail,E0277
/// use fwsvm::backend::sampled::{CpuBlocks, Sampled, SampledConfig};
/// use fwsvm::solver::{solve, Algorithm, SolverParams};
/// # fn f(prob: &fwsvm::problem::Problem<'_>, cfg: SampledConfig) {
/// let mut be = Sampled::with_engine(cfg, Box::new(CpuBlocks::new(prob)));
/// // `solve` runs every algorithm, sparse FW and SimpleSVM included: it takes `dyn Marks`.
/// let params = SolverParams { algorithm: Some(Algorithm::Partan), ..Default::default() };
/// let _ = solve(prob, &mut be, &params, &mut []);
/// # }
/// ```
///
/// while the solve for backends without marks accepts it (and refuses the two algorithms as
/// a parameter error before it starts):
///
/// ```
/// use fwsvm::backend::sampled::{CpuBlocks, Sampled, SampledConfig};
/// use fwsvm::solver::{solve_plain, Algorithm, SolverParams};
/// # fn f(prob: &fwsvm::problem::Problem<'_>, cfg: SampledConfig) {
/// let mut be = Sampled::with_engine(cfg, Box::new(CpuBlocks::new(prob)));
/// // Randomized iterations run the FW variants (PARTAN, as training picks for them).
/// let params = SolverParams { algorithm: Some(Algorithm::Partan), ..Default::default() };
/// let _ = solve_plain(prob, &mut be, &params, &mut []);
/// # }
/// ```
pub trait Marks: Solvable {
    /// Sets every point's marks to `mk` (see [`mark`]); marks start as [`mark::NONE`].
    fn fill_marks(&mut self, mk: u8) -> Result<()>;

    /// Sets the marks of the listed points.
    fn set_marks(&mut self, marks: &[(usize, u8)]) -> Result<()>;

    /// The marked reduction of the current g with h_i = g_i + shift·y_i.
    fn reduce_marked(&mut self, shift: f64) -> Result<MarkedReduction>;
}

/// [`Backend::gather_fused`] call by call: g, then g⁻, then the column's entries.
pub fn gather_by_parts<B: Backend + ?Sized>(
    be: &mut B,
    idx: &[usize],
    g: &mut [f64],
    prev: Option<&mut [f64]>,
    col: Option<(usize, &mut [f64])>,
) -> Result<()> {
    be.gather(idx, g)?;
    if let Some(p) = prev {
        be.gather_prev(idx, p)?;
    }
    if let Some((j, q)) = col {
        be.column_entries(j, idx, q)?;
    }
    Ok(())
}

/// Guests (capability): holding points of other ranks for their columns only, what a rank's
/// backend in a distributed run needs ([`crate::dist`]).
pub trait Guests: Backend {
    /// Holds point `row` (label `y`, diagonal term `inv_c` = 1/C of its own problem) for its
    /// columns only: it gets no gradient entry, but columns of it can be computed over this
    /// backend's rows (`update`, `column_entries`, `q`), under the index returned (m, m + 1,
    /// …). A distributed run gives each rank's backend the vertices other ranks own.
    fn add_guest(&mut self, row: crate::data::Row<'_>, y: f64, inv_c: f64) -> Result<usize>;
}

/// What the solver variants run on: the core with batched columns, row ownership and exact
/// certification. Every type with the four traits is one; a backend that lacks one of them
/// does not compile where it is handed to the solver:
///
/// ```compile_fail,E0277
/// use fwsvm::active::ActiveSet;
/// use fwsvm::backend::{Backend, BackendStats, Certify, Columns, Reduction, Update};
/// use fwsvm::solver::{solve_plain, Algorithm, SolverParams};
/// /// A backend with the core and two capabilities, but not `Ranks`.
/// struct Partial;
/// impl Backend for Partial {
/// #   fn len(&self) -> usize { 0 }
/// #   fn name(&self) -> String { "partial".into() }
/// #   fn q_diag(&self, _: usize) -> f64 { 0.0 }
/// #   fn q(&self, _: usize, _: usize) -> f64 { 0.0 }
/// #   fn set_alpha(&mut self, _: &ActiveSet) -> fwsvm::Result<()> { Ok(()) }
/// #   fn enable_prev(&mut self) {}
/// #   fn update(&mut self, _: &Update) -> fwsvm::Result<()> { Ok(()) }
/// #   fn reduce(&mut self, _: &ActiveSet) -> fwsvm::Result<Reduction> {
/// #       Ok(Reduction { s: 0, g_s: 0.0, v: usize::MAX, g_v: 0.0, alpha_g: 0.0, alpha_g_prev: 0.0 })
/// #   }
/// #   fn gather(&mut self, _: &[usize], _: &mut [f64]) -> fwsvm::Result<()> { Ok(()) }
/// #   fn gather_prev(&mut self, _: &[usize], _: &mut [f64]) -> fwsvm::Result<()> { Ok(()) }
/// #   fn column_entries(&mut self, _: usize, _: &[usize], _: &mut [f64]) -> fwsvm::Result<()> { Ok(()) }
/// #   fn stats(&self) -> BackendStats { BackendStats::default() }
///     // ...
/// }
/// impl Columns for Partial {}
/// impl Certify for Partial {}
/// # fn f(prob: &fwsvm::problem::Problem<'_>) {
/// let params = SolverParams { algorithm: Some(Algorithm::Fw), ..Default::default() };
/// let _ = solve_plain(prob, &mut Partial, &params, &mut []);
/// # }
/// ```
///
/// while with `impl Ranks for Partial {}` (a backend holding every row in this process) it
/// does:
///
/// ```
/// # use fwsvm::active::ActiveSet;
/// # use fwsvm::backend::{Backend, BackendStats, Certify, Columns, Ranks, Reduction, Update};
/// # use fwsvm::solver::{solve_plain, Algorithm, SolverParams};
/// # struct Partial;
/// # impl Backend for Partial {
/// #   fn len(&self) -> usize { 0 }
/// #   fn name(&self) -> String { "partial".into() }
/// #   fn q_diag(&self, _: usize) -> f64 { 0.0 }
/// #   fn q(&self, _: usize, _: usize) -> f64 { 0.0 }
/// #   fn set_alpha(&mut self, _: &ActiveSet) -> fwsvm::Result<()> { Ok(()) }
/// #   fn enable_prev(&mut self) {}
/// #   fn update(&mut self, _: &Update) -> fwsvm::Result<()> { Ok(()) }
/// #   fn reduce(&mut self, _: &ActiveSet) -> fwsvm::Result<Reduction> {
/// #       Ok(Reduction { s: 0, g_s: 0.0, v: usize::MAX, g_v: 0.0, alpha_g: 0.0, alpha_g_prev: 0.0 })
/// #   }
/// #   fn gather(&mut self, _: &[usize], _: &mut [f64]) -> fwsvm::Result<()> { Ok(()) }
/// #   fn gather_prev(&mut self, _: &[usize], _: &mut [f64]) -> fwsvm::Result<()> { Ok(()) }
/// #   fn column_entries(&mut self, _: usize, _: &[usize], _: &mut [f64]) -> fwsvm::Result<()> { Ok(()) }
/// #   fn stats(&self) -> BackendStats { BackendStats::default() }
/// # }
/// # impl Columns for Partial {}
/// # impl Certify for Partial {}
/// impl Ranks for Partial {}
/// # fn f(prob: &fwsvm::problem::Problem<'_>) {
/// # let params = SolverParams { algorithm: Some(Algorithm::Fw), ..Default::default() };
/// let _ = solve_plain(prob, &mut Partial, &params, &mut []);
/// # }
/// ```
pub trait Solvable: Backend + Columns + Ranks + Certify {}

impl<T: Backend + Columns + Ranks + Certify + ?Sized> Solvable for T {}

/// A device's own backend, the CPU's or a GPU's: the core and every capability. What
/// [`Device::backend`] opens, and what a rank of a distributed run builds on.
pub trait Local: Marks + Guests {}

impl<T: Marks + Guests + ?Sized> Local for T {}

/// The backend object types the solvers run on — `dyn Solvable` and `dyn Marks` — seen as
/// `dyn Solvable`, for code that needs no marks.
pub trait Upcast {
    /// This backend without its marks.
    fn up(&mut self) -> &mut dyn Solvable;
}

impl Upcast for dyn Solvable + '_ {
    fn up(&mut self) -> &mut dyn Solvable {
        self
    }
}

impl Upcast for dyn Marks + '_ {
    fn up(&mut self) -> &mut dyn Solvable {
        self
    }
}

/// Kernel columns handed from one backend to another ([`Columns::export_columns`]); only the
/// backend kind that made them reads them.
pub struct ColumnExport(pub Box<dyn std::any::Any + Send>);

/// [`Columns::block`] by the traits' other methods: the columns prefetched, Q[w, w] read
/// column by column, then g at `w`.
pub fn block_by_columns<B: Columns + ?Sized>(
    be: &mut B,
    w: &[usize],
    out: &mut [f64],
    g_w: &mut [f64],
) -> Result<usize> {
    let n = w.len();
    be.prefetch_columns(w)?;
    for (k, &j) in w.iter().enumerate() {
        be.column_entries(j, w, &mut out[k * n..(k + 1) * n])?;
    }
    be.gather(w, g_w)?;
    Ok(0)
}

/// A starting α of at most this many points (the random start's) takes its gradient from the
/// points' columns where the backend says so ([`Hints::start_from_columns`]).
pub const START_COLUMNS: usize = 32;

/// Sets α with g = Σ_j α_j·Q[:, j] from the points' columns — those the first iterations
/// read again, computed as every later column is (in f32 where the backend stores them so),
/// instead of the exact f64 product, which for a few points over many rows costs more than
/// the columns: g = 0 and [`Columns::update_many`], then (`prev`) g⁻ = g. Collective on a
/// distributed backend.
pub fn start_from_columns<B: Columns + ?Sized>(
    be: &mut B,
    alpha: &ActiveSet,
    prev: bool,
) -> Result<()> {
    let m = be.len();
    be.set_alpha_with(alpha, &vec![0.0; m])?;
    let cols: Vec<(usize, f64)> = alpha.iter().collect();
    be.update_many(0.0, &cols)?;
    if prev {
        let all: Vec<usize> = (0..m).collect();
        let mut g = vec![0.0; m];
        be.gather(&all, &mut g)?;
        be.set_alpha_with(alpha, &g)?;
    }
    Ok(())
}

/// [`Columns::update_many`] as updates of two columns each.
pub fn update_by_pairs<B: Backend + ?Sized>(
    be: &mut B,
    scale: f64,
    cols: &[(usize, f64)],
) -> Result<()> {
    if cols.is_empty() {
        if scale != 1.0 {
            be.update(&Update {
                scale,
                cols: [None, None],
                prev_coef: 0.0,
                rotate: false,
            })?;
        }
        return Ok(());
    }
    let mut first = true;
    for pair in cols.chunks(2) {
        let sc = if first { scale } else { 1.0 };
        first = false;
        let u = match *pair {
            [(i, a), (j, b)] => Update::two(sc, i, a, j, b),
            [(i, a)] => Update::one(sc, i, a),
            _ => unreachable!("chunks of two"),
        };
        be.update(&u)?;
    }
    Ok(())
}

/// What a [`Ranks::fold_entries`] pass reads besides g, and which candidate it keeps.
#[derive(Debug, Clone, Copy, Default)]
pub struct FoldAsk {
    /// g⁻ in the entries.
    pub prev: bool,
    /// Q[·, j] in the entries.
    pub col: Option<usize>,
    /// Q_ii in the entries.
    pub diag: bool,
    /// Keep the smallest candidate (else the largest); the lowest point on ties.
    pub min: bool,
}

/// The entries of a [`Ranks::fold_entries`] pass once read: g, g⁻ and the column's entries
/// at each of the pass's positions (g⁻ and the column 0 where not asked for).
pub struct ReadEntries<'a> {
    /// g at each position.
    pub g: &'a [f64],
    /// g⁻ at each position.
    pub gp: &'a [f64],
    /// Q[·, j] at each position.
    pub q: &'a [f64],
}

impl ReadEntries<'_> {
    /// `f` folded over the positions: Q_ii from `qd(k)` where `ask` wants it, `at(k)` = (the
    /// index `f` is given, the point a candidate is located at).
    pub fn fold(
        &self,
        ask: FoldAsk,
        qd: impl Fn(usize) -> f64,
        at: impl Fn(usize) -> (usize, usize),
        f: &mut dyn FnMut(usize, Entries) -> ([f64; 2], Option<f64>),
    ) -> Fold {
        let mut fold = Fold::EMPTY;
        for k in 0..self.g.len() {
            let e = Entries {
                g: self.g[k],
                gp: self.gp[k],
                q: self.q[k],
                qd: if ask.diag { qd(k) } else { 0.0 },
            };
            let (pos, point) = at(k);
            let (sums, cand) = f(pos, e);
            fold.add(sums, cand.map(|v| (v, point)), ask.min);
        }
        fold
    }
}

/// One point's entries in a [`Ranks::fold_entries`] pass: g_i, and g⁻_i, Q[i, j] and Q_ii
/// where [`FoldAsk`] asks for them (0 otherwise).
#[derive(Debug, Clone, Copy)]
pub struct Entries {
    /// g_i.
    pub g: f64,
    /// g⁻_i.
    pub gp: f64,
    /// Q[i, j] of the fold's column.
    pub q: f64,
    /// Q_ii.
    pub qd: f64,
}

/// What [`Ranks::fold_entries`] returns: two sums and the best candidate (value, point).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fold {
    /// The sums.
    pub sums: [f64; 2],
    /// The best candidate, if any was offered.
    pub best: Option<(f64, usize)>,
}

impl Fold {
    /// Nothing folded yet.
    pub const EMPTY: Fold = Fold {
        sums: [0.0, 0.0],
        best: None,
    };

    /// Adds one point's numbers and candidate (the smallest kept when `min`, else the
    /// largest; the lowest point on ties).
    pub fn add(&mut self, sums: [f64; 2], cand: Option<(f64, usize)>, min: bool) {
        self.sums[0] += sums[0];
        self.sums[1] += sums[1];
        if let Some((v, i)) = cand {
            let better = match self.best {
                None => true,
                Some((bv, bi)) => (if min { v < bv } else { v > bv }) || (v == bv && i < bi),
            };
            if better {
                self.best = Some((v, i));
            }
        }
    }
}

/// Bytes one kernel-column pass reads over `ds` on the CPU: 4·m·d dense, 8 per non-zero plus
/// 8 per row in CSR.
pub fn column_pass_bytes(ds: &crate::data::Dataset) -> u64 {
    if ds.is_dense() {
        4 * ds.len() as u64 * ds.n_features() as u64
    } else {
        8 * ds.nnz() as u64 + 8 * ds.len() as u64
    }
}

/// Data smaller than this (bytes per column pass) train on the CPU under `--backend auto`.
/// Measured on an H100 against its host's 16 cores: a GPU iteration waits for three or four
/// submit-and-readback round trips of about 100 µs each plus the host's recording of about a
/// hundred dispatches, so below a few tens of MB per pass the CPU's iteration is as fast or
/// faster (docs/BENCHMARKS.md, "On an NVIDIA H100").
pub const AUTO_GPU_MIN_BYTES: u64 = 64 << 20;

/// Rows × support vectors below which `--backend auto` predicts on the CPU: the device's
/// set-up and upload cost more than the kernel evaluations it would take over (see
/// [`crate::predict`]).
pub const GPU_PREDICT_MIN_WORK: u64 = 20_000_000;

#[cfg(test)]
mod tests {
    use super::Update;

    #[test]
    fn a_repeated_column_is_merged() {
        assert_eq!(
            Update::two(1.0, 3, 0.5, 3, 0.25).merged_cols(),
            [Some((3, 0.75)), None]
        );
        let u = Update::two(1.0, 3, 0.5, 4, 0.25);
        assert_eq!(u.merged_cols(), u.cols);
    }

    /// The (value, index) pairs of `g` without its NaNs, by value, then index.
    fn sorted_pairs(g: &[f64]) -> Vec<(f64, usize)> {
        let mut v: Vec<(f64, usize)> = g
            .iter()
            .copied()
            .zip(0..)
            .filter(|e| !e.0.is_nan())
            .collect();
        v.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        v
    }

    #[test]
    fn bounded_selections_are_the_k_smallest() {
        use super::{
            select_lowest_bounded, select_lowest_bounded_chunks, select_lowest_bounded_slice,
        };
        // Values that drift between calls, with ties and a NaN; lengths not a multiple of 8.
        let mut g: Vec<f64> = (0..1003).map(|i| ((i * 7919) % 1009) as f64).collect();
        g[17] = f64::NAN;
        let (mut b1, mut b2) = ((0, f64::NEG_INFINITY), (0, f64::NEG_INFINITY));
        let mut b3 = (0, f64::NEG_INFINITY);
        let (mut o1, mut o2, mut o3) = (Vec::new(), Vec::new(), Vec::new());
        let mut lists = super::ChunkLists::default();
        for round in 0..6 {
            for (i, v) in g.iter_mut().enumerate() {
                if i != 17 {
                    *v -= ((i * round) % 13) as f64;
                }
            }
            for k in [1, 5, 64] {
                select_lowest_bounded(|| g.iter().copied().zip(0..), g.len(), k, &mut b1, &mut o1);
                select_lowest_bounded_slice(&g, k, &mut b2, &mut lists, &mut o2);
                select_lowest_bounded_chunks(&g, 100, k, &mut b3, &mut lists, &mut o3);
                let mut want = sorted_pairs(&g);
                want.truncate(k);
                assert_eq!(o3, want, "chunks: round {round}, k = {k}");
                assert_eq!(b3, b2, "chunks: round {round}, k = {k}");
                assert_eq!(o1, want, "round {round}, k = {k}");
                assert_eq!(o2, want, "round {round}, k = {k}");
            }
        }
    }

    /// A selection offering runs of values with their membership (the away candidates')
    /// keeps the k smallest of the members' values, NaN members included as the one-pass
    /// order has them, whatever the run's length.
    #[test]
    fn runs_offer_their_members_only() {
        use crate::active::ActiveSet;
        for n in [5usize, 8, 77, 1003] {
            let g: Vec<f64> = (0..n)
                .map(|i| {
                    if i == 3 {
                        f64::NAN
                    } else {
                        ((i * 7919) % 1009) as f64
                    }
                })
                .collect();
            let mut a = ActiveSet::new(n);
            for i in (0..n).filter(|i| i % 3 != 1) {
                a.set(i, 1.0);
            }
            let (mut bound, mut out) = ((0, f64::NEG_INFINITY), Vec::new());
            let mut lists = super::ChunkLists::default();
            let chunk = 64;
            for k in [1, 5, 40, 40] {
                super::select_lowest_bounded_par(
                    n.div_ceil(chunk),
                    |c, t, keep| {
                        let (c0, c1) = (c * chunk, n.min((c + 1) * chunk));
                        keep.offer_run(&g[c0..c1], Some(&a.positions()[c0..c1]), c0, t);
                    },
                    a.len(),
                    k,
                    &mut bound,
                    &mut lists,
                    &mut out,
                );
                let mut want: Vec<(f64, usize)> = a.indices().iter().map(|&i| (g[i], i)).collect();
                want.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
                want.truncate(k);
                assert_eq!(out.len(), want.len(), "n {n}, k {k}");
                for (o, w) in out.iter().zip(&want) {
                    assert_eq!((o.0.to_bits(), o.1), (w.0.to_bits(), w.1), "n {n}, k {k}");
                }
            }
        }
    }

    #[test]
    fn bounded_selections_prune_ties() {
        use super::{
            select_lowest_bounded, select_lowest_bounded_chunks, select_lowest_bounded_slice,
        };
        // Most values equal (a cold start's untouched points), enough of them that the kept
        // candidates are pruned many times; the generic pass visits indices in reverse.
        let n = 20_011;
        let mut g: Vec<f64> = (0..n)
            .map(|i| if i % 97 == 0 { (i % 13) as f64 } else { 20.0 })
            .collect();
        g[5] = f64::NAN;
        let (mut b1, mut b2) = ((0, f64::NEG_INFINITY), (0, f64::NEG_INFINITY));
        let mut b3 = (0, f64::NEG_INFINITY);
        let (mut o1, mut o2, mut o3) = (Vec::new(), Vec::new(), Vec::new());
        let mut lists = super::ChunkLists::default();
        for round in 0..4 {
            for (i, v) in g.iter_mut().enumerate() {
                if i % 89 == round {
                    *v -= 1.0;
                }
            }
            for k in [1, 7, 300, 2000] {
                select_lowest_bounded(|| g.iter().copied().zip(0..n).rev(), n, k, &mut b1, &mut o1);
                select_lowest_bounded_slice(&g, k, &mut b2, &mut lists, &mut o2);
                select_lowest_bounded_chunks(&g, 1000, k, &mut b3, &mut lists, &mut o3);
                assert_eq!((&o3, b3), (&o2, b2), "chunks: round {round}, k = {k}");
                let mut want = sorted_pairs(&g);
                let bound = want[(2 * k).min(n - 1) - 1].0;
                want.truncate(k);
                assert_eq!(o1, want, "round {round}, k = {k}");
                assert_eq!(o2, want, "round {round}, k = {k}");
                assert_eq!(b2, (k, bound), "round {round}, k = {k}");
            }
        }
    }
}
