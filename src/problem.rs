//! The L2-SVM in its Core-Vector-Machine form (docs/METHODS.md):
//!
//! ```text
//! Q_ij = y_i y_j (k(x_i, x_j) + 1) + δ_ij / C,    min ½ αᵀQα  s.t.  α ≥ 0, Σα = 1
//! ```
//!
//! The problem owns nothing large: it borrows the dataset and keeps the ±1 labels and the
//! squared row norms, so Q_ij can be evaluated exactly (f64) on the host at any time.

use crate::data::Dataset;
use crate::error::{Error, ParamError, Result};
use crate::kernel::Kernel;
use std::sync::OnceLock;

/// The rows of a dataset with repeats, once each: `rows` are the first occurrences in order,
/// `rep[i]` the index in `rows` of row i's features.
#[derive(Debug, Clone, PartialEq)]
pub struct DistinctRows {
    /// First occurrences, ascending.
    pub rows: Vec<usize>,
    /// For each row, its distinct row.
    pub rep: Vec<u32>,
}

/// Refuses a polynomial kernel whose entries leave the f32 range of the kernel columns: every
/// |γ⟨x_i, x_j⟩ + coef0| is at most γ·max_i ‖x_i‖² + |coef0| (Cauchy–Schwarz), with equality on
/// the diagonal when coef0 ≥ 0, so that power bounds every entry and is reached there.
fn check_poly_range(kernel: Kernel, norms: &[f64]) -> Result<()> {
    let Kernel::Poly {
        gamma,
        coef0,
        degree,
    } = kernel
    else {
        return Ok(());
    };
    let Some((i, &n)) = norms.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)) else {
        return Ok(());
    };
    let top = (gamma * n + coef0.abs()).powi(degree as i32);
    if top <= f32::MAX as f64 {
        return Ok(());
    }
    Err(Error::param(format!(
        "the polynomial kernel overflows: (gamma·‖x‖² + |coef0|)^degree = ({gamma}·{n} + {})^{degree} \
         = {top:.3e} at row {}, beyond the f32 range of kernel columns (3.4e38); lower gamma or \
         degree, or scale the data",
        coef0.abs(),
        i + 1
    )))
}

/// The smallest cost C_i of a point (C times its class's and its row's weights): the L2-SVM
/// adds 1/C_i to the kernel's diagonal, and f32 kernel columns (3.4e38 at most) hold it and
/// the sums of such entries. LIBSVM takes any C > 0; a C this small is a model of nothing.
pub const MIN_C: f64 = 1e-30;

/// The error for a cost C_i = `cost` below [`MIN_C`], naming `what` made it (C, or C with a
/// weight).
fn below_min_c(what: &str, cost: f64) -> Error {
    Error::param(format!(
        "{what} is {cost:e}, below the smallest cost {MIN_C:e}: the L2-SVM adds 1/C to the \
         kernel's diagonal, which overflows the f32 kernel columns below it"
    ))
}

/// `Ok` when every weight in `s` is a positive, finite number; else the first that is not.
pub fn check_row_weights(name: &'static str, s: &[f64]) -> Result<()> {
    match s
        .iter()
        .enumerate()
        .find(|&(_, &w)| !(w > 0.0) || !w.is_finite())
    {
        Some((i, &value)) => Err(ParamError::RowWeight {
            name,
            row: i + 1,
            value,
        }
        .into()),
        None => Ok(()),
    }
}

