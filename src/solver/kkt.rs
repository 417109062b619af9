//! SimpleSVM's linear algebra: the free set's kernel block H_WW and the solves of
//! (H_WW + τI) z = r it needs twice per step (docs/METHODS.md, SimpleSVM; Vishwanathan, Smola
//! and Murty, *SimpleSVM*, ICML 2003, keep the same factor updated as points join and leave W).
//!
//! Two ways to solve: a Cholesky factor L Lᵀ = H_WW + τI updated by one row per added point
//! and by Givens rotations per removed one (O(|W|²) each), or conjugate gradients on the
//! stored block (from `warm` when the caller has one). Solves write into the caller's
//! vector and use the caller's [`BlockScratch`], so the solver loop allocates nothing per step.
//!
//! Regularisation: τ = 1e-10·max(1, max H_ii) on the diagonal keeps rank-degenerate blocks
//! (duplicate points, linear kernels) solvable. A new point whose row is dependent on the
//! members' in floating point leaves a Schur complement h_ii + τ − lᵀl below τ (zero or
//! negative by rounding); its pivot is then set to √τ — the factor of H_WW + τI with that one
//! diagonal raised to what makes the complement τ, a Tikhonov shift of at most τ on that
//! point — and [`Block::raised_pivots`] counts it. A non-finite entry (NaN or ∞ in H) is an
//! error, never a silent clamp.

use crate::error::{Error, Result};

/// The free set's kernel block and its factor.
pub struct Block {
    /// Members of W, in order.
    pub idx: Vec<usize>,
    /// H_WW, full rows.
    pub h: Vec<Vec<f64>>,
    /// Lower-triangular factor of H_WW + τI (row r has r + 1 entries), Cholesky mode only.
    l: Vec<Vec<f64>>,
    tau: f64,
    chol: bool,
    raised: u64,
}

/// Work vectors of [`Block::solve`] (the conjugate gradients' residual, direction and
/// product), kept by the caller across solves.
#[derive(Debug, Default)]
pub struct BlockScratch {
    res: Vec<f64>,
    dir: Vec<f64>,
    prod: Vec<f64>,
}

impl Block {
    /// An empty block with diagonal shift `tau`, Cholesky-factored when `chol`.
    pub fn new(tau: f64, chol: bool) -> Block {
        Block {
            idx: Vec::new(),
            h: Vec::new(),
            l: Vec::new(),
            tau,
            chol,
            raised: 0,
        }
    }

    /// Members |W|.
    pub fn len(&self) -> usize {
        self.idx.len()
    }

    /// True when W is empty.
    pub fn is_empty(&self) -> bool {
        self.idx.is_empty()
    }

    /// Pivots raised to √τ so far (see the module's doc).
    pub fn raised_pivots(&self) -> u64 {
        self.raised
    }

    /// Appends point `i` whose H entries against the current members are `row` and whose
    /// diagonal is `hii`. An entry that is not finite is an error (the block is unchanged).
    pub fn push(&mut self, i: usize, row: &[f64], hii: f64) -> Result<()> {
        let n = self.idx.len();
        if !hii.is_finite() || row[..n].iter().any(|v| !v.is_finite()) {
            return Err(Error::param(format!(
                "SimpleSVM: the kernel row of point {} holds a non-finite value (the kernel \
                 overflows: lower gamma, coef0 or the degree)",
                i + 1
            )));
        }
        for (r, hr) in self.h.iter_mut().enumerate() {
            hr.push(row[r]);
        }
        let mut full = row[..n].to_vec();
        full.push(hii);
        self.h.push(full);
        self.idx.push(i);
        if self.chol {
            // L l = row, pivot = √(hii + τ − lᵀl)
            let mut l = vec![0.0; n + 1];
            for r in 0..n {
                let lr = &self.l[r];
                let s = row[r] - lr[..r].iter().zip(&l[..r]).map(|(a, b)| a * b).sum::<f64>();
                l[r] = s / lr[r];
            }
            let ll: f64 = l[..n].iter().map(|v| v * v).sum();
            let complement = hii + self.tau - ll;
            l[n] = if complement >= self.tau {
                complement.sqrt()
            } else {
                self.raised += 1;
                self.tau.sqrt()
            };
            self.l.push(l);
        }
        Ok(())
    }

