//! SimpleSVM (slides 003: Vishwanathan, Smola, Murty et al., *SimpleSVM / SimplerSVM*, after
//! Vishwanathan, Smola, Murty, *SimpleSVM*, ICML 2003; ALGORITHMS.md §6): the active-set
//! solver of LIBSVM's C-SVC dual, a different problem from the other algorithms':
//!
//! ```text
//! min ½αᵀHα − 1ᵀα,   H_ij = y_i y_j k(x_i, x_j),   0 ≤ α_i ≤ C,   yᵀα = 0
//! F(x) = Σ_j α_j y_j k(x_j, x) + b        (LIBSVM's rho = −b)
//! ```
//!
//! The points are free (W, 0 < α < C), at zero (L) or at C (U). Starting from one point of
//! each class in W, each outer iteration moves one violator into W — a point of L with
//! y_iF(x_i) < 1 or of U with y_iF(x_i) > 1 — and solves the KKT system on W,
//!
//! ```text
//! H_WW α_W + y_W b = 1 − H_WU α_U,     y_Wᵀ α_W = −y_Uᵀ α_U,
//! ```
//!
//! by block elimination (z₁ = H_WW⁻¹ r, z₂ = H_WW⁻¹ y_W, b = (y_Wᵀz₁ + y_Uᵀα_U) / y_Wᵀz₂,
//! α_W = z₁ − b z₂). If the solution leaves the box, α_W moves toward it only as far as
//! feasible, the blocking variable goes to L or U, and the system is solved again.
//!
//! On the backend: the problem is the L2 form's with C = ∞, whose Q = H + yyᵀ; since
//! yᵀα = 0 at every iterate (and yᵀΔα = 0 for every change), g = Qα = Hα, so the backend's
//! column pass, fused update and gradient serve unchanged. Per added point the device gives
//! one kernel column (the new row of H_WW and a cached column for the update) and the
//! violator reduction: a marked reduction with shift b, L marked LOW and U marked HIGH, so
//! h_i = g_i + y_i b = y_iF(x_i). The change of α over W is applied to g in one
//! [`Backend::update_many`] per outer iteration.
//!
//! Violator choice (`--violator`): `greedy` takes the largest |y_iF(x_i) − 1| over all points
//! (one device reduction); `queue` is SimplerSVM's priority queue: points ordered by
//! |y_iF(x_i) − 1| from the last full pass, weighted up for former support vectors and down by
//! how often they were examined; the top few are re-examined against the current model each
//! iteration, and a full pass (which rebuilds the queue) runs only when none of them violates —
//! the last full pass finding no violator ends the run.
//!
//! Linear solves (`--linear-solver`, in [`super::kkt`]): `chol` keeps a Cholesky factor of
//! H_WW + τI updated by one row per added point and Givens rotations per removed one
//! (O(|W|²) each); `cg` runs conjugate gradients on the stored H_WW (about its effective rank
//! in steps, from zero). τ = 1e-10·max(1, max H_ii) keeps rank-degenerate blocks (duplicate
//! points, linear kernels) solvable; a dependent row's pivot is raised to √τ and counted.

use super::kkt::{Block, BlockScratch};
use super::{Observer, Progress, SolveResult, SolverParams, StopReason};
use crate::active::ActiveSet;
use crate::backend::{Backend, mark};
use crate::error::{Error, Result};
use crate::problem::Problem;
use crate::rng::SplitMix64;
use std::collections::BinaryHeap;
use std::fmt;
use std::str::FromStr;
use std::time::Instant;

/// How the next violator is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Violator {
    /// Largest |y_iF(x_i) − 1| over all points.
    #[default]
    Greedy,
    /// SimplerSVM's priority queue.
    Queue,
}

impl FromStr for Violator {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "greedy" => Ok(Violator::Greedy),
            "queue" => Ok(Violator::Queue),
            _ => Err(format!(
                "unknown violator rule `{s}` (expected greedy or queue)"
            )),
        }
    }
}

impl fmt::Display for Violator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Violator::Greedy => "greedy",
            Violator::Queue => "queue",
        })
    }
}

/// How the KKT systems are solved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LinearSolver {
    /// Cholesky factor with rank-one updates.
    #[default]
    #[value(name = "chol", alias = "cholesky")]
    Cholesky,
    /// Conjugate gradients on the stored kernel block.
    Cg,
}

