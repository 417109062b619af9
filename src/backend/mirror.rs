//! A backend that runs two backends in lockstep, for `fwsvm check`.
//!
//! Every call goes to both; the solver sees the *primary*'s answers, so both backends hold the
//! gradient of the same α at every iteration and their gradients can be compared entry by
//! entry. At the chosen checkpoints (reduction numbers) the whole of g (and g⁻, when enabled)
//! is gathered from both and the largest difference recorded; every reduction also records
//! whether the two backends chose the same vertices (s and v).

use super::{
    Backend, BackendStats, Certify, Columns, MarkedReduction, Marks, Ranks, Reduction, Update,
};
use crate::active::ActiveSet;
use crate::error::Result;

/// The comparison at one checkpoint.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GradientCheck {
    /// Iteration (the solver's count: the reduction that opens iteration `iteration`).
    pub iteration: u64,
    /// max_i |g_primary,i − g_secondary,i| (including g⁻ when enabled).
    pub max_abs_diff: f64,
    /// max_i |g_secondary,i|.
    pub max_abs_g: f64,
    /// max_i Q_ii, the scale the difference is judged against: Q is positive semi-definite,
    /// so |Q_ij| ≤ max_i Q_ii and, α being on the simplex, |g_i| ≤ max_i Q_ii too; rounding
    /// errors of the columns are relative to that scale, not to the current (shrinking) g.
    pub q_max: f64,
    /// |αᵀg_primary − αᵀg_secondary| over A (= 2 |f_primary − f_secondary|).
    pub alpha_g_diff: f64,
}

impl GradientCheck {
    /// max |Δg| / max_i Q_ii.
    pub fn relative(&self) -> f64 {
        if self.q_max > 0.0 {
            self.max_abs_diff / self.q_max
        } else {
            self.max_abs_diff
        }
    }
}

/// Two backends in lockstep; see the module doc.
pub struct Mirror<'a> {
    primary: Box<dyn Marks + 'a>,
    secondary: Box<dyn Marks + 'a>,
    prev: bool,
    reductions: u64,
    checkpoints: Vec<u64>,
    /// Gradient comparisons, in order.
    pub checks: Vec<GradientCheck>,
    /// Reductions whose argmin s differed between the backends.
    pub s_mismatches: u64,
    /// Reductions whose active-set argmax v differed.
    pub v_mismatches: u64,
    /// The first iteration whose vertex choice differed.
    pub first_mismatch: Option<u64>,
    q_max: f64,
    all: Vec<usize>,
    buf_a: Vec<f64>,
    buf_b: Vec<f64>,
}

impl<'a> Mirror<'a> {
    /// Mirrors `secondary` behind `primary`, comparing gradients at the given iterations.
    pub fn new(
        primary: Box<dyn Marks + 'a>,
        secondary: Box<dyn Marks + 'a>,
        mut checkpoints: Vec<u64>,
    ) -> Self {
        assert_eq!(
            primary.len(),
            secondary.len(),
            "mirrored backends differ in m"
        );
        checkpoints.sort_unstable();
        checkpoints.dedup();
        let m = primary.len();
        let q_max = (0..m).map(|i| secondary.q_diag(i)).fold(0.0, f64::max);
        Mirror {
            q_max,
            primary,
            secondary,
            prev: false,
            reductions: 0,
            checkpoints,
            checks: Vec::new(),
            s_mismatches: 0,
            v_mismatches: 0,
            first_mismatch: None,
            all: (0..m).collect(),
            buf_a: vec![0.0; m],
            buf_b: vec![0.0; m],
        }
    }

    /// Reductions seen so far.
    pub fn reductions(&self) -> u64 {
        self.reductions
    }