/// A binary L2-SVM problem over a dataset.
#[derive(Debug, Clone)]
pub struct Problem<'a> {
    /// The training rows.
    pub data: &'a Dataset,
    /// Labels in {−1, +1}.
    pub y: Vec<f64>,
    /// Kernel.
    pub kernel: Kernel,
    /// Regularisation C > 0 (enters Q as δ_ij / C_i).
    pub c: f64,
    /// Class weights (w₊, w₋): row i's C_i = w_{y_i}·C, as LIBSVM's `-wi` (1, 1 by default;
    /// [`Problem::with_class_weights`]).
    pub weights: (f64, f64),
    /// 1/C_i for y_i = +1 and y_i = −1.
    inv_c: (f64, f64),
    /// Per-row weights s_i (sample weights; [`Problem::with_row_weights`]) and the 1/C_i
    /// they give each row (C_i = w_{y_i}·s_i·C); None: every s_i = 1.
    rows: Option<RowWeights>,
    /// ‖x_i‖², f64.
    pub norms: Vec<f64>,
    /// LIBSVM's C for a C-SVM problem ([`Problem::c_svm`]), whose backend form has C = ∞;
    /// None for the L2-SVM.
    pub box_c: Option<f64>,
    /// The distinct rows, found on first use ([`Problem::distinct_rows`]).
    distinct: OnceLock<Option<DistinctRows>>,
    /// The statistics the CPU backend lays the rows out by, where they are those of a larger
    /// set (a rank's rows: the whole set's); None: the rows' own.
    layout: Option<std::sync::Arc<crate::data::LayoutStats>>,
}

impl<'a> Problem<'a> {
    /// Builds the problem; `y` must hold ±1 and match the dataset's length.
    pub fn new(data: &'a Dataset, y: Vec<f64>, kernel: Kernel, c: f64) -> Result<Self> {
        Self::with_norms(data, y, kernel, c, None)
    }

    /// [`new`](Self::new) with the rows' squared norms ‖x_i‖² given where the caller has them
    /// (computed as [`Row::sq_norm`](crate::data::Row::sq_norm) computes them: the same
    /// numbers `new` would compute).
    pub fn with_norms(
        data: &'a Dataset,
        y: Vec<f64>,
        kernel: Kernel,
        c: f64,
        norms: Option<Vec<f64>>,
    ) -> Result<Self> {
        kernel.check()?;
        if data.n_features() > crate::util::max_features() {
            return Err(Error::param(format!(
                "the data have {} feature indices: {}",
                data.n_features(),
                crate::util::too_many_features(data.n_features())
            )));
        }
        if !(c > 0.0) || c.is_nan() {
            // C = ∞ is allowed: the hard-margin form, and the C-SVM's backend form.
            return Err(ParamError::NotPositive {
                name: "C",
                value: c,
            }
            .into());
        }
        if c < MIN_C {
            return Err(below_min_c("C", c));
        }
        if y.len() != data.len() {
            return Err(ParamError::Length {
                what: "labels",
                got: y.len(),
                rows: data.len(),
            }
            .into());
        }
        if y.iter().any(|&v| v != 1.0 && v != -1.0) {
            return Err(Error::param("binary labels must be ±1".into()));
        }
        let norms = match norms {
            Some(n) if n.len() == data.len() => n,
            Some(n) => {
                return Err(ParamError::Length {
                    what: "row norms",
                    got: n.len(),
                    rows: data.len(),
                }
                .into());
            }
            None => (0..data.len()).map(|i| data.row(i).sq_norm()).collect(),
        };
        check_poly_range(kernel, &norms)?;
        Ok(Problem {
            data,
            y,
            kernel,
            c,
            weights: (1.0, 1.0),
            inv_c: (1.0 / c, 1.0 / c),
            rows: None,
            norms,
            box_c: None,
            distinct: OnceLock::new(),
            layout: None,
        })
    }

    /// LIBSVM's C-SVM dual with box 0 ≤ α_i ≤ C_i (what SimpleSVM solves): carried on the
    /// backends as the L2 form with C = ∞, whose Q = H + yyᵀ gives g = Hα at every α with
    /// yᵀα = 0 (see [`crate::solver::simple_svm`]); C is kept in [`box_c`](Self::box_c) and
    /// weighted per row as the L2 form's C_i.
    pub fn c_svm(data: &'a Dataset, y: Vec<f64>, kernel: Kernel, c: f64) -> Result<Self> {
        Self::c_svm_with_norms(data, y, kernel, c, None)
    }

