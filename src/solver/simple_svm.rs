//! SimpleSVM (Vishwanathan, Smola, Murty et al., *SimpleSVM / SimplerSVM* slides, after
//! Vishwanathan, Smola, Murty, *SimpleSVM*, ICML 2003; docs/METHODS.md, SimpleSVM): the
//! active-set solver of LIBSVM's C-SVC dual, a different problem from the other algorithms':
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
//! [`crate::backend::Columns::update_many`] per outer iteration.
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
use super::stepper::{Opened, Stepper};
use super::{SolverParams, Step, StepKind};
use crate::active::ActiveSet;
use crate::backend::{Marks, mark};
use crate::error::{Error, Result};
use crate::problem::Problem;
use crate::rng::SplitMix64;
use std::collections::BinaryHeap;

/// How the next violator is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Violator {
    /// Largest |y_iF(x_i) − 1| over all points.
    #[default]
    Greedy,
    /// SimplerSVM's priority queue.
    Queue,
}

/// How the KKT systems are solved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum LinearSolver {
    /// Cholesky factor with rank-one updates.
    #[default]
    #[cfg_attr(feature = "clap", value(name = "chol", alias = "cholesky"))]
    Cholesky,
    /// Conjugate gradients on the stored kernel block.
    Cg,
}

/// SimpleSVM settings beyond [`SolverParams`] (whose `eps` is the KKT tolerance on
/// |y_iF(x_i) − 1|, `max_iter` caps the violators added, `seed` picks the initial pair; the
/// box C is the problem's, [`Problem::c_svm`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SimpleParams {
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

/// Points whose k(x_i, x_i) set the regularisation τ (the first ones).
pub const DIAG_SAMPLE: usize = 1000;

/// Outer iterations in a row that leave α unchanged before the run is declared stalled.
const MAX_IDLE: usize = 1000;