    /// Compares the full gradients now and records it as iteration `iteration`.
    pub fn compare(&mut self, iteration: u64, alpha: &ActiveSet) -> Result<GradientCheck> {
        let mut diff = 0.0f64;
        let mut scale = 0.0f64;
        self.primary.gather(&self.all, &mut self.buf_a)?;
        self.secondary.gather(&self.all, &mut self.buf_b)?;
        let (mut ag_a, mut ag_b) = (0.0, 0.0);
        for (&a, &b) in self.buf_a.iter().zip(&self.buf_b) {
            diff = diff.max((a - b).abs());
            scale = scale.max(b.abs());
        }
        for (j, al) in alpha.iter() {
            ag_a += al * self.buf_a[j];
            ag_b += al * self.buf_b[j];
        }
        if self.prev {
            self.primary.gather_prev(&self.all, &mut self.buf_a)?;
            self.secondary.gather_prev(&self.all, &mut self.buf_b)?;
            for (&a, &b) in self.buf_a.iter().zip(&self.buf_b) {
                diff = diff.max((a - b).abs());
                scale = scale.max(b.abs());
            }
        }
        let c = GradientCheck {
            iteration,
            max_abs_diff: diff,
            max_abs_g: scale,
            q_max: self.q_max,
            alpha_g_diff: (ag_a - ag_b).abs(),
        };
        self.checks.push(c);
        Ok(c)
    }
}

impl Backend for Mirror<'_> {
    fn len(&self) -> usize {
        self.primary.len()
    }

    fn name(&self) -> String {
        format!(
            "{} mirrored by {}",
            self.primary.name(),
            self.secondary.name()
        )
    }

    fn q_diag(&self, i: usize) -> f64 {
        self.primary.q_diag(i)
    }

    fn q(&self, i: usize, j: usize) -> f64 {
        self.primary.q(i, j)
    }

    fn set_alpha(&mut self, alpha: &ActiveSet) -> Result<()> {
        self.primary.set_alpha(alpha)?;
        self.secondary.set_alpha(alpha)
    }

    fn set_alpha_with(&mut self, alpha: &ActiveSet, g: &[f64]) -> Result<()> {
        self.primary.set_alpha_with(alpha, g)?;
        self.secondary.set_alpha_with(alpha, g)
    }

    fn enable_prev(&mut self) {
        self.prev = true;
        self.primary.enable_prev();
        self.secondary.enable_prev();
    }

    fn update(&mut self, u: &Update) -> Result<()> {
        self.primary.update(u)?;
        self.secondary.update(u)
    }

    fn reduce(&mut self, alpha: &ActiveSet) -> Result<Reduction> {
        let iteration = self.reductions;
        self.reductions += 1;
        let a = self.primary.reduce(alpha)?;
        let b = self.secondary.reduce(alpha)?;
        let s_diff = a.s != b.s;
        let v_diff = a.v != b.v;
        self.s_mismatches += s_diff as u64;
        self.v_mismatches += v_diff as u64;
        if (s_diff || v_diff) && self.first_mismatch.is_none() {
            self.first_mismatch = Some(iteration);
        }
        if self.checkpoints.binary_search(&iteration).is_ok() {
            self.compare(iteration, alpha)?;
        }
        Ok(a)
    }

    fn gather(&mut self, idx: &[usize], out: &mut [f64]) -> Result<()> {
        let mut other = vec![0.0; idx.len()];
        self.secondary.gather(idx, &mut other)?;
        self.primary.gather(idx, out)
    }

    fn gather_prev(&mut self, idx: &[usize], out: &mut [f64]) -> Result<()> {
        let mut other = vec![0.0; idx.len()];
        self.secondary.gather_prev(idx, &mut other)?;
        self.primary.gather_prev(idx, out)
    }

    fn column_entries(&mut self, j: usize, idx: &[usize], out: &mut [f64]) -> Result<()> {
        // The secondary computes (and caches) the column too, so its later update costs what
        // it would have alone.
        let mut other = vec![0.0; idx.len()];
        self.secondary.column_entries(j, idx, &mut other)?;
        self.primary.column_entries(j, idx, out)
    }

    fn gather_fused(
        &mut self,
        idx: &[usize],
        g: &mut [f64],
        prev: Option<&mut [f64]>,
        col: Option<(usize, &mut [f64])>,
    ) -> Result<()> {
        let n = idx.len();
        let (mut a, mut b, mut c) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
        self.secondary.gather_fused(
            idx,
            &mut a,
            prev.is_some().then_some(&mut b[..]),
            col.as_ref().map(|(j, _)| (*j, &mut c[..])),
        )?;
        self.primary.gather_fused(idx, g, prev, col)
    }

    fn stats(&self) -> BackendStats {
        self.primary.stats()
    }
}

impl Columns for Mirror<'_> {
    fn update_many(&mut self, scale: f64, cols: &[(usize, f64)]) -> Result<()> {
        self.primary.update_many(scale, cols)?;
        self.secondary.update_many(scale, cols)
    }
}

