//! Randomized (sampled) iterations behind the Backend seam (docs/METHODS.md; Frandi, Ñanculef,
//! Suykens, *A PARTAN-Accelerated Frank-Wolfe Algorithm for Large-Scale SVM Classification*,
//! 2015, §4.2).
//!
//! No full gradient is kept. The backend tracks g (and g⁻ for PARTAN) only on a small set T ⊇
//! supp(α) (∪ supp(α⁻)), updated with the entries of each step's columns on T. Each reduction
//! draws a sample S of `sample` indices uniformly without replacement, computes g_S exactly
//! from the |S|×|A| kernel block, and answers s = argmin over S ∪ A, v = argmax over A, αᵀg and
//! αᵀg⁻ over A — so every variant runs unchanged. The sampled gap 2f − g_s under-estimates the
//! true one; when it meets the stop rule, `extra_draws` more samples are drawn (the paper's
//! safeguard: two) and the smallest g among them is what the solver sees, so it stops only if
//! all of them agree. The solver's certification computes the true gap once at the end.
//!
//! Entries the variants ask for outside T (PARTAN's union of supports with a sampled s) are
//! computed exactly on demand from the current iterate (g) or the previous one (g⁻), and then
//! tracked. `columns computed` in the statistics counts draws (one |S| × |A| block each).
//!
//! The kernel blocks — the draw's |S|×|A| block and a step's columns restricted to T — are
//! computed by a [`BlockEngine`]: [`CpuBlocks`] (f64, rayon) or, on a GPU, the device's
//! `shaders/block.wgsl` ([`crate::backend::gpu::block::GpuBlocks`]). The host keeps T, the
//! draws and the reductions over S ∪ A (a few thousand entries). A step's block is deferred
//! to the next reduction and submitted with the draw's, so an iteration is one round trip to
//! the engine (PARTAN's g⁻ of a newly tracked point adds one).

use super::{Backend, BackendStats, Certify, Columns, Ranks, Reduction, Update};
use crate::active::ActiveSet;
use crate::error::Result;
use crate::problem::Problem;
use crate::rng::SplitMix64;

use super::exact::gradient_rows;

/// The weights of one kernel block.
#[derive(Debug, Clone, Copy)]
pub enum Weights<'w> {
    /// An iterate: out = g = Qα on the rows.
    Alpha(&'w ActiveSet),
    /// A few columns with coefficients: out = Σ c_j Q[:, j] on the rows.
    Cols(&'w [(usize, f64)]),
}

impl Weights<'_> {
    /// Number of weights.
    pub fn len(&self) -> usize {
        match self {
            Weights::Alpha(a) => a.len(),
            Weights::Cols(c) => c.len(),
        }
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Calls `f(j, w_j)` for each weight.
    pub fn for_each(&self, mut f: impl FnMut(usize, f64)) {
        match self {
            Weights::Alpha(a) => a.iter().for_each(|(j, w)| f(j, w)),
            Weights::Cols(c) => c.iter().for_each(|&(j, w)| f(j, w)),
        }
    }
}

/// One kernel block: out\[k\] = Σ_j w_j Q(rows\[k\], j).
pub struct BlockJob<'j> {
    /// Row indices.
    pub rows: &'j [usize],
    /// The weights.
    pub weights: Weights<'j>,
    /// One entry per row.
    pub out: &'j mut [f64],
}