    /// Removes the member at position k.
    pub fn remove(&mut self, k: usize) {
        self.idx.remove(k);
        self.h.remove(k);
        for hr in &mut self.h {
            hr.remove(k);
        }
        if self.chol {
            self.l.remove(k);
            let n = self.l.len();
            // Rows k.. now have one entry too many: rotate columns (j, j+1) to restore the
            // triangle (each rotation leaves ρ ≥ 0 on the diagonal).
            for j in k..n {
                let (a, b) = (self.l[j][j], self.l[j][j + 1]);
                let rho = a.hypot(b);
                let (c, s) = if rho == 0.0 {
                    (1.0, 0.0)
                } else {
                    (a / rho, b / rho)
                };
                for r in j..n {
                    let (x, y) = (self.l[r][j], self.l[r][j + 1]);
                    self.l[r][j] = c * x + s * y;
                    self.l[r][j + 1] = -s * x + c * y;
                }
            }
            for (r, lr) in self.l.iter_mut().enumerate() {
                lr.truncate(r + 1);
            }
        }
    }

    /// Solves (H_WW + τI) z = r into `z` (|W| entries); conjugate gradients start from `warm`
    /// when it has |W| entries.
    pub fn solve(&self, r: &[f64], warm: Option<&[f64]>, z: &mut [f64], ws: &mut BlockScratch) {
        let n = self.len();
        if self.chol {
            for i in 0..n {
                let li = &self.l[i];
                let s = r[i] - li[..i].iter().zip(&z[..i]).map(|(a, b)| a * b).sum::<f64>();
                z[i] = s / li[i];
            }
            for i in (0..n).rev() {
                let mut s = z[i];
                #[allow(clippy::needless_range_loop)] // back substitution reads L by column
                for rr in i + 1..n {
                    s -= self.l[rr][i] * z[rr];
                }
                z[i] = s / self.l[i][i];
            }
        } else {
            self.cg(r, warm, &mut z[..n], ws);
        }
    }

    /// out = (H_WW + τI) x.
    fn matvec(&self, x: &[f64], out: &mut [f64]) {
        for (o, hr) in out.iter_mut().zip(&self.h) {
            *o = hr.iter().zip(x).map(|(a, b)| a * b).sum::<f64>();
        }
        for (o, xi) in out.iter_mut().zip(x) {
            *o += self.tau * xi;
        }
    }