impl Ranks for Mirror<'_> {}

impl Certify for Mirror<'_> {}

impl Marks for Mirror<'_> {
    fn fill_marks(&mut self, mk: u8) -> Result<()> {
        self.primary.fill_marks(mk)?;
        self.secondary.fill_marks(mk)
    }

    fn set_marks(&mut self, marks: &[(usize, u8)]) -> Result<()> {
        self.primary.set_marks(marks)?;
        self.secondary.set_marks(marks)
    }

    fn reduce_marked(&mut self, shift: f64) -> Result<MarkedReduction> {
        let iteration = self.reductions;
        let a = self.primary.reduce_marked(shift)?;
        let b = self.secondary.reduce_marked(shift)?;
        if (a.low.0, a.mid.0, a.high.0) != (b.low.0, b.mid.0, b.high.0) {
            self.s_mismatches += 1;
            if self.first_mismatch.is_none() {
                self.first_mismatch = Some(iteration);
            }
        }
        Ok(a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::{CpuConfig, Precision, cpu_backend};
    use crate::data::Dataset;
    use crate::kernel::Kernel;
    use crate::problem::Problem;
    use crate::solver::{Algorithm, SolverParams, solve};

    fn dataset() -> Dataset {
        let (d, m) = (5usize, 300usize);
        let (mut vals, mut labels) = (Vec::new(), Vec::new());
        let mut s = 12345u64;
        for i in 0..m {
            let mut r = [0f32; 5];
            for v in r.iter_mut() {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                *v = ((s >> 33) as f64 / (1u64 << 31) as f64) as f32;
            }
            let pos = (r[0] + r[1] > 1.0) ^ (i % 17 == 0);
            labels.push(if pos { 1.0 } else { -1.0 });
            vals.extend_from_slice(&r);
        }
        let indptr = (0..=m).map(|i| i * d).collect();
        let indices = (0..m).flat_map(|_| 0..d as u32).collect();
        Dataset::from_csr(d, indptr, indices, vals, labels)
    }

    #[test]
    fn mirrored_f32_and_f64_columns_agree_and_record_checkpoints() {
        let ds = dataset();
        let prob = Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 1.0 }, 10.0).unwrap();
        let f32c = CpuConfig {
            precision: Some(Precision::F32),
            ..CpuConfig::default()
        };
        let f64c = CpuConfig {
            precision: Some(Precision::F64),
            ..CpuConfig::default()
        };
        let mut mirror = Mirror::new(
            cpu_backend(&prob, f32c),
            cpu_backend(&prob, f64c),
            vec![0, 10, 100],
        );
        let params = SolverParams {
            algorithm: Some(Algorithm::Partan),
            eps: 1e-6,
            max_iter: 200,
            ..SolverParams::default()
        };
        let r = solve(&prob, &mut mirror, &params, &mut []).unwrap();
        assert!(r.iterations >= 100, "ran {} iterations", r.iterations);
        let its: Vec<u64> = mirror.checks.iter().map(|c| c.iteration).collect();
        assert_eq!(its, vec![0, 10, 100]);
        for c in &mirror.checks {
            assert!(c.max_abs_g > 0.0);
            // f32 columns against f64 columns: rounding, not a different gradient.
            assert!(c.relative() < 1e-6, "{c:?}");
            assert!(c.relative() > 0.0 || c.iteration == 0, "{c:?}");
        }
        assert_eq!(mirror.reductions(), r.iterations + 1);
    }

    #[test]
    fn identical_backends_agree_exactly() {
        let ds = dataset();
        let prob = Problem::new(&ds, ds.labels.clone(), Kernel::Linear, 1.0).unwrap();
        let c = CpuConfig::default();
        let mut mirror = Mirror::new(cpu_backend(&prob, c), cpu_backend(&prob, c), vec![5]);
        let params = SolverParams {
            algorithm: Some(Algorithm::Swap2),
            max_iter: 50,
            ..SolverParams::default()
        };
        solve(&prob, &mut mirror, &params, &mut []).unwrap();
        assert_eq!(mirror.s_mismatches + mirror.v_mismatches, 0);
        assert_eq!(mirror.checks.len(), 1);
        assert_eq!(mirror.checks[0].max_abs_diff, 0.0);
    }
}
