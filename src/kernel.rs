//! Kernels: RBF `exp(−γ‖x−z‖²)`, polynomial `(γ⟨x,z⟩ + coef0)^degree`, linear `⟨x,z⟩`,
//! sigmoid `tanh(γ⟨x,z⟩ + coef0)` (LIBSVM's `-t 3`; not positive semi-definite in general),
//! and the papers' γ heuristic (γ = 1 / mean ‖x_i − x_j‖² over a seeded sample of pairs).

use crate::data::{Dataset, Row};
use crate::rng::SplitMix64;

/// A kernel function, with LIBSVM's parameterisation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kernel {
    /// `⟨x,z⟩`
    Linear,
    /// `exp(−γ‖x−z‖²)`
    Rbf {
        /// γ > 0
        gamma: f64,
    },
    /// `(γ⟨x,z⟩ + coef0)^degree`
    Poly {
        /// γ > 0
        gamma: f64,
        /// Additive constant.
        coef0: f64,
        /// Degree ≥ 1.
        degree: u32,
    },
    /// `tanh(γ⟨x,z⟩ + coef0)`: not a Mercer kernel for most (γ, coef0), so Q may be
    /// indefinite; see docs/GUIDE.md ("Training") for what the solvers then guarantee.
    Sigmoid {
        /// γ > 0
        gamma: f64,
        /// Additive constant.
        coef0: f64,
    },
}

impl Kernel {
    /// k(x,z) from ⟨x,z⟩ and the squared norms ‖x‖², ‖z‖².
    #[inline(always)]
    pub fn from_dot(&self, dot: f64, nx: f64, nz: f64) -> f64 {
        match *self {
            Kernel::Linear => dot,
            Kernel::Rbf { gamma } => (-gamma * (nx + nz - 2.0 * dot).max(0.0)).exp(),
            Kernel::Poly {
                gamma,
                coef0,
                degree,
            } => (gamma * dot + coef0).powi(degree as i32),
            Kernel::Sigmoid { gamma, coef0 } => (gamma * dot + coef0).tanh(),
        }
    }

    /// k(a,b) evaluated exactly in f64 from the f32 rows.
    pub fn eval(&self, a: &Row<'_>, b: &Row<'_>) -> f64 {
        self.from_dot(a.dot(b), a.sq_norm(), b.sq_norm())
    }

    /// γ, for the kernels that have one (all but the linear).
    pub fn gamma(&self) -> Option<f64> {
        match *self {
            Kernel::Linear => None,
            Kernel::Rbf { gamma } | Kernel::Poly { gamma, .. } | Kernel::Sigmoid { gamma, .. } => {
                Some(gamma)
            }
        }
    }

    /// LIBSVM's `kernel_type` name.
    pub fn libsvm_name(&self) -> &'static str {
        match self {
            Kernel::Linear => "linear",
            Kernel::Rbf { .. } => "rbf",
            Kernel::Poly { .. } => "polynomial",
            Kernel::Sigmoid { .. } => "sigmoid",
        }
    }

    /// Rejects parameters no kernel can use.
    pub fn check(&self) -> crate::Result<()> {
        use crate::error::ParamError;
        match *self {
            Kernel::Linear => {}
            Kernel::Rbf { gamma } => ParamError::positive("gamma", gamma)?,
            Kernel::Poly {
                gamma,
                coef0,
                degree,
            } => {
                ParamError::positive("gamma", gamma)?;
                if degree == 0 {
                    return Err(crate::Error::param("degree must be at least 1".into()));
                }
                ParamError::finite("coef0", coef0)?;
            }
            Kernel::Sigmoid { gamma, coef0 } => {
                ParamError::positive("gamma", gamma)?;
                ParamError::finite("coef0", coef0)?;
            }
        }
        Ok(())
    }
}