/// Computes kernel blocks of a problem; all jobs of one call form one round trip. It also
/// answers single entries of Q on the host: the sampled backend knows the points only through
/// its engine (a distributed engine holds this rank's rows and the ones it fetched).
pub trait BlockEngine {
    /// For messages ("cpu", `"gpu: <adapter>"`).
    fn name(&self) -> String;
    /// Runs every job.
    fn run(&mut self, jobs: &mut [BlockJob<'_>]) -> Result<()>;
    /// Number of points m.
    fn len(&self) -> usize;
    /// True when m = 0.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Q_ij, exact f64 (both points known: see [`fetch`](Self::fetch)).
    fn q(&self, i: usize, j: usize) -> f64;
    /// Q_ii.
    fn q_diag(&self, i: usize) -> f64;
    /// Makes the points `idx` known to [`q`](Self::q) (a distributed engine fetches them from
    /// their ranks; every rank calls it alike). The default: all are known.
    fn fetch(&mut self, idx: &[usize]) -> Result<()> {
        let _ = idx;
        Ok(())
    }
    /// The certified (f, gap) of α when the engine computes it itself (over every rank's
    /// rows); None: the solver certifies on its problem (the default).
    fn certify(&mut self, alpha: &ActiveSet) -> Result<Option<(f64, f64)>> {
        let _ = alpha;
        Ok(None)
    }
}

/// Kernel blocks on the CPU, in f64 (the draws' blocks by GEMM, rayon over rows; a step's few
/// columns on T row by row, in parallel when T is large).
pub struct CpuBlocks<'a> {
    prob: &'a Problem<'a>,
}

impl<'a> CpuBlocks<'a> {
    /// Blocks of `prob`.
    pub fn new(prob: &'a Problem<'a>) -> Self {
        CpuBlocks { prob }
    }
}

impl BlockEngine for CpuBlocks<'_> {
    fn name(&self) -> String {
        "cpu".into()
    }

    fn len(&self) -> usize {
        self.prob.len()
    }

    fn q(&self, i: usize, j: usize) -> f64 {
        self.prob.q(i, j)
    }

    fn q_diag(&self, i: usize) -> f64 {
        self.prob.q_diag(i)
    }

    fn run(&mut self, jobs: &mut [BlockJob<'_>]) -> Result<()> {
        for job in jobs.iter_mut() {
            match job.weights {
                // An iteration's few rows, whole: the step is taken from them.
                Weights::Alpha(a) => {
                    crate::budget::unlimited(|| gradient_rows(self.prob, a, job.rows, job.out))
                }
                Weights::Cols(cols) => {
                    use rayon::prelude::*;
                    let prob = self.prob;
                    let one = |(o, &i): (&mut f64, &usize)| {
                        let mut v = 0.0;
                        for &(j, c) in cols {
                            v += c * prob.q(i, j);
                        }
                        *o = v;
                    };
                    if job.rows.len() * cols.len() >= 4096 {
                        job.out
                            .par_iter_mut()
                            .zip(job.rows.par_iter())
                            .for_each(one);
                    } else {
                        job.out.iter_mut().zip(job.rows).for_each(one);
                    }
                }
            }
        }
        Ok(())
    }
}

/// Settings of the sampled iterations.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SampledConfig {
    /// |S| per draw (the paper's 194: the pick is in the best 2 % with probability ≥ 0.98).
    pub sample: usize,
    /// Seed of the draws.
    pub seed: u64,
    /// The solver's ε and rel-eps, for the safeguard.
    pub eps: f64,
    /// See [`crate::solver::SolverParams::rel_eps`].
    pub rel_eps: f64,
    /// Extra draws before the sampled gap may stop the run.
    pub extra_draws: usize,
    /// The solver's stop rule (the safeguard applies the same one).
    pub stop: crate::stop::StopRule,
}

const UNTRACKED: u32 = u32::MAX;

/// A step whose block on T is still to be computed.
struct Pending {
    scale: f64,
    cols: Vec<(usize, f64)>,
    prev_coef: f64,
    rotate: bool,
}

/// The sampled backend.
pub struct Sampled<'a> {
    cfg: SampledConfig,
    engine: Box<dyn BlockEngine + 'a>,
    rng: SplitMix64,
    /// Position of each index in `tracked`, or UNTRACKED.
    pos: Vec<u32>,
    tracked: Vec<usize>,
    g: Vec<f64>,
    gp: Vec<f64>,
    prev: bool,
    /// The iterate g describes once the pending step is applied: α of the last reduction,
    /// moved by the steps since (α' = scale·α + Σ c_j e_j + prev_coef·α⁻, as g' is).
    alpha_cur: ActiveSet,
    /// Scratch copy of α for a step.
    alpha_tmp: ActiveSet,
    /// The iterate whose gradient g⁻ holds.
    alpha_prev: ActiveSet,
    /// The last draws and their exact g.
    sample_idx: Vec<usize>,
    sample_g: Vec<f64>,
    /// The last step, not yet applied to g on T.
    pending: Option<Pending>,
    /// Partial Fisher–Yates permutation used for drawing without replacement.
    perm: Vec<u32>,
    buf_idx: Vec<usize>,
    blk: Vec<f64>,
    stats: BackendStats,
}