/// The best SMO partner of violator k among the points at a bound: one of the other class that
/// can move the same way, or one of the same class that can move the other way, scored by the
/// pair's first-order gain (a full pass over g).
fn partner(
    be: &mut dyn Marks,
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

/// SimpleSVM as a [`Stepper`]: each step adds the violator the last
/// opening chose (the initial pair first) and solves the KKT system on W; each opening runs
/// the violator reduction, the dual objective and the choice of the next violator.
pub struct SimpleSvm {
    y: Vec<f64>,
    /// C_i = C·w_{y_i}·s_i: row i's box.
    cost: Vec<f64>,
    eps: f64,
    violator: Violator,
    alpha: Vec<f64>,
    status: Vec<u8>,
    b: f64,
    /// y_Uᵀ α_U = Σ_U y_j C_j.
    sum_yu: f64,
    blk: Block,
    ws: BlockScratch,
    upper: IndexSet,
    /// The violators that join W at the next step (the initial pair at the first).
    pending: Vec<usize>,
    /// Outer iterations in a row that left α unchanged.
    idle: usize,
    examined: Vec<u32>,
    was_sv: Vec<bool>,
    queue: BinaryHeap<Prio>,
    /// The feasible fraction of the last inner solve (1: the KKT solution was in the box).
    last_t: f64,
    dual: f64,
    // Scratch, sized as needed and reused.
    rhs: Vec<f64>,
    yw: Vec<f64>,
    z1: Vec<f64>,
    z2: Vec<f64>,
    target: Vec<f64>,
    hu: Vec<f64>,
    gbuf: Vec<f64>,
    col: Vec<f64>,
    row: Vec<f64>,
    hrow: Vec<f64>,
    idx: Vec<usize>,
    qbuf_idx: Vec<usize>,
    before: Vec<(usize, f64)>,
    changed: Vec<(usize, f64)>,
    mark_changes: Vec<(usize, u8)>,
}

impl SimpleSvm {
    /// Starts on `be`, whose problem must be a C-SVM one ([`Problem::c_svm`]: the L2 form
    /// with C = ∞, see the module doc), with the initial pair drawn by `params.seed`.
    pub fn start(prob: &Problem<'_>, be: &mut dyn Marks, params: &SolverParams) -> Result<Self> {
        let Some(c) = prob.box_c else {
            return Err(Error::param(
                "SimpleSVM solves the C-SVM: its problem is built by Problem::c_svm".into(),
            ));
        };
        let m = prob.len();
        // Row i's box: 0 ≤ α_i ≤ C_i = w_{y_i}·s_i·C (class weights, as LIBSVM's -wi, and row
        // weights).
        let cost = (0..m).map(|i| c * prob.cost_factor(i)).collect();
        let max_diag = (0..m.min(DIAG_SAMPLE))
            .map(|i| prob.k(i, i))
            .fold(1.0, f64::max);
        Self::start_with(prob.y.clone(), cost, max_diag, be, params)
    }

    /// Starts on `be` (the C-SVM's backend form over m points, see the module doc) from every
    /// point's label `y`, box `cost` (C_i) and `max_diag` = max(1, max k(x_i, x_i) over the first
    /// [`DIAG_SAMPLE`] points), with the initial pair drawn by `params.seed`: what
    /// [`SimpleSvm::start`] reads from the problem, given by a caller that holds the points
    /// elsewhere (a distributed run's ranks).
    pub fn start_with(
        y: Vec<f64>,
        cost: Vec<f64>,
        max_diag: f64,
        be: &mut dyn Marks,
        params: &SolverParams,
    ) -> Result<Self> {
        let m = be.len();
        if y.len() != m || cost.len() != m {
            return Err(Error::Backend(format!(
                "SimpleSVM over {m} points given {} labels and {} costs",
                y.len(),
                cost.len()
            )));
        }
        let pos: Vec<usize> = (0..m).filter(|&i| y[i] > 0.0).collect();
        let neg: Vec<usize> = (0..m).filter(|&i| y[i] < 0.0).collect();
        if pos.is_empty() || neg.is_empty() {
            return Err(Error::param(
                "SimpleSVM needs points of both classes".into(),
            ));
        }
        let mut rng = SplitMix64::new(params.seed);
        let pending = vec![pos[rng.below(pos.len())], neg[rng.below(neg.len())]];
        be.set_alpha(&ActiveSet::new(m))?;
        be.fill_marks(mark::LOW)?;
        Ok(SimpleSvm {
            y,
            cost,
            eps: params.eps,
            violator: params.simple.violator,
            alpha: vec![0.0; m],
            status: vec![L; m],
            b: 0.0,
            sum_yu: 0.0,
            blk: Block::new(
                1e-10 * max_diag,
                params.simple.solver == LinearSolver::Cholesky,
            ),
            ws: BlockScratch::default(),
            upper: IndexSet::new(m),
            pending,
            idle: 0,
            examined: vec![0; m],
            was_sv: vec![false; m],
            queue: BinaryHeap::new(),
            last_t: 1.0,
            dual: 0.0,
            rhs: Vec::new(),
            yw: Vec::new(),
            z1: Vec::new(),
            z2: Vec::new(),
            target: Vec::new(),
            hu: Vec::new(),
            gbuf: Vec::new(),
            col: Vec::new(),
            row: Vec::new(),
            hrow: Vec::new(),
            idx: Vec::new(),
            qbuf_idx: Vec::new(),
            before: Vec::new(),
            changed: Vec::new(),
            mark_changes: Vec::new(),
        })
    }

    /// Moves the pending violators into W: one kernel column each, the new row of H_WW.
    fn add_pending(&mut self, be: &mut dyn Marks) -> Result<()> {
        if self.blk.len() + self.pending.len() == 1 {
            // One free variable is pinned by yᵀα = 0: give the violator the partner an SMO
            // pair would (rare: only when every point sits at a bound).
            if let Some(j) = partner(be, &self.y, &self.status, self.b, self.pending[0])? {
                self.pending.push(j);
            }
        }
        self.mark_changes.clear();
        for t in 0..self.pending.len() {
            let k = self.pending[t];
            if self.status[k] == W {
                continue;
            }
            if self.status[k] == U {
                self.sum_yu -= self.y[k] * self.cost[k];
                self.upper.remove(k);
            }
            self.status[k] = W;
            self.mark_changes.push((k, mark::NONE));
            self.idx.clear();
            self.idx.extend_from_slice(&self.blk.idx);
            self.idx.push(k);
            let n = self.idx.len();
            self.col.resize(n, 0.0);
            be.column_entries(k, &self.idx, &mut self.col)?;
            // Q = H + yyᵀ
            self.row.clear();
            self.row.extend(
                self.idx[..n - 1]
                    .iter()
                    .zip(&self.col)
                    .map(|(&i, q)| q - self.y[i] * self.y[k]),
            );
            let hkk = self.col[n - 1] - 1.0;
            self.blk.push(k, &self.row, hkk)?;
        }
        be.set_marks(&self.mark_changes)?;
        self.pending.clear();
        Ok(())
    }

    /// Solves the KKT system on W, moves α_W toward its solution as far as the box allows,
    /// sends the blocking variable to L or U and repeats; then applies the change of α to g
    /// in one update.
    fn solve_block(&mut self, be: &mut dyn Marks) -> Result<()> {
        self.off_block_gradient(be)?;
        self.before.clear();
        self.before
            .extend(self.blk.idx.iter().map(|&j| (j, self.alpha[j])));
        while !self.blk.is_empty() {
            let bb = self.newton_target();
            // The largest feasible fraction t of the way from α_W to the target.
            let (t, block_k) = self.feasible_fraction();
            self.last_t = t.max(0.0);
            let n = self.blk.len();
            for (&j, &tk) in self.blk.idx.iter().zip(&self.target).take(n) {
                self.alpha[j] += t.max(0.0) * (tk - self.alpha[j]);
            }
            if block_k == usize::MAX {
                self.b = bb;
                break;
            }
            self.send_to_bound(block_k, be)?;
        }
        self.changed.clear();
        for &(j, a0) in &self.before {
            let d = self.alpha[j] - a0;
            if d != 0.0 {
                self.changed.push((j, d));
            }
        }
        be.update_many(1.0, &self.changed)?;
        for &j in &self.blk.idx {
            self.was_sv[j] = true;
        }
        self.idle = if self.changed.is_empty() {
            self.idle + 1
        } else {
            0
        };
        Ok(())
    }

    /// hu = H_WU α_U on W, from the synced gradient: g_W − H_WW α_W.
    fn off_block_gradient(&mut self, be: &mut dyn Marks) -> Result<()> {
        let n = self.blk.len();
        self.gbuf.resize(n, 0.0);
        be.gather(&self.blk.idx, &mut self.gbuf)?;
        self.hu.clear();
        for r in 0..n {
            let hw: f64 = self.blk.h[r]
                .iter()
                .zip(&self.blk.idx)
                .map(|(h, &j)| h * self.alpha[j])
                .sum();
            self.hu.push(self.gbuf[r] - hw);
        }
        Ok(())
    }

    /// The solution of the KKT system on W into `target` (α_W = z1 − b·z2 with H z1 = 1 − hu,
    /// H z2 = y and yᵀα_W = −Σ_U y_j α_j fixing b); returns b.
    fn newton_target(&mut self) -> f64 {
        let n = self.blk.len();
        self.rhs.clear();
        self.rhs.extend(self.hu.iter().map(|v| 1.0 - v));
        self.yw.clear();
        self.yw.extend(self.blk.idx.iter().map(|&j| self.y[j]));
        self.z1.resize(n, 0.0);
        self.z2.resize(n, 0.0);
        self.blk.solve(&self.rhs, None, &mut self.z1, &mut self.ws);
        self.blk.solve(&self.yw, None, &mut self.z2, &mut self.ws);
        let ytz1: f64 = self.yw.iter().zip(&self.z1).map(|(a, b)| a * b).sum();
        let ytz2: f64 = self.yw.iter().zip(&self.z2).map(|(a, b)| a * b).sum();
        let c_eq = -self.sum_yu;
        let bb = if ytz2.abs() > 0.0 {
            (ytz1 - c_eq) / ytz2
        } else {
            self.b
        };
        self.target.clear();
        self.target
            .extend(self.z1.iter().zip(&self.z2).map(|(a, b)| a - bb * b));
        bb
    }

    /// (t, k): the largest fraction t ≤ 1 of the way from α_W to the target that keeps
    /// 0 ≤ α ≤ C, and the point of W that blocks it (usize::MAX when none does).
    fn feasible_fraction(&self) -> (f64, usize) {
        let (mut t, mut block_k) = (1.0f64, usize::MAX);
        for k in 0..self.blk.len() {
            let j = self.blk.idx[k];
            let a = self.alpha[j];
            let d = self.target[k] - a;
            let lim = if d < 0.0 {
                a / -d
            } else if d > 0.0 {
                (self.cost[j] - a) / d
            } else {
                f64::INFINITY
            };
            if lim < t {
                t = lim;
                block_k = k;
            }
        }
        (t, block_k)
    }

    /// Sends the blocking point W[k] to U (α = C) or L (α = 0) and takes it out of W.
    fn send_to_bound(&mut self, block_k: usize, be: &mut dyn Marks) -> Result<()> {
        let j = self.blk.idx[block_k];
        let cj = self.cost[j];
        let to_upper = self.target[block_k] > self.alpha[j] || self.alpha[j] >= 0.5 * cj;
        if to_upper {
            self.alpha[j] = cj;
            self.status[j] = U;
            self.sum_yu += self.y[j] * cj;
            self.upper.insert(j);
            self.hrow.clear();
            self.hrow.extend_from_slice(&self.blk.h[block_k]);
            for (r, h) in self.hu.iter_mut().zip(&self.hrow) {
                *r += h * cj;
            }
            be.set_marks(&[(j, mark::HIGH)])?;
        } else {
            self.alpha[j] = 0.0;
            self.status[j] = L;
            be.set_marks(&[(j, mark::LOW)])?;
        }
        self.blk.remove(block_k);
        self.hu.remove(block_k);
        Ok(())
    }

    /// ½αᵀHα − 1ᵀα from the gradient on the free and bound support vectors.
    fn dual(&mut self, be: &mut dyn Marks) -> Result<f64> {
        self.idx.clear();
        self.idx.extend(self.blk.idx.iter().chain(&self.upper.idx));
        if self.idx.is_empty() {
            return Ok(0.0);
        }
        self.gbuf.resize(self.idx.len(), 0.0);
        be.gather(&self.idx, &mut self.gbuf)?;
        Ok(self
            .idx
            .iter()
            .zip(&self.gbuf)
            .map(|(&i, g)| self.alpha[i] * (0.5 * g - 1.0))
            .sum())
    }

    /// How far point i breaks its KKT condition (positive: a violator), from its gradient
    /// entry g_i = y_i F(x_i) − y_i b.
    fn violation(&self, i: usize, g: f64) -> f64 {
        let h = g + self.y[i] * self.b - 1.0;
        if self.status[i] == L { -h } else { h }
    }

    /// The SimplerSVM queue's choice: the top of the queue re-examined against the current
    /// model; rebuilt from a full pass when it is empty or holds no violator.
    fn pick_from_queue(&mut self, be: &mut dyn Marks) -> Result<Option<usize>> {
        let m = self.y.len();
        for attempt in 0..2 {
            if attempt == 1 || self.queue.is_empty() {
                self.queue.clear();
                self.idx.clear();
                self.idx.extend((0..m).filter(|&i| self.status[i] != W));
                self.gbuf.resize(self.idx.len(), 0.0);
                be.gather(&self.idx, &mut self.gbuf)?;
                for k in 0..self.idx.len() {
                    let i = self.idx[k];
                    let v = self.violation(i, self.gbuf[k]);
                    if v > self.eps {
                        self.push_queue(i, v);
                    }
                }
            }
            self.qbuf_idx.clear();
            while self.qbuf_idx.len() < QUEUE_BATCH {
                match self.queue.pop() {
                    Some(Prio(_, i)) if self.status[i] != W => self.qbuf_idx.push(i),
                    Some(_) => {}
                    None => break,
                }
            }
            if self.qbuf_idx.is_empty() {
                continue;
            }
            self.gbuf.resize(self.qbuf_idx.len(), 0.0);
            be.gather(&self.qbuf_idx, &mut self.gbuf)?;
            let mut best = (0.0, usize::MAX);
            for k in 0..self.qbuf_idx.len() {
                let i = self.qbuf_idx[k];
                self.examined[i] += 1;
                let v = self.violation(i, self.gbuf[k]);
                if v > self.eps && v > best.0 {
                    best = (v, i);
                }
            }
            for k in 0..self.qbuf_idx.len() {
                let i = self.qbuf_idx[k];
                let v = self.violation(i, self.gbuf[k]);
                if i != best.1 && v > self.eps {
                    self.push_queue(i, v);
                }
            }
            if best.1 != usize::MAX {
                return Ok(Some(best.1));
            }
        }
        Ok(None)
    }

    /// Queues violator i (violation v), weighted up for a former support vector and down by
    /// how often it was examined.
    fn push_queue(&mut self, i: usize, v: f64) {
        let w = if self.was_sv[i] { 2.0 } else { 1.0 };
        self.queue
            .push(Prio(w * v / (1.0 + self.examined[i] as f64), i));
    }
}

impl<'a> Stepper<dyn Marks + 'a> for SimpleSvm {
    fn open(&mut self, _iter: u64, be: &mut (dyn Marks + 'a)) -> Result<Opened> {
        if !self.pending.is_empty() && self.blk.is_empty() && self.upper.idx.is_empty() {
            // α = 0 before the initial pair: F = 0, every point violates by exactly 1.
            return Ok(Opened {
                f: 0.0,
                gap: 1.0,
                active: 0,
                converged: false,
                stalled: false,
            });
        }
        let mr = be.reduce_marked(self.b)?;
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
        let viol = lo.max(hi).max(0.0);
        self.dual = self.dual(be)?;
        let mut converged = viol <= self.eps;
        if !converged {
            let greedy = if lo >= hi { mr.low.0 } else { mr.high.0 };
            let pick = match self.violator {
                Violator::Greedy => greedy,
                // The device reduction said there is a violator: fall back to it.
                Violator::Queue => self.pick_from_queue(be)?.unwrap_or(greedy),
            };
            if pick == usize::MAX {
                converged = true;
            } else {
                self.pending.push(pick);
            }
        }
        Ok(Opened {
            f: self.dual,
            gap: viol,
            active: self.blk.len(),
            converged,
            stalled: self.idle > MAX_IDLE,
        })
    }

    fn step(&mut self, be: &mut (dyn Marks + 'a)) -> Result<Option<Step>> {
        self.add_pending(be)?;
        self.solve_block(be)?;
        Ok(Some(Step {
            kind: StepKind::Violator,
            size: self.last_t,
        }))
    }

    fn certify(&self, prob: &Problem<'_>, be: &mut (dyn Marks + 'a)) -> Result<(f64, f64)> {
        let alpha = self.active_set();
        // A distributed backend computes the exact gradient on the points' owners.
        let g = match be.exact_full_gradient(&alpha)? {
            Some(g) => g,
            None => {
                let mut g = vec![0.0; prob.len()];
                crate::backend::exact::full_gradient(prob, &alpha, &mut g);
                g
            }
        };
        Ok(certify(&g, &self.y, &alpha, self.b, &self.cost))
    }

    fn finish(self) -> (ActiveSet, Option<f64>) {
        (self.active_set(), Some(-self.b))
    }
}

impl SimpleSvm {
    /// α as an active set (the points with α > 0).
    fn active_set(&self) -> ActiveSet {
        let mut act = ActiveSet::new(self.alpha.len());
        for (i, &a) in self.alpha.iter().enumerate() {
            if a > 0.0 {
                act.set(i, a);
            }
        }
        act
    }
}

/// The exact dual objective ½αᵀHα − 1ᵀα and the largest KKT violation, from the exact f64
/// gradient `g` (Qα with Q = H + yyᵀ, corrected by y·yᵀα).
fn certify(g: &[f64], y: &[f64], alpha: &ActiveSet, b: f64, cost: &[f64]) -> (f64, f64) {
    let m = y.len();
    let ya: f64 = alpha.iter().map(|(i, a)| a * y[i]).sum();
    let mut quad = 0.0;
    let mut sum = 0.0;
    let mut viol: f64 = 0.0;
    #[allow(clippy::needless_range_loop)] // row i of g, y, α and C_i together
    for i in 0..m {
        let hi = g[i] - y[i] * ya;
        let a = alpha.get(i);
        quad += a * hi;
        sum += a;
        let yf = hi + y[i] * b;
        let v = if a <= 0.0 {
            1.0 - yf
        } else if a >= cost[i] {
            yf - 1.0
        } else {
            (yf - 1.0).abs()
        };
        viol = viol.max(v);
    }
    (0.5 * quad - sum, viol.max(0.0))
}