/// The papers' default γ: 1 / mean squared distance over `pairs` random pairs (i ≠ j).
/// Falls back to 1/d when all sampled pairs coincide.
pub fn gamma_heuristic(ds: &Dataset, pairs: usize, seed: u64) -> f64 {
    let m = ds.len();
    let d = ds.n_features().max(1);
    if m < 2 {
        return 1.0 / d as f64;
    }
    let idx = heuristic_pairs(m, pairs, seed);
    gamma_from_pairs(idx.iter().map(|&(i, j)| (ds.row(i), ds.row(j))), pairs, d)
}

/// The `pairs` random pairs of distinct rows (of m ≥ 2) [`gamma_heuristic`] averages over.
pub fn heuristic_pairs(m: usize, pairs: usize, seed: u64) -> Vec<(usize, usize)> {
    let mut rng = SplitMix64::new(seed ^ 0x6A09_E667_F3BC_C909);
    (0..pairs)
        .map(|_| {
            let i = rng.below(m);
            let mut j = rng.below(m - 1);
            if j >= i {
                j += 1;
            }
            (i, j)
        })
        .collect()
}

/// 1 / the mean squared distance of the row pairs (`pairs` of them), or 1/d when that is not a
/// positive number.
pub fn gamma_from_pairs<'a>(
    rows: impl Iterator<Item = (crate::data::Row<'a>, crate::data::Row<'a>)>,
    pairs: usize,
    d: usize,
) -> f64 {
    let mut sum = 0.0;
    for (a, b) in rows {
        sum += (a.sq_norm() + b.sq_norm() - 2.0 * a.dot(&b)).max(0.0);
    }
    let mean = sum / pairs as f64;
    if mean > 0.0 && mean.is_finite() {
        1.0 / mean
    } else {
        1.0 / d as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_match_definitions() {
        let a = [1.0f32, 2.0, 0.0];
        let b = [0.5f32, -1.0, 3.0];
        let (ra, rb) = (Row::Dense(&a), Row::Dense(&b));
        let dot = 0.5 - 2.0;
        let dist2: f64 = 0.25 + 9.0 + 9.0;
        assert!((Kernel::Linear.eval(&ra, &rb) - dot).abs() < 1e-12);
        let k = Kernel::Rbf { gamma: 0.1 }.eval(&ra, &rb);
        assert!((k - (-0.1 * dist2).exp()).abs() < 1e-12);
        let p = Kernel::Poly {
            gamma: 0.5,
            coef0: 1.0,
            degree: 3,
        }
        .eval(&ra, &rb);
        assert!((p - (0.5 * dot + 1.0f64).powi(3)).abs() < 1e-12);
        let s = Kernel::Sigmoid {
            gamma: 0.5,
            coef0: -0.25,
        }
        .eval(&ra, &rb);
        assert!((s - (0.5 * dot - 0.25f64).tanh()).abs() < 1e-12);
        assert_eq!(
            Kernel::Sigmoid {
                gamma: 1.0,
                coef0: 0.0
            }
            .libsvm_name(),
            "sigmoid"
        );
        // Sparse and dense rows give the same value.
        let ia = [0u32, 1];
        let va = [1.0f32, 2.0];
        let sa = Row::Sparse(&ia, &va);
        assert!((Kernel::Rbf { gamma: 0.1 }.eval(&sa, &rb) - k).abs() < 1e-12);
    }

    #[test]
    fn rejects_bad_parameters() {
        assert!(Kernel::Rbf { gamma: 0.0 }.check().is_err());
        assert!(Kernel::Rbf { gamma: f64::NAN }.check().is_err());
        assert!(
            Kernel::Sigmoid {
                gamma: -1.0,
                coef0: 0.0
            }
            .check()
            .is_err()
        );
        assert!(
            Kernel::Sigmoid {
                gamma: 1.0,
                coef0: f64::INFINITY
            }
            .check()
            .is_err()
        );
        assert!(
            Kernel::Poly {
                gamma: 1.0,
                coef0: 0.0,
                degree: 0
            }
            .check()
            .is_err()
        );
        assert!(Kernel::Rbf { gamma: 0.5 }.check().is_ok());
    }
}