impl<'a> Sampled<'a> {
    /// A sampled backend on `prob` with kernel blocks on the CPU.
    pub fn new(prob: &'a Problem<'a>, cfg: SampledConfig) -> Self {
        Self::with_engine(cfg, Box::new(CpuBlocks::new(prob)))
    }

    /// A sampled backend on the problem whose kernel blocks `engine` computes.
    pub fn with_engine(cfg: SampledConfig, engine: Box<dyn BlockEngine + 'a>) -> Self {
        let m = engine.len();
        Sampled {
            cfg: SampledConfig {
                sample: cfg.sample.clamp(1, m.max(1)),
                ..cfg
            },
            engine,
            rng: SplitMix64::new(cfg.seed ^ 0x5A3F_1D2C_9B8E_7F60),
            pos: vec![UNTRACKED; m],
            tracked: Vec::new(),
            g: Vec::new(),
            gp: Vec::new(),
            prev: false,
            alpha_cur: ActiveSet::new(m),
            alpha_prev: ActiveSet::new(m),
            alpha_tmp: ActiveSet::new(m),
            sample_idx: Vec::new(),
            sample_g: Vec::new(),
            pending: None,
            perm: (0..m as u32).collect(),
            buf_idx: Vec::new(),
            blk: Vec::new(),
            stats: BackendStats::default(),
        }
    }

    /// Size of the tracked set T.
    pub fn tracked(&self) -> usize {
        self.tracked.len()
    }

    fn track(&mut self, i: usize, g: f64, gp: f64) {
        self.pos[i] = self.tracked.len() as u32;
        self.tracked.push(i);
        self.g.push(g);
        self.gp.push(gp);
    }

    /// Applies a step to g (and g⁻) on T, given its block `blk` on T.
    fn apply(&mut self, p: &Pending, blk: &[f64]) {
        for (r, &b) in blk.iter().enumerate() {
            let old = self.g[r];
            let mut v = p.scale * old + b;
            if self.prev {
                v += p.prev_coef * self.gp[r];
                if p.rotate {
                    self.gp[r] = old;
                }
            }
            self.g[r] = v;
        }
    }

    /// Applies the pending step, if any (one engine call).
    fn settle(&mut self) -> Result<()> {
        if let Some(p) = self.pending.take() {
            let mut blk = std::mem::take(&mut self.blk);
            blk.resize(self.tracked.len(), 0.0);
            self.engine.run(&mut [BlockJob {
                rows: &self.tracked,
                weights: Weights::Cols(&p.cols),
                out: &mut blk,
            }])?;
            self.apply(&p, &blk);
            self.blk = blk;
        }
        Ok(())
    }

    /// Tracks every index of `idx` not yet tracked, with exact g (from the current iterate
    /// `alpha_cur`, or the sample drawn for it) and g⁻ (from the previous iterate). No step may
    /// be pending.
    fn ensure_tracked(&mut self, idx: &[usize]) -> Result<()> {
        debug_assert!(self.pending.is_none());
        self.buf_idx.clear();
        for &i in idx {
            if self.pos[i] == UNTRACKED && !self.buf_idx.contains(&i) {
                self.buf_idx.push(i);
            }
        }
        if self.buf_idx.is_empty() {
            return Ok(());
        }
        let new = std::mem::take(&mut self.buf_idx);
        let mut g = vec![0.0; new.len()];
        // Sampled entries are already exact for alpha_cur.
        let mut missing = Vec::new();
        for (k, &i) in new.iter().enumerate() {
            match self.sample_idx.iter().position(|&j| j == i) {
                Some(p) => g[k] = self.sample_g[p],
                None => missing.push(k),
            }
        }
        let rows: Vec<usize> = missing.iter().map(|&k| new[k]).collect();
        let mut out = vec![0.0; rows.len()];
        let mut gp = vec![0.0; if self.prev { new.len() } else { 0 }];
        {
            let mut jobs = Vec::with_capacity(2);
            if !rows.is_empty() {
                jobs.push(BlockJob {
                    rows: &rows,
                    weights: Weights::Alpha(&self.alpha_cur),
                    out: &mut out,
                });
            }
            if self.prev {
                jobs.push(BlockJob {
                    rows: &new,
                    weights: Weights::Alpha(&self.alpha_prev),
                    out: &mut gp,
                });
            }
            self.engine.run(&mut jobs)?;
        }
        for (t, &k) in missing.iter().enumerate() {
            g[k] = out[t];
        }
        if !self.prev {
            gp = g.clone();
        }
        for (k, &i) in new.iter().enumerate() {
            self.track(i, g[k], gp[k]);
        }
        self.buf_idx = new;
        Ok(())
    }