impl FromStr for LinearSolver {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "chol" | "cholesky" => Ok(LinearSolver::Cholesky),
            "cg" => Ok(LinearSolver::Cg),
            _ => Err(format!("unknown linear solver `{s}` (expected chol or cg)")),
        }
    }
}

impl fmt::Display for LinearSolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LinearSolver::Cholesky => "chol",
            LinearSolver::Cg => "cg",
        })
    }
}

/// SimpleSVM settings beyond [`SolverParams`] (whose `eps` is the KKT tolerance on
/// |y_iF(x_i) − 1|, `max_iter` caps the violators added, `seed` picks the initial pair).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SimpleParams {
    /// LIBSVM's C (the box).
    pub c: f64,
    /// Violator rule.
    pub violator: Violator,
    /// Linear solver.
    pub solver: LinearSolver,
}

const L: u8 = 0;
const W: u8 = 1;
const U: u8 = 2;

/// A set of indices with O(1) insertion and removal (the points at C).
struct IndexSet {
    idx: Vec<usize>,
    pos: Vec<u32>,
}

impl IndexSet {
    fn new(m: usize) -> Self {
        IndexSet {
            idx: Vec::new(),
            pos: vec![u32::MAX; m],
        }
    }
    fn insert(&mut self, i: usize) {
        if self.pos[i] == u32::MAX {
            self.pos[i] = self.idx.len() as u32;
            self.idx.push(i);
        }
    }
    fn remove(&mut self, i: usize) {
        let p = self.pos[i];
        if p != u32::MAX {
            self.pos[i] = u32::MAX;
            self.idx.swap_remove(p as usize);
            if let Some(&moved) = self.idx.get(p as usize) {
                self.pos[moved] = p;
            }
        }
    }
}

/// An entry of the SimplerSVM queue.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Prio(f64, usize);
impl Eq for Prio {}
impl PartialOrd for Prio {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Prio {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&o.0).then_with(|| o.1.cmp(&self.1))
    }
}

/// Outer iterations in a row that leave α unchanged before the run is declared stalled.
const MAX_IDLE: usize = 1000;

/// The best SMO partner of violator k among the points at a bound: one of the other class that
/// can move the same way, or one of the same class that can move the other way, scored by the
/// pair's first-order gain (a full pass over g).
fn partner(
    be: &mut dyn Backend,
    y: &[f64],
    status: &[u8],
    b: f64,
    k: usize,
) -> Result<Option<usize>> {
    let m = y.len();
    let idx: Vec<usize> = (0..m).filter(|&i| status[i] != W && i != k).collect();
    let mut g = vec![0.0; idx.len()];
    be.gather(&idx, &mut g)?;
    let mut gk = [0.0];
    be.gather(&[k], &mut gk)?;
    // u_i = 1 − y_iF(x_i): positive when raising α_i lowers the dual
    let uk = 1.0 - (gk[0] + y[k] * b);
    let k_up = status[k] == L;
    let mut best = (f64::NEG_INFINITY, None);
    for (t, &j) in idx.iter().enumerate() {
        let uj = 1.0 - (g[t] + y[j] * b);
        let same = y[j] == y[k];
        let j_up = status[j] == L;
        // k up with j: other class up, or same class down; k down: mirrored
        let ok = if k_up { same != j_up } else { same == j_up };
        if !ok {
            continue;
        }
        let score = if j_up { uj } else { -uj } + if k_up { uk } else { -uk };
        if score > best.0 {
            best = (score, Some(j));
        }
    }
    Ok(best.1)
}

/// Points re-examined per iteration in queue mode before a full pass.
const QUEUE_BATCH: usize = 64;

