//! Prediction on the device: the decision values of every test row, one class pair at a time.
//!
//! The test rows are uploaded as the data of a [`GpuBackend`] (chunked like training data),
//! with every label +1; each support vector of the pair is then a query row whose column
//! k(x_i, sv) the column shader computes (without Q's +1) and the update shader accumulates
//! with the SV's coefficient: g_i = Σ_sv c_sv k(x_i, sv). The decision value is g_i − ρ, and
//! LIBSVM's vote picks the label on the host ([`Model::vote`](crate::model::Model::vote)).

use super::Model;
use crate::backend::Backend;
use crate::backend::gpu::{GpuBackend, GpuConfig, GpuContext, GpuData};
use crate::data::{Dataset, Row};
use crate::error::Result;
use crate::problem::Problem;

/// Copies `ds` with `d` feature columns (d ≥ its own), so the kernel sees every SV feature.
fn widen(ds: &Dataset, d: usize) -> Dataset {
    let (mut indptr, mut indices, mut values) = (vec![0usize], Vec::new(), Vec::new());
    for i in 0..ds.len() {
        match ds.row(i) {
            Row::Dense(v) => {
                for (f, &x) in v.iter().enumerate() {
                    if x != 0.0 {
                        indices.push(f as u32);
                        values.push(x);
                    }
                }
            }
            Row::Sparse(ix, vs) => {
                indices.extend_from_slice(ix);
                values.extend_from_slice(vs);
            }
        }
        indptr.push(indices.len());
    }
    Dataset::from_csr(d, indptr, indices, values, ds.labels.clone())
}

/// Predicted labels and, per row, the k(k−1)/2 decision values, computed on `ctx`
/// (`cfg.precision` sets the precision of the accumulation). With `shared`, `ds` is rows of
/// data already on the device (a held-out fold): they are bound, not uploaded.
pub fn predict(
    model: &Model,
    ds: &Dataset,
    ctx: &GpuContext,
    cfg: GpuConfig,
    shared: Option<(&std::sync::Arc<GpuData>, Option<&[usize]>)>,
) -> Result<(Vec<f64>, Vec<Vec<f64>>)> {
    let n = ds.len();
    if n == 0 {
        return Ok((Vec::new(), Vec::new()));
    }
    let wide;
    let data = if model.n_features() > ds.n_features() {
        wide = widen(ds, model.n_features());
        &wide
    } else {
        ds
    };
    let prob = Problem::new(data, vec![1.0; n], model.kernel, 1.0)?;
    let cfg = GpuConfig {
        // Two slots: the two columns of one accumulation pass.
        cache_bytes: 2 * n * 8 + 4096,
        ..cfg
    };
    // A widened copy is not the shared data's layout: upload it.
    let shared = if std::ptr::eq(data, ds) { shared } else { None };
    let mut be = GpuBackend::with_data(&prob, ctx, cfg, shared)?;
    let k = model.n_classes();
    let npairs = k * (k - 1) / 2;
    let starts = model.starts();
    let sv_norms: Vec<f64> = (0..model.total_sv())
        .map(|j| model.sv.row(j).sq_norm())
        .collect();
    let all: Vec<usize> = (0..n).collect();
    let mut g = vec![0.0; n];
    let mut dec = vec![vec![0.0; npairs]; n];
    let mut p = 0;
    for a in 0..k {
        for b in a + 1..k {
            be.clear_gradient()?;
            let mut queries = Vec::with_capacity(model.nr_sv[a] + model.nr_sv[b]);
            for (class, row) in [(a, b - 1), (b, a)] {
                let (from, n) = (starts[class], model.nr_sv[class]);
                let coef = &model.sv_coef[row][from..from + n];
                for (s, (&norm, &c)) in (from..).zip(sv_norms[from..from + n].iter().zip(coef)) {
                    if c != 0.0 {
                        queries.push((model.sv.row(s), norm, c));
                    }
                }
            }
            be.accumulate_queries(&queries)?;
            be.gather(&all, &mut g)?;
            for (r, &v) in g.iter().enumerate() {
                dec[r][p] = v - model.rho[p];
            }
            p += 1;
        }
    }
    let mut votes = vec![0u32; k];
    let labels = dec.iter().map(|d| model.vote(d, &mut votes)).collect();
    Ok((labels, dec))
}