    /// Drops tracked entries outside supp(α) ∪ supp(α⁻), keeping T small.
    fn prune(&mut self, alpha: &ActiveSet) {
        let mut w = 0;
        for r in 0..self.tracked.len() {
            let i = self.tracked[r];
            let keep = alpha.contains(i) || (self.prev && self.alpha_prev.contains(i));
            if keep {
                self.tracked[w] = i;
                self.g[w] = self.g[r];
                self.gp[w] = self.gp[r];
                self.pos[i] = w as u32;
                w += 1;
            } else {
                self.pos[i] = UNTRACKED;
            }
        }
        self.tracked.truncate(w);
        self.g.truncate(w);
        self.gp.truncate(w);
    }

    /// Draws one sample (without replacement) and appends its indices to `sample_idx`; returns
    /// where they start.
    fn draw_indices(&mut self) -> usize {
        let m = self.perm.len();
        let n = self.cfg.sample;
        let start = self.sample_idx.len();
        for k in 0..n {
            let r = k + self.rng.below(m - k);
            self.perm.swap(k, r);
            self.sample_idx.push(self.perm[k] as usize);
        }
        self.sample_g.resize(start + n, 0.0);
        self.stats.columns_computed += 1;
        start
    }

    /// g ← scale·g + Σ c_j Q[:, j] (+ prev_coef·g⁻; with `rotate`, g⁻ ← the old g): recorded
    /// as pending, α moved alike.
    fn step(
        &mut self,
        scale: f64,
        cols: Vec<(usize, f64)>,
        prev_coef: f64,
        rotate: bool,
    ) -> Result<()> {
        self.settle()?;
        let js: Vec<usize> = cols.iter().map(|c| c.0).collect();
        self.ensure_tracked(&js)?;
        // α' = scale·α + Σ c_j e_j + prev_coef·α⁻ (entries that reach ≤ 0 are dropped).
        self.alpha_tmp.copy_from(&self.alpha_cur);
        for (i, a) in self.alpha_tmp.iter() {
            self.alpha_cur.set(i, scale * a);
        }
        for &(j, c) in &cols {
            self.alpha_cur.set(j, self.alpha_cur.get(j) + c);
        }
        if self.prev {
            if prev_coef != 0.0 {
                for (i, a) in self.alpha_prev.iter() {
                    self.alpha_cur.set(i, self.alpha_cur.get(i) + prev_coef * a);
                }
            }
            if rotate {
                self.alpha_prev.copy_from(&self.alpha_tmp);
            }
        }
        // Applied with the next reduction's draw (or before the next read of g).
        self.pending = Some(Pending {
            scale,
            cols,
            prev_coef,
            rotate,
        });
        // The sample's g values describe the iterate before this step: no longer valid.
        self.sample_idx.clear();
        self.sample_g.clear();
        self.stats.updates += 1;
        Ok(())
    }

    /// Computes the exact g of the draws from `start` on under `alpha`, together with the
    /// pending step's block on T (one engine call), and applies the step.
    fn fill_draw(&mut self, alpha: &ActiveSet, start: usize) -> Result<()> {
        let pending = self.pending.take();
        let mut blk = std::mem::take(&mut self.blk);
        {
            let mut jobs = Vec::with_capacity(2);
            if let Some(p) = &pending {
                blk.resize(self.tracked.len(), 0.0);
                jobs.push(BlockJob {
                    rows: &self.tracked,
                    weights: Weights::Cols(&p.cols),
                    out: &mut blk,
                });
            }
            jobs.push(BlockJob {
                rows: &self.sample_idx[start..],
                weights: Weights::Alpha(alpha),
                out: &mut self.sample_g[start..],
            });
            self.engine.run(&mut jobs)?;
        }
        if let Some(p) = &pending {
            self.apply(p, &blk);
        }
        self.blk = blk;
        Ok(())
    }
}