/// Trains the C-SVM on `be`, whose problem must be the L2 form with C = ∞ (see the module
/// doc). Returns α (in [0, C]) with `rho` = −b, the dual objective as `f`, and the largest
/// KKT violation as the gap.
pub fn solve(
    prob: &Problem<'_>,
    be: &mut dyn Backend,
    params: &SolverParams,
    sp: &SimpleParams,
    observers: &mut [&mut dyn Observer],
) -> Result<SolveResult> {
    params.check()?;
    let c = sp.c;
    if !(c > 0.0) || !c.is_finite() {
        return Err(Error::InvalidParam(format!(
            "C must be a positive number, got {c}"
        )));
    }
    if prob.c.is_finite() {
        return Err(Error::InvalidParam(
            "SimpleSVM needs the problem in its C = ∞ form".into(),
        ));
    }
    let m = be.len();
    let y = &prob.y;
    // Row i's box: 0 ≤ α_i ≤ C_i = w_{y_i}·s_i·C (class weights, as LIBSVM's -wi, and row
    // weights).
    let c_of = |i: usize| c * prob.cost_factor(i);
    let pos: Vec<usize> = (0..m).filter(|&i| y[i] > 0.0).collect();
    let neg: Vec<usize> = (0..m).filter(|&i| y[i] < 0.0).collect();
    if pos.is_empty() || neg.is_empty() {
        return Err(Error::InvalidParam(
            "SimpleSVM needs points of both classes".into(),
        ));
    }
    let start = Instant::now();
    let mut rng = SplitMix64::new(params.seed);
    let (p0, n0) = (pos[rng.below(pos.len())], neg[rng.below(neg.len())]);

    let mut alpha = vec![0.0; m];
    let mut status = vec![L; m];
    let mut b = 0.0;
    let mut sum_yu = 0.0; // y_Uᵀ α_U = Σ_U y_j C_j
    let max_diag = (0..m.min(1000)).map(|i| prob.k(i, i)).fold(1.0, f64::max);
    let mut blk = Block::new(1e-10 * max_diag, sp.solver == LinearSolver::Cholesky);
    let mut ws = BlockScratch::default();
    // The inner loop's vectors, sized to |W| each round (no allocation once they have grown).
    let (mut rhs, mut yw, mut z1, mut z2, mut target) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    be.set_alpha(&ActiveSet::new(m))?;
    be.fill_marks(mark::LOW)?;
    let mut examined = vec![0u32; m];
    let mut was_sv = vec![false; m];
    let mut queue: BinaryHeap<Prio> = BinaryHeap::new();
    let mut qbuf_idx: Vec<usize> = Vec::new();
    let mut gbuf: Vec<f64> = Vec::new();
    let mut col: Vec<f64> = Vec::new();
    let mut iter = 0u64;
    let mut pending: Vec<usize> = vec![p0, n0];
    let mut upper = IndexSet::new(m);
    let mut idle = 0usize;
    let mut viol;
    let mut dual;
    let stop;
    loop {
        // 1. the violator(s) join W
        let mut changed: Vec<(usize, f64)> = Vec::new();
        let mut mark_changes = Vec::new();
        if blk.len() + pending.len() == 1 {
            // One free variable is pinned by yᵀα = 0: give the violator the partner an SMO
            // pair would (rare: only when every point sits at a bound).
            if let Some(j) = partner(be, y, &status, b, pending[0])? {
                pending.push(j);
            }
        }
        for &k in &pending {
            if status[k] == W {
                continue;
            }
            if status[k] == U {
                sum_yu -= y[k] * c_of(k);
                upper.remove(k);
            }
            status[k] = W;
            mark_changes.push((k, mark::NONE));
            let mut idx = blk.idx.clone();
            idx.push(k);
            col.resize(idx.len(), 0.0);
            be.column_entries(k, &idx, &mut col)?;
            // Q = H + yyᵀ
            let row: Vec<f64> = idx[..idx.len() - 1]
                .iter()
                .zip(&col)
                .map(|(&i, q)| q - y[i] * y[k])
                .collect();
            let hkk = col[idx.len() - 1] - 1.0;
            blk.push(k, &row, hkk)?;
        }
        be.set_marks(&mark_changes)?;
        pending.clear();
        // hu = H_WU α_U on W, from the synced gradient: g_W − H_WW α_W
        let n = blk.len();
        gbuf.resize(n, 0.0);
        be.gather(&blk.idx, &mut gbuf)?;
        let mut hu: Vec<f64> = (0..n)
            .map(|r| {
                gbuf[r]
                    - blk.h[r]
                        .iter()
                        .zip(&blk.idx)
                        .map(|(h, &j)| h * alpha[j])
                        .sum::<f64>()
            })
            .collect();
        let before: Vec<(usize, f64)> = blk.idx.iter().map(|&j| (j, alpha[j])).collect();
        // 2. solve, clip, drop blocking variables, repeat
        while !blk.is_empty() {
            let n = blk.len();
            rhs.clear();
            rhs.extend(hu.iter().map(|v| 1.0 - v));
            yw.clear();
            yw.extend(blk.idx.iter().map(|&j| y[j]));
            z1.resize(n, 0.0);
            z2.resize(n, 0.0);
            blk.solve(&rhs, None, &mut z1, &mut ws);
            blk.solve(&yw, None, &mut z2, &mut ws);
            let ytz1: f64 = yw.iter().zip(&z1).map(|(a, b)| a * b).sum();
            let ytz2: f64 = yw.iter().zip(&z2).map(|(a, b)| a * b).sum();
            let c_eq = -sum_yu;
            let bb = if ytz2.abs() > 0.0 {
                (ytz1 - c_eq) / ytz2
            } else {
                b
            };
            target.clear();
            target.extend(z1.iter().zip(&z2).map(|(a, b)| a - bb * b));
            // largest feasible fraction t of the way from α_W to the target
            let (mut t, mut block_k) = (1.0f64, usize::MAX);
            for k in 0..n {
                let a = alpha[blk.idx[k]];
                let d = target[k] - a;
                let lim = if d < 0.0 {
                    a / -d
                } else if d > 0.0 {
                    (c_of(blk.idx[k]) - a) / d
                } else {
                    f64::INFINITY
                };
                if lim < t {
                    t = lim;
                    block_k = k;
                }
            }
            for (&j, &tk) in blk.idx.iter().zip(&target).take(n) {
                alpha[j] += t.max(0.0) * (tk - alpha[j]);
            }
            if block_k == usize::MAX {
                b = bb;
                break;
            }
            let j = blk.idx[block_k];
            let cj = c_of(j);
            let to_upper = target[block_k] > alpha[j] || alpha[j] >= 0.5 * cj;
            let hrow = blk.h[block_k].clone();
            if to_upper {
                alpha[j] = cj;
                status[j] = U;
                sum_yu += y[j] * cj;
                upper.insert(j);
                for (r, h) in hu.iter_mut().zip(&hrow) {
                    *r += h * cj;
                }
                be.set_marks(&[(j, mark::HIGH)])?;
            } else {
                alpha[j] = 0.0;
                status[j] = L;
                be.set_marks(&[(j, mark::LOW)])?;
            }
            blk.remove(block_k);
            hu.remove(block_k);
        }
        for &(j, a0) in &before {
            let d = alpha[j] - a0;
            if d != 0.0 {
                changed.push((j, d));
            }
        }
        be.update_many(1.0, &changed)?;
        for &j in &blk.idx {
            was_sv[j] = true;
        }
        iter += 1;
        idle = if changed.is_empty() { idle + 1 } else { 0 };

        // 3. the next violator
        let mr = be.reduce_marked(b)?;
        let lo = if mr.low.0 == usize::MAX {
            0.0
        } else {
            1.0 - mr.low.1
        };
        let hi = if mr.high.0 == usize::MAX {
            0.0
        } else {
            mr.high.1 - 1.0
        };
        viol = lo.max(hi).max(0.0);
        // ½αᵀHα − 1ᵀα from the gradient on the free and bound SVs
        {
            let sv: Vec<usize> = blk.idx.iter().chain(&upper.idx).copied().collect();
            gbuf.resize(sv.len(), 0.0);
            if !sv.is_empty() {
                be.gather(&sv, &mut gbuf)?;
            }
            dual = sv
                .iter()
                .zip(&gbuf)
                .map(|(&i, g)| alpha[i] * (0.5 * g - 1.0))
                .sum();
        }
        let elapsed = start.elapsed();
        let p = Progress {
            iter,
            seconds: elapsed.as_secs_f64(),
            f: dual,
            gap: viol,
            step: None,
            active: blk.len(),
        };
        for o in observers.iter_mut() {
            o.observe(&p);
        }
        if viol <= params.eps {
            stop = StopReason::Converged;
            break;
        }
        if idle > MAX_IDLE {
            stop = StopReason::Stalled;
            break;
        }
        if iter >= params.max_iter {
            stop = StopReason::MaxIter;
            break;
        }
        if params.time_limit.is_some_and(|t| elapsed >= t) {
            stop = StopReason::TimeLimit;
            break;
        }
        if crate::interrupt::requested() {
            stop = StopReason::Interrupted;
            break;
        }
        let pick = match sp.violator {
            Violator::Greedy => {
                if lo >= hi {
                    mr.low.0
                } else {
                    mr.high.0
                }
            }
            Violator::Queue => {
                // Re-examine the top of the queue against the current model; rebuild it from
                // a full pass when it is empty or holds no violator.
                let mut found = None;
                for attempt in 0..2 {
                    if attempt == 1 || queue.is_empty() {
                        queue.clear();
                        let all: Vec<usize> = (0..m).filter(|&i| status[i] != W).collect();
                        gbuf.resize(all.len(), 0.0);
                        be.gather(&all, &mut gbuf)?;
                        for (k, &i) in all.iter().enumerate() {
                            let h = gbuf[k] + y[i] * b - 1.0;
                            let v = if status[i] == L { -h } else { h };
                            if v > params.eps {
                                let w = if was_sv[i] { 2.0 } else { 1.0 };
                                queue.push(Prio(w * v / (1.0 + examined[i] as f64), i));
                            }
                        }
                    }
                    qbuf_idx.clear();
                    while qbuf_idx.len() < QUEUE_BATCH {
                        match queue.pop() {
                            Some(Prio(_, i)) if status[i] != W => qbuf_idx.push(i),
                            Some(_) => {}
                            None => break,
                        }
                    }
                    if qbuf_idx.is_empty() {
                        continue;
                    }
                    gbuf.resize(qbuf_idx.len(), 0.0);
                    be.gather(&qbuf_idx, &mut gbuf)?;
                    let mut best = (0.0, usize::MAX);
                    for (k, &i) in qbuf_idx.iter().enumerate() {
                        examined[i] += 1;
                        let h = gbuf[k] + y[i] * b - 1.0;
                        let v = if status[i] == L { -h } else { h };
                        if v > params.eps && v > best.0 {
                            best = (v, i);
                        }
                    }
                    for (k, &i) in qbuf_idx.iter().enumerate() {
                        if i == best.1 {
                            continue;
                        }
                        let h = gbuf[k] + y[i] * b - 1.0;
                        let v = if status[i] == L { -h } else { h };
                        if v > params.eps {
                            let w = if was_sv[i] { 2.0 } else { 1.0 };
                            queue.push(Prio(w * v / (1.0 + examined[i] as f64), i));
                        }
                    }
                    if best.1 != usize::MAX {
                        found = Some(best.1);
                        break;
                    }
                }
                // The device reduction said there is a violator: fall back to it.
                found.unwrap_or(if lo >= hi { mr.low.0 } else { mr.high.0 })
            }
        };
        if pick == usize::MAX {
            stop = StopReason::Converged;
            break;
        }
        pending.push(pick);
    }
    let seconds = start.elapsed().as_secs_f64();
    let mut act = ActiveSet::new(m);
    for (i, &a) in alpha.iter().enumerate() {
        if a > 0.0 {
            act.set(i, a);
        }
    }
    let (mut certified_f, mut certified_gap, mut certify_seconds) = (None, None, 0.0);
    if params.certify {
        let t = Instant::now();
        let (f, v) = certify(prob, &act, &status, b, &c_of);
        certified_f = Some(f);
        certified_gap = Some(v);
        certify_seconds = t.elapsed().as_secs_f64();
    }
    Ok(SolveResult {
        alpha: act,
        iterations: iter,
        f: dual,
        gap: viol,
        certified_f,
        certified_gap,
        stop,
        seconds,
        certify_seconds,
        stats: be.stats(),
        shrink: None,
        rho: Some(-b),
    })
}