    /// [`c_svm`](Self::c_svm) with the rows' squared norms given, as for
    /// [`with_norms`](Self::with_norms).
    pub fn c_svm_with_norms(
        data: &'a Dataset,
        y: Vec<f64>,
        kernel: Kernel,
        c: f64,
        norms: Option<Vec<f64>>,
    ) -> Result<Self> {
        ParamError::positive("C", c)?;
        let mut p = Problem::with_norms(data, y, kernel, f64::INFINITY, norms)?;
        p.box_c = Some(c);
        Ok(p)
    }

    /// The problem with class weights: C_i = w₊·C on the +1 rows and w₋·C on the −1 rows, so
    /// Q_ii gets 1/C_i (the L2-SVM with per-class costs, as LIBSVM's `-wi` weighs C).
    pub fn with_class_weights(mut self, w_pos: f64, w_neg: f64) -> Result<Self> {
        for w in [w_pos, w_neg] {
            if !(w > 0.0) || w.is_nan() {
                return Err(ParamError::NotPositive {
                    name: "a class weight",
                    value: w,
                }
                .into());
            }
        }
        self.weights = (w_pos, w_neg);
        self.inv_c = (1.0 / (w_pos * self.c), 1.0 / (w_neg * self.c));
        let cheapest = (w_pos * self.c).min(w_neg * self.c);
        if cheapest < MIN_C {
            return Err(below_min_c("C times a class weight", cheapest));
        }
        if let Some(r) = self.rows.take() {
            return self.with_row_weights(r.s);
        }
        Ok(self)
    }

    /// The problem with per-row weights (scikit-learn's `sample_weight`): row i's cost is
    /// C_i = w_{y_i}·s_i·C, so Q_ii gets 1/C_i. In the L2-SVM's primal, C_i ξ_i²/2 per row,
    /// a weight of 2 is the row given twice. Weights must be positive (leave rows of weight 0
    /// out of the data); the GPU backends take per-class costs only and refuse them.
    pub fn with_row_weights(mut self, s: Vec<f64>) -> Result<Self> {
        if s.len() != self.len() {
            return Err(ParamError::Length {
                what: "row weights",
                got: s.len(),
                rows: self.len(),
            }
            .into());
        }
        check_row_weights("row weights", &s)?;
        let inv_c: Vec<f64> = s
            .iter()
            .zip(&self.y)
            .map(|(&w, &y)| if y > 0.0 { self.inv_c.0 } else { self.inv_c.1 } / w)
            .collect();
        self.rows = Some(RowWeights { s, inv_c });
        let cheapest = (0..self.len())
            .map(|i| (i, self.c * self.cost_factor(i)))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((i, cost)) = cheapest.filter(|&(_, cost)| cost < MIN_C) {
            let w = self.rows.as_ref().map_or(1.0, |r| r.s[i]);
            let what = format!("C times row {}'s weight {w:e} (and its class's)", i + 1);
            return Err(below_min_c(&what, cost));
        }
        Ok(self)
    }