impl Backend for Sampled<'_> {
    fn len(&self) -> usize {
        self.engine.len()
    }

    fn name(&self) -> String {
        format!(
            "{}, sampled (|S| = {})",
            self.engine.name(),
            self.cfg.sample
        )
    }

    fn q_diag(&self, i: usize) -> f64 {
        self.engine.q_diag(i)
    }

    fn q(&self, i: usize, j: usize) -> f64 {
        self.engine.q(i, j)
    }

    fn set_alpha(&mut self, alpha: &ActiveSet) -> Result<()> {
        self.pending = None;
        for &i in &self.tracked {
            self.pos[i] = UNTRACKED;
        }
        self.tracked.clear();
        self.g.clear();
        self.gp.clear();
        self.sample_idx.clear();
        self.sample_g.clear();
        self.alpha_cur.copy_from(alpha);
        self.alpha_prev.copy_from(alpha);
        let idx = alpha.indices().to_vec();
        let mut g = vec![0.0; idx.len()];
        self.engine.run(&mut [BlockJob {
            rows: &idx,
            weights: Weights::Alpha(alpha),
            out: &mut g,
        }])?;
        for (k, &i) in idx.iter().enumerate() {
            self.track(i, g[k], g[k]);
        }
        Ok(())
    }

    fn enable_prev(&mut self) {
        self.prev = true;
    }

    fn update(&mut self, u: &Update) -> Result<()> {
        let cols: Vec<(usize, f64)> = u.merged_cols().iter().flatten().copied().collect();
        self.step(u.scale, cols, u.prev_coef, u.rotate)
    }

    fn reduce(&mut self, alpha: &ActiveSet) -> Result<Reduction> {
        // Pruning first: the pending step is then computed on the survivors only.
        self.prune(alpha);
        self.sample_idx.clear();
        self.sample_g.clear();
        let start = self.draw_indices();
        self.fill_draw(alpha, start)?;
        self.alpha_cur.copy_from(alpha);
        let supp = alpha.indices().to_vec();
        self.ensure_tracked(&supp)?;
        let (mut v, mut g_v) = (usize::MAX, f64::NEG_INFINITY);
        let (mut s, mut g_s) = (usize::MAX, f64::INFINITY);
        let (mut ag, mut agp) = (0.0, 0.0);
        for (i, a) in alpha.iter() {
            let r = self.pos[i] as usize;
            let gi = self.g[r];
            ag += a * gi;
            agp += a * self.gp[r];
            if gi > g_v || (gi == g_v && i < v) {
                v = i;
                g_v = gi;
            }
            if gi < g_s || (gi == g_s && i < s) {
                s = i;
                g_s = gi;
            }
        }
        let mut from = start;
        let mut draws = 0;
        loop {
            for k in from..self.sample_idx.len() {
                let (i, gi) = (self.sample_idx[k], self.sample_g[k]);
                if gi < g_s || (gi == g_s && i < s) {
                    s = i;
                    g_s = gi;
                }
            }
            let gap = ag - g_s;
            let kappa = if self.engine.is_empty() {
                0.0
            } else {
                self.engine.q_diag(0)
            };
            let would_stop = crate::stop::stop_rule_met(
                self.cfg.stop,
                self.cfg.eps,
                self.cfg.rel_eps,
                gap,
                ag,
                kappa,
            );
            if !would_stop || draws == self.cfg.extra_draws {
                break;
            }
            draws += 1;
            from = self.draw_indices();
            self.fill_draw(alpha, from)?;
        }
        // The vertices the step will evaluate Q at (a distributed engine fetches their rows).
        let need = [s, v];
        self.engine
            .fetch(&need[..if v == usize::MAX { 1 } else { 2 }])?;
        Ok(Reduction {
            s,
            g_s,
            v,
            g_v,
            alpha_g: ag,
            alpha_g_prev: if self.prev { agp } else { 0.0 },
        })
    }

    fn gather(&mut self, idx: &[usize], out: &mut [f64]) -> Result<()> {
        self.settle()?;
        self.ensure_tracked(idx)?;
        for (o, &i) in out.iter_mut().zip(idx) {
            *o = self.g[self.pos[i] as usize];
        }
        Ok(())
    }

    fn gather_prev(&mut self, idx: &[usize], out: &mut [f64]) -> Result<()> {
        self.settle()?;
        self.ensure_tracked(idx)?;
        let src = if self.prev { &self.gp } else { &self.g };
        for (o, &i) in out.iter_mut().zip(idx) {
            *o = src[self.pos[i] as usize];
        }
        Ok(())
    }

    fn column_entries(&mut self, j: usize, idx: &[usize], out: &mut [f64]) -> Result<()> {
        self.engine.fetch(&[j])?;
        self.engine.fetch(idx)?;
        for (o, &i) in out.iter_mut().zip(idx) {
            *o = self.engine.q(i, j);
        }
        Ok(())
    }

    fn stats(&self) -> BackendStats {
        self.stats
    }
}