/// The exact dual objective ½αᵀHα − 1ᵀα and the largest KKT violation, from an exact f64
/// gradient (Qα with Q = H + yyᵀ, corrected by y·yᵀα).
fn certify(
    prob: &Problem<'_>,
    alpha: &ActiveSet,
    status: &[u8],
    b: f64,
    c_of: &dyn Fn(usize) -> f64,
) -> (f64, f64) {
    let m = prob.len();
    let mut g = vec![0.0; m];
    crate::backend::exact::full_gradient(prob, alpha, &mut g);
    let ya: f64 = alpha.iter().map(|(i, a)| a * prob.y[i]).sum();
    let mut quad = 0.0;
    let mut sum = 0.0;
    let mut viol: f64 = 0.0;
    #[allow(clippy::needless_range_loop)] // row i of g, y, α and C_i together
    for i in 0..m {
        let hi = g[i] - prob.y[i] * ya;
        let a = alpha.get(i);
        quad += a * hi;
        sum += a;
        let yf = hi + prob.y[i] * b;
        let v = if a <= 0.0 {
            1.0 - yf
        } else if a >= c_of(i) {
            yf - 1.0
        } else {
            (yf - 1.0).abs()
        };
        let _ = status;
        viol = viol.max(v);
    }
    (0.5 * quad - sum, viol.max(0.0))
}