    /// The problem on the rows `rows` of this one, whose data `sub` holds (`data.subset(rows)`):
    /// the same kernel, C, class weights and row weights.
    pub fn restricted<'b>(&self, sub: &'b Dataset, rows: &[usize]) -> Result<Problem<'b>> {
        let y: Vec<f64> = rows.iter().map(|&i| self.y[i]).collect();
        let mut p = Problem::new(sub, y, self.kernel, self.c)?
            .with_class_weights(self.weights.0, self.weights.1)?;
        if let Some(w) = self.row_weights_of(rows) {
            p = p.with_row_weights(w)?;
        }
        Ok(p)
    }

    /// The row weights s_i of the rows `rows` (None without row weights), for a problem on
    /// those rows.
    pub fn row_weights_of(&self, rows: &[usize]) -> Option<Vec<f64>> {
        self.rows
            .as_ref()
            .map(|r| rows.iter().map(|&i| r.s[i]).collect())
    }

    /// True when rows carry weights of their own (not only per class).
    pub fn has_row_weights(&self) -> bool {
        self.rows.is_some()
    }

    /// Row i's own weight s_i (1 without per-row weights).
    pub fn row_weight(&self, i: usize) -> f64 {
        self.rows.as_ref().map_or(1.0, |r| r.s[i])
    }

    /// C_i / C: row i's class weight times its row weight.
    pub fn cost_factor(&self, i: usize) -> f64 {
        let class = if self.y[i] > 0.0 {
            self.weights.0
        } else {
            self.weights.1
        };
        class * self.rows.as_ref().map_or(1.0, |r| r.s[i])
    }

    /// 1/C_i: the diagonal term of row i (1/C without class or row weights).
    #[inline]
    pub fn inv_c(&self, i: usize) -> f64 {
        if let Some(r) = &self.rows {
            return r.inv_c[i];
        }
        if self.y[i] > 0.0 {
            self.inv_c.0
        } else {
            self.inv_c.1
        }
    }

    /// 1/C_i for the +1 rows and the −1 rows.
    pub fn inv_c_by_class(&self) -> (f64, f64) {
        self.inv_c
    }

    /// This problem with its rows never treated as repeats ([`distinct_rows`](Self::distinct_rows)
    /// is None).
    pub fn without_distinct_rows(self) -> Self {
        self.with_distinct_rows(false)
    }

    /// This problem with its rows laid out on the CPU as a set with the statistics `whole`
    /// would be (a rank's rows as one process lays out every rank's), so that its dot
    /// products are summed as one process sums them.
    pub(crate) fn with_layout_stats(self, whole: crate::data::LayoutStats) -> Self {
        Problem {
            layout: Some(std::sync::Arc::new(whole)),
            ..self
        }
    }

    /// The statistics [`Problem::with_layout_stats`] gave, if any.
    pub(crate) fn layout_stats(&self) -> Option<&crate::data::LayoutStats> {
        self.layout.as_deref()
    }

    /// This problem with its repeated rows grouped (`group`: whatever their number) or never:
    /// a decision taken elsewhere — a distributed run groups each rank's rows when one process
    /// would group all of them ([`groups_rows`]), so that every rank computes as it does.
    pub fn with_distinct_rows(self, group: bool) -> Self {
        let distinct = OnceLock::new();
        let _ = distinct.set(if group {
            find_distinct_rows(self.data, None)
        } else {
            None
        });
        Problem { distinct, ..self }
    }

    /// The rows' distinct feature vectors when repeats are many enough to pay for working per
    /// distinct row (columns, exact gradients); found once (a hashing pass) and shared by
    /// everything that uses this problem.
    pub fn distinct_rows(&self) -> Option<&DistinctRows> {
        self.distinct
            .get_or_init(|| {
                let m = self.data.len();
                if m < DEDUP_MIN_ROWS {
                    return None;
                }
                find_distinct_rows(self.data, Some((DEDUP_BELOW * m as f64) as usize))
            })
            .as_ref()
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
        if i == j { v + self.inv_c(i) } else { v }
    }

    /// Q_ii.
    pub fn q_diag(&self, i: usize) -> f64 {
        let k = match self.kernel {
            // exp(−γ·max(n + n − 2n, 0)) is exactly 1 whatever the norm n: the value
            // `from_dot` gives, without the exponential.
            crate::kernel::Kernel::Rbf { gamma } if gamma.is_finite() => 1.0,
            kernel => kernel.from_dot(self.norms[i], self.norms[i], self.norms[i]),
        };
        k + 1.0 + self.inv_c(i)
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

/// Per-row weights and the diagonal they give.
#[derive(Debug, Clone)]
struct RowWeights {
    /// s_i.
    s: Vec<f64>,
    /// 1/C_i = 1/(w_{y_i}·s_i·C).
    inv_c: Vec<f64>,
}

/// Rows are deduplicated when at most this fraction of them is distinct: the update then
/// reads each row's entry through an index, which costs about what a fifth fewer rows saves
/// (a9a, 80 % distinct, trains slightly slower deduplicated; w8a, 70 %, the same either way;
/// KDD99-binary, 30 %, markedly faster).
pub const DEDUP_BELOW: f64 = 0.75;

/// Smaller problems are not deduplicated (two of the CPU backend's parallel chunks).
pub const DEDUP_MIN_ROWS: usize = 4096;

/// One process groups the repeated rows of m rows of which `distinct` are distinct
/// ([`Problem::distinct_rows`]): m ≥ [`DEDUP_MIN_ROWS`] and at most [`DEDUP_BELOW`] of them
/// distinct.
pub fn groups_rows(m: usize, distinct: usize) -> bool {
    m >= DEDUP_MIN_ROWS && distinct <= (DEDUP_BELOW * m as f64) as usize
}

/// The hash rows are grouped by (FNV-1a over the values' bits, and the indices of a sparse
/// row): equal rows of one layout hash alike.
pub fn row_hash(r: crate::data::Row<'_>) -> u64 {
    use crate::data::Row;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut mix = |x: u32| {
        h = (h ^ x as u64).wrapping_mul(0x0000_0100_0000_01b3);
    };
    match r {
        Row::Dense(v) => v.iter().for_each(|x| mix(x.to_bits())),
        Row::Sparse(ix, v) => {
            for (&i, x) in ix.iter().zip(v) {
                mix(i);
                mix(x.to_bits());
            }
        }
    }
    h
}

/// The distinct rows of `ds` (first occurrences, in order) and each row's distinct index,
/// rows equal value for value.
pub fn distinct_rows_of(ds: &Dataset) -> DistinctRows {
    find_distinct_rows(ds, None).expect("no limit")
}

/// The distinct rows of `ds` (first occurrences, in order) and each row's distinct index;
/// None when more than `limit` of them are distinct (see [`DEDUP_BELOW`]); rows equal value
/// for value.
fn find_distinct_rows(ds: &Dataset, limit: Option<usize>) -> Option<DistinctRows> {
    use crate::data::Row;
    let m = ds.len();
    let hash = row_hash;
    let same = |a: Row<'_>, b: Row<'_>| match (a, b) {
        (Row::Dense(x), Row::Dense(y)) => x == y,
        (Row::Sparse(ia, va), Row::Sparse(ib, vb)) => ia == ib && va == vb,
        _ => false,
    };
    // hash → first distinct row with it; `chain` links distinct rows of equal hash.
    let mut first: rustc_hash::FxHashMap<u64, u32> =
        rustc_hash::FxHashMap::with_capacity_and_hasher(m / 2, Default::default());
    let mut chain: Vec<u32> = Vec::new();
    let mut rows: Vec<usize> = Vec::new();
    let mut rep = vec![0u32; m];
    let limit = limit.unwrap_or(usize::MAX);
    #[allow(clippy::needless_range_loop)] // row i of the data and of rep together
    for i in 0..m {
        let row = ds.row(i);
        let h = hash(row);
        let found = match first.get(&h) {
            None => {
                first.insert(h, rows.len() as u32);
                None
            }
            Some(&k0) => {
                let mut k = k0;
                loop {
                    if same(ds.row(rows[k as usize]), row) {
                        break Some(k);
                    }
                    if chain[k as usize] == u32::MAX {
                        chain[k as usize] = rows.len() as u32;
                        break None;
                    }
                    k = chain[k as usize];
                }
            }
        };
        rep[i] = match found {
            Some(k) => k,
            None => {
                chain.push(u32::MAX);
                rows.push(i);
                if rows.len() > limit {
                    return None;
                }
                (rows.len() - 1) as u32
            }
        };
    }
    Some(DistinctRows { rows, rep })
}