impl Columns for Sampled<'_> {
    fn update_many(&mut self, scale: f64, cols: &[(usize, f64)]) -> Result<()> {
        if cols.is_empty() && scale == 1.0 {
            return Ok(());
        }
        // One block over all the columns (the trait's default would make a step per pair).
        let mut merged: Vec<(usize, f64)> = Vec::with_capacity(cols.len());
        for &(j, c) in cols {
            match merged.iter_mut().find(|e| e.0 == j) {
                Some(e) => e.1 += c,
                None => merged.push((j, c)),
            }
        }
        self.step(scale, merged, 0.0, false)
    }
}

impl Ranks for Sampled<'_> {
    fn fetch_rows(&mut self, idx: &[usize]) -> Result<()> {
        self.engine.fetch(idx)
    }
}

impl Certify for Sampled<'_> {
    fn certify_exact(&mut self, alpha: &ActiveSet) -> Result<Option<(f64, f64)>> {
        self.engine.certify(alpha)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::{CpuConfig, Precision, cpu_backend};
    use crate::data::Dataset;
    use crate::kernel::Kernel;
    use crate::solver::{Algorithm, SolverParams, solve_plain};

    fn dataset(m: usize, seed: u64) -> Dataset {
        crate::bench::synthetic(m, 4, 1.0, seed)
    }

    fn config(sample: usize, seed: u64) -> SampledConfig {
        SampledConfig {
            sample,
            seed,
            eps: 1e-6,
            rel_eps: 1.0,
            extra_draws: 2,
            stop: crate::stop::StopRule::Gap,
        }
    }

    /// Wraps a backend and records every reduction (the vertex choices).
    struct Log<'a>(Box<dyn Backend + 'a>, Vec<(usize, usize)>);
    impl Backend for Log<'_> {
        fn len(&self) -> usize {
            self.0.len()
        }
        fn name(&self) -> String {
            self.0.name()
        }
        fn q_diag(&self, i: usize) -> f64 {
            self.0.q_diag(i)
        }
        fn q(&self, i: usize, j: usize) -> f64 {
            self.0.q(i, j)
        }
        fn set_alpha(&mut self, a: &ActiveSet) -> Result<()> {
            self.0.set_alpha(a)
        }
        fn enable_prev(&mut self) {
            self.0.enable_prev()
        }
        fn update(&mut self, u: &Update) -> Result<()> {
            self.0.update(u)
        }
        fn reduce(&mut self, a: &ActiveSet) -> Result<Reduction> {
            let r = self.0.reduce(a)?;
            self.1.push((r.s, r.v));
            Ok(r)
        }
        fn gather(&mut self, idx: &[usize], out: &mut [f64]) -> Result<()> {
            self.0.gather(idx, out)
        }
        fn gather_prev(&mut self, idx: &[usize], out: &mut [f64]) -> Result<()> {
            self.0.gather_prev(idx, out)
        }
        fn column_entries(&mut self, j: usize, idx: &[usize], out: &mut [f64]) -> Result<()> {
            self.0.column_entries(j, idx, out)
        }
        fn stats(&self) -> BackendStats {
            self.0.stats()
        }
    }

    impl Columns for Log<'_> {}
    impl Ranks for Log<'_> {}
    impl Certify for Log<'_> {}

    /// With S = all points the sampled backend is the full-gradient one computed another way:
    /// every variant takes the same steps as on the CPU backend with f64 columns.
    #[test]
    fn full_sample_reproduces_the_full_gradient_run() {
        let ds = dataset(150, 3);
        let prob = Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 2.0 }, 10.0).unwrap();
        for alg in Algorithm::FW {
            let params = SolverParams {
                algorithm: Some(alg),
                eps: 1e-9,
                max_iter: 60,
                certify: false,
                ..SolverParams::default()
            };
            let cpu = cpu_backend(
                &prob,
                CpuConfig {
                    precision: Some(Precision::F64),
                    ..CpuConfig::default()
                },
            );
            let mut a = Log(cpu, Vec::new());
            let ra = solve_plain(&prob, &mut a, &params, &mut []).unwrap();
            let mut b = Log(Box::new(Sampled::new(&prob, config(150, 1))), Vec::new());
            let rb = solve_plain(&prob, &mut b, &params, &mut []).unwrap();
            assert_eq!(a.1, b.1, "{alg}: vertex choices");
            assert!(
                (ra.f - rb.f).abs() <= 1e-12 * ra.f.abs().max(1e-300),
                "{alg}: {} vs {}",
                ra.f,
                rb.f
            );
        }
    }

    /// Small samples: every variant converges to the optimum (the certified gap is exact),
    /// tracks only a small set, and a seed reproduces a run bit for bit.
    #[test]
    fn sampled_runs_converge_and_are_reproducible() {
        let ds = dataset(600, 5);
        let prob = Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 1.0 }, 10.0).unwrap();
        let exact = {
            let mut be = cpu_backend(
                &prob,
                CpuConfig {
                    precision: Some(Precision::F64),
                    ..CpuConfig::default()
                },
            );
            let params = SolverParams {
                algorithm: Some(Algorithm::Swap2),
                eps: 1e-11,
                ..SolverParams::default()
            };
            crate::solver::solve(&prob, be.as_mut(), &params, &mut []).unwrap()
        };
        let f_star = exact.certified_f.unwrap();
        let f_low = f_star - exact.certified_gap.unwrap();
        for alg in Algorithm::FW {
            let params = SolverParams {
                algorithm: Some(alg),
                eps: 1e-7,
                max_iter: 5_000,
                ..SolverParams::default()
            };
            let run = |seed, max_iter| {
                let mut be = Sampled::new(&prob, config(60, seed));
                let p = SolverParams {
                    max_iter,
                    ..params.clone()
                };
                let r = solve_plain(&prob, &mut be, &p, &mut []).unwrap();
                (r, be.tracked())
            };
            let t = std::time::Instant::now();
            let (r1, tracked) = run(1, params.max_iter);
            eprintln!(
                "{alg}: {} iterations, f/f* - 1 = {:.2e}, stop {:?}, {:.2}s",
                r1.iterations,
                r1.certified_f.unwrap() / f_star - 1.0,
                r1.stop,
                t.elapsed().as_secs_f64()
            );
            let (r2, _) = run(1, params.max_iter);
            assert_eq!(r1.iterations, r2.iterations, "{alg}");
            assert_eq!(r1.f.to_bits(), r2.f.to_bits(), "{alg}");
            let gap = r1.certified_gap.unwrap();
            let f = r1.certified_f.unwrap();
            assert!(
                f >= f_low,
                "{alg}: f {f} below the optimum's lower bound {f_low}"
            );
            // Where each variant is after 5,000 sampled iterations, with margin (measured: fw
            // 36 % above f*, mfw 7.7 %, swap 4.6 %, swap2 1.4e-7, partan 0.39 %).
            let tol = match alg {
                Algorithm::Fw => 0.5,
                Algorithm::Mfw => 0.15,
                Algorithm::Swap => 0.1,
                Algorithm::Swap2 => 1e-5,
                Algorithm::Partan => 1e-2,
                other => unreachable!("{other} is not in Algorithm::FW"),
            };
            assert!(
                f - f_star <= tol * f_star,
                "{alg}: f {f} vs optimum {f_star} (certified gap {gap:e}, {} iterations)",
                r1.iterations
            );
            assert!(tracked <= 2 * r1.alpha.len() + 3, "{alg}: tracks {tracked}");
            let (a, _) = run(1, 300);
            let (b, _) = run(2, 300);
            assert!(
                a.f.to_bits() != b.f.to_bits(),
                "{alg}: a different seed gave the same run"
            );
        }
    }
}
