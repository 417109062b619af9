//! The L2-SVM in its Core-Vector-Machine form (ALGORITHMS.md §1):
//!
//! ```text
//! Q_ij = y_i y_j (k(x_i, x_j) + 1) + δ_ij / C,    min ½ αᵀQα  s.t.  α ≥ 0, Σα = 1
//! ```
//!
//! The problem owns nothing large: it borrows the dataset and keeps the ±1 labels and the
//! squared row norms, so Q_ij can be evaluated exactly (f64) on the host at any time.

use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::kernel::Kernel;

/// A binary L2-SVM problem over a dataset.
#[derive(Debug, Clone)]
pub struct Problem<'a> {
    /// The training rows.
    pub data: &'a Dataset,
    /// Labels in {−1, +1}.
    pub y: Vec<f64>,
    /// Kernel.
    pub kernel: Kernel,
    /// Regularisation C > 0 (enters Q as δ_ij / C).
    pub c: f64,
    /// ‖x_i‖², f64.
    pub norms: Vec<f64>,
}

impl<'a> Problem<'a> {
    /// Builds the problem; `y` must hold ±1 and match the dataset's length.
    pub fn new(data: &'a Dataset, y: Vec<f64>, kernel: Kernel, c: f64) -> Result<Self> {
        kernel.check()?;
        if !(c > 0.0) || c.is_nan() {
            return Err(Error::InvalidParam(format!(
                "C must be a positive number, got {c}"
            )));
        }
        if y.len() != data.len() {
            return Err(Error::InvalidParam(format!(
                "{} labels for {} rows",
                y.len(),
                data.len()
            )));
        }
        if y.iter().any(|&v| v != 1.0 && v != -1.0) {
            return Err(Error::InvalidParam("binary labels must be ±1".into()));
        }
        let norms = (0..data.len()).map(|i| data.row(i).sq_norm()).collect();
        Ok(Problem {
            data,
            y,
            kernel,
            c,
            norms,
        })
    }

    /// Number of points m.
    pub fn len(&self) -> usize {
        self.y.len()
    }

    /// True when there are no points.
    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }

    /// k(x_i, x_j), exact in f64.
    pub fn k(&self, i: usize, j: usize) -> f64 {
        let (a, b) = (self.data.row(i), self.data.row(j));
        self.kernel
            .from_dot(a.dot(&b), self.norms[i], self.norms[j])
    }

    /// Q_ij, exact in f64.
    pub fn q(&self, i: usize, j: usize) -> f64 {
        let v = self.y[i] * self.y[j] * (self.k(i, j) + 1.0);
        if i == j { v + 1.0 / self.c } else { v }
    }

    /// Q_ii.
    pub fn q_diag(&self, i: usize) -> f64 {
        let k = self
            .kernel
            .from_dot(self.norms[i], self.norms[i], self.norms[i]);
        k + 1.0 + 1.0 / self.c
    }

    /// ½ αᵀQα evaluated directly from the kernel, O(|A|²); for tests and small problems.
    pub fn objective_exact(&self, alpha: &crate::active::ActiveSet) -> f64 {
        let mut f = 0.0;
        for (i, ai) in alpha.iter() {
            for (j, aj) in alpha.iter() {
                f += ai * aj * self.q(i, j);
            }
        }
        0.5 * f
    }
}