    fn cg(&self, r: &[f64], warm: Option<&[f64]>, x: &mut [f64], ws: &mut BlockScratch) {
        let n = self.len();
        match warm {
            Some(w) if w.len() == n => x.copy_from_slice(w),
            _ => x.fill(0.0),
        }
        let BlockScratch { res, dir, prod } = ws;
        for v in [&mut *res, &mut *dir, &mut *prod] {
            v.clear();
            v.resize(n, 0.0);
        }
        self.matvec(x, prod);
        for ((e, &ri), &ax) in res.iter_mut().zip(r).zip(prod.iter()) {
            *e = ri - ax;
        }
        dir.copy_from_slice(res);
        let mut rr: f64 = res.iter().map(|v| v * v).sum();
        let tol = 1e-24 * r.iter().map(|v| v * v).sum::<f64>().max(1e-300);
        for _ in 0..(4 * n).max(50) {
            if rr <= tol {
                break;
            }
            self.matvec(dir, prod);
            let pap: f64 = dir.iter().zip(prod.iter()).map(|(a, b)| a * b).sum();
            if pap <= 0.0 {
                break;
            }
            let a = rr / pap;
            for ((xi, ei), (&pi, &api)) in x
                .iter_mut()
                .zip(res.iter_mut())
                .zip(dir.iter().zip(prod.iter()))
            {
                *xi += a * pi;
                *ei -= a * api;
            }
            let rr2: f64 = res.iter().map(|v| v * v).sum();
            let beta = rr2 / rr;
            rr = rr2;
            for (pi, &ei) in dir.iter_mut().zip(res.iter()) {
                *pi = ei + beta * *pi;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A random symmetric positive definite matrix (Gram matrix of random vectors plus I).
    fn spd(n: usize, seed: u64) -> Vec<Vec<f64>> {
        let mut rng = crate::rng::SplitMix64::new(seed);
        let v: Vec<Vec<f64>> = (0..n)
            .map(|_| (0..n).map(|_| rng.next_f64() - 0.5).collect())
            .collect();
        (0..n)
            .map(|i| {
                (0..n)
                    .map(|j| {
                        let dot: f64 = v[i].iter().zip(&v[j]).map(|(a, b)| a * b).sum();
                        dot + if i == j { 1.0 } else { 0.0 }
                    })
                    .collect()
            })
            .collect()
    }

    fn build(h: &[Vec<f64>], members: &[usize], chol: bool, tau: f64) -> Block {
        let mut b = Block::new(tau, chol);
        for (k, &i) in members.iter().enumerate() {
            let row: Vec<f64> = members[..k].iter().map(|&j| h[i][j]).collect();
            b.push(i, &row, h[i][i]).unwrap();
        }
        b
    }

    /// ‖(H_WW + τI) z − r‖∞ for the block's members.
    fn residual(h: &[Vec<f64>], b: &Block, z: &[f64], r: &[f64]) -> f64 {
        let n = b.len();
        (0..n)
            .map(|i| {
                let hz: f64 = (0..n).map(|j| h[b.idx[i]][b.idx[j]] * z[j]).sum();
                (hz + b.tau * z[i] - r[i]).abs()
            })
            .fold(0.0, f64::max)
    }

    /// Both solvers give (H + τI)⁻¹ r, also after members leave (the Givens downdate) and
    /// join again; one scratch serves every solve.
    #[test]
    fn solves_match_the_system_through_pushes_and_removals() {
        let h = spd(12, 4);
        let mut ws = BlockScratch::default();
        for chol in [true, false] {
            let mut b = build(&h, &[3, 0, 7, 5, 11, 2, 9], chol, 1e-10);
            for step in 0..4 {
                let n = b.len();
                let r: Vec<f64> = (0..n)
                    .map(|i| (i as f64 * 0.7 + step as f64).sin())
                    .collect();
                let mut z = vec![0.0; n];
                b.solve(&r, None, &mut z, &mut ws);
                assert!(residual(&h, &b, &z, &r) < 1e-10, "chol {chol} step {step}");
                b.remove((step * 3) % n);
                let join = [1, 4, 6, 8][step];
                let row: Vec<f64> = b.idx.iter().map(|&j| h[join][j]).collect();
                b.push(join, &row, h[join][join]).unwrap();
            }
            assert_eq!(b.raised_pivots(), 0);
        }
    }

    /// A point equal to a member (dependent row) raises its pivot to √τ, says so, and the
    /// solve stays finite and satisfies the regularised system where it is well posed.
    #[test]
    fn a_dependent_row_raises_its_pivot_and_is_counted() {
        let mut h = spd(5, 9);
        // Point 4 duplicates point 1.
        h[4] = h[1].clone();
        for row in h.iter_mut() {
            row[4] = row[1];
        }
        let tau = 1e-10;
        let b = build(&h, &[0, 1, 2, 4], true, tau);
        // Rounding decides whether the complement lands exactly on τ or just below it.
        assert!(b.raised_pivots() <= 1);
        let mut z = vec![0.0; 4];
        b.solve(
            &[1.0, 0.5, -0.25, 0.5],
            None,
            &mut z,
            &mut BlockScratch::default(),
        );
        assert!(z.iter().all(|v| v.is_finite()), "{z:?}");
        // Equal right-hand sides on the two copies split the weight evenly.
        assert!((z[1] - z[3]).abs() < 1e-6 * z[1].abs().max(1.0), "{z:?}");
        // A row pushed below the shift: complement hii + τ − lᵀl < τ.
        let mut c = Block::new(1e-3, true);
        c.push(0, &[], 1.0).unwrap();
        c.push(1, &[1.0], 0.5).unwrap();
        assert_eq!(c.raised_pivots(), 1);
    }

    #[test]
    fn non_finite_entries_are_refused() {
        let mut b = Block::new(1e-10, true);
        b.push(0, &[], 1.0).unwrap();
        let e = b.push(7, &[f64::NAN], 1.0).unwrap_err().to_string();
        assert!(e.contains("point 8") && e.contains("non-finite"), "{e}");
        assert_eq!(b.len(), 1);
        assert!(b.push(3, &[0.5], f64::INFINITY).is_err());
    }
}
