//! Probability outputs as LIBSVM computes them (Chang and Lin, "LIBSVM: a library for support
//! vector machines", §8; `svm.cpp`), so that a model carrying our `probA`/`probB` gives the same
//! probabilities in LIBSVM's `svm_predict_probability` as here, from the same decision values.
//!
//! * **Platt's sigmoid** per class pair: P(first class | f) = 1 / (1 + e^{A f + B}), with (A, B)
//!   fitted by maximum likelihood on decision values the model did not see (an internal 5-fold
//!   cross-validation, [`crate::train::add_probabilities`]), with Platt's targets
//!   (N₊ + 1)/(N₊ + 2) and 1/(N₋ + 2) and the Newton method with backtracking of Lin, Lin and
//!   Weng ("A note on Platt's probabilistic outputs for support vector machines", 2007):
//!   [`sigmoid_train`], evaluated without cancellation by [`sigmoid_predict`].
//! * **Pairwise coupling** for more than two classes: Wu, Lin and Weng's second method ("Probability
//!   estimates for multi-class classification by pairwise coupling", JMLR 2004), the fixed-point
//!   iteration LIBSVM runs: [`multiclass_probability`].

/// Platt's (A, B) from decision values `dec` and whether each point is of the positive
/// (first) class: LIBSVM's `sigmoid_train`, step for step (Newton's method on the
/// regularised targets, H + 10⁻¹² I, backtracking to a sufficient decrease, at most 100
/// iterations, stop when both gradient entries are below 10⁻⁵).
pub fn sigmoid_train(dec: &[f64], positive: &[bool]) -> (f64, f64) {
    assert_eq!(dec.len(), positive.len());
    let prior1 = positive.iter().filter(|&&p| p).count() as f64;
    let prior0 = dec.len() as f64 - prior1;
    const MAX_ITER: usize = 100;
    const MIN_STEP: f64 = 1e-10;
    const SIGMA: f64 = 1e-12;
    const EPS: f64 = 1e-5;
    let hi = (prior1 + 1.0) / (prior1 + 2.0);
    let lo = 1.0 / (prior0 + 2.0);
    let t: Vec<f64> = positive.iter().map(|&p| if p { hi } else { lo }).collect();
    let objective = |a: f64, b: f64| -> f64 {
        let mut f = 0.0;
        for (&d, &ti) in dec.iter().zip(&t) {
            let fab = d * a + b;
            f += if fab >= 0.0 {
                ti * fab + (1.0 + (-fab).exp()).ln()
            } else {
                (ti - 1.0) * fab + (1.0 + fab.exp()).ln()
            };
        }
        f
    };
    let (mut a, mut b) = (0.0, ((prior0 + 1.0) / (prior1 + 1.0)).ln());
    let mut fval = objective(a, b);
    for _ in 0..MAX_ITER {
        let (mut h11, mut h22, mut h21, mut g1, mut g2) = (SIGMA, SIGMA, 0.0, 0.0, 0.0);
        for (&d, &ti) in dec.iter().zip(&t) {
            let fab = d * a + b;
            let (p, q) = if fab >= 0.0 {
                let e = (-fab).exp();
                (e / (1.0 + e), 1.0 / (1.0 + e))
            } else {
                let e = fab.exp();
                (1.0 / (1.0 + e), e / (1.0 + e))
            };
            let d2 = p * q;
            h11 += d * d * d2;
            h22 += d2;
            h21 += d * d2;
            let d1 = ti - p;
            g1 += d * d1;
            g2 += d1;
        }
        if g1.abs() < EPS && g2.abs() < EPS {
            break;
        }
        let det = h11 * h22 - h21 * h21;
        let da = -(h22 * g1 - h21 * g2) / det;
        let db = -(-h21 * g1 + h11 * g2) / det;
        let gd = g1 * da + g2 * db;
        let mut step = 1.0;
        while step >= MIN_STEP {
            let (na, nb) = (a + step * da, b + step * db);
            let nf = objective(na, nb);
            if nf < fval + 0.0001 * step * gd {
                (a, b, fval) = (na, nb, nf);
                break;
            }
            step /= 2.0;
        }
        if step < MIN_STEP {
            // LIBSVM reports "line search fails" and keeps the last point; so do we.
            break;
        }
    }
    (a, b)
}

/// P(first class | f) = 1 / (1 + e^{A f + B}), written so neither branch cancels.
pub fn sigmoid_predict(f: f64, a: f64, b: f64) -> f64 {
    let fab = f * a + b;
    if fab >= 0.0 {
        let e = (-fab).exp();
        e / (1.0 + e)
    } else {
        1.0 / (1.0 + fab.exp())
    }
}

/// Wu, Lin and Weng's method 2 as LIBSVM runs it: class probabilities `p` (length k) from the
/// pairwise r\[i\]\[j\] ≈ P(i | i or j) (r\[j\]\[i\] = 1 − r\[i\]\[j\]).
pub fn multiclass_probability(r: &[Vec<f64>], p: &mut [f64]) {
    let k = p.len();
    let max_iter = 100.max(k);
    let eps = 0.005 / k as f64;
    let mut q = vec![vec![0.0; k]; k];
    for t in 0..k {
        p[t] = 1.0 / k as f64;
        for j in 0..t {
            q[t][t] += r[j][t] * r[j][t];
            q[t][j] = q[j][t];
        }
        for j in t + 1..k {
            q[t][t] += r[j][t] * r[j][t];
            q[t][j] = -r[j][t] * r[t][j];
        }
    }
    let mut qp = vec![0.0; k];
    for _ in 0..max_iter {
        let mut pqp = 0.0;
        for t in 0..k {
            qp[t] = (0..k).map(|j| q[t][j] * p[j]).sum();
            pqp += p[t] * qp[t];
        }
        let max_error = (0..k).map(|t| (qp[t] - pqp).abs()).fold(0.0, f64::max);
        if max_error < eps {
            break;
        }
        for t in 0..k {
            let diff = (-qp[t] + pqp) / q[t][t];
            p[t] += diff;
            pqp = (pqp + diff * (diff * q[t][t] + 2.0 * qp[t])) / (1.0 + diff) / (1.0 + diff);
            for j in 0..k {
                qp[j] = (qp[j] + diff * q[t][j]) / (1.0 + diff);
                p[j] /= 1.0 + diff;
            }
        }
    }
}

/// Smallest pairwise probability used (LIBSVM's `min_prob`).
const MIN_PROB: f64 = 1e-7;

/// One point's class probabilities (label order) from its k(k−1)/2 decision values and the
/// pairs' sigmoids, as LIBSVM's `svm_predict_probability`.
pub fn class_probabilities(k: usize, dec: &[f64], prob_a: &[f64], prob_b: &[f64]) -> Vec<f64> {
    let mut r = vec![vec![0.0; k]; k];
    let mut p = 0;
    #[allow(clippy::needless_range_loop)] // r[i][j] and r[j][i] together
    for i in 0..k {
        for j in i + 1..k {
            let v = sigmoid_predict(dec[p], prob_a[p], prob_b[p]).clamp(MIN_PROB, 1.0 - MIN_PROB);
            r[i][j] = v;
            r[j][i] = 1.0 - v;
            p += 1;
        }
    }
    let mut out = vec![0.0; k];
    if k == 2 {
        out[0] = r[0][1];
        out[1] = r[1][0];
    } else {
        multiclass_probability(&r, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    /// Separable-ish decision values: the fit puts P(+) above ½ for positive f, is monotone
    /// decreasing in A f + B, and sits at a stationary point of the regularised likelihood.
    #[test]
    fn the_sigmoid_fit_is_a_stationary_point_of_platts_likelihood() {
        let mut r = SplitMix64::new(4);
        let mut dec = Vec::new();
        let mut pos = Vec::new();
        for _ in 0..400 {
            let y = r.next_f64() < 0.4;
            let f = if y { 1.0 } else { -1.0 } + 1.2 * (r.next_f64() - 0.5) * 2.0;
            dec.push(f);
            pos.push(y);
        }
        let (a, b) = sigmoid_train(&dec, &pos);
        assert!(a < 0.0, "A = {a}: P(+) must grow with f");
        assert!(sigmoid_predict(2.0, a, b) > 0.9 && sigmoid_predict(-2.0, a, b) < 0.1);
        // The gradient of the objective at (A, B) vanishes (to the stop rule's 1e-5).
        let n1 = pos.iter().filter(|&&p| p).count() as f64;
        let n0 = pos.len() as f64 - n1;
        let (mut g1, mut g2) = (0.0, 0.0);
        for (&f, &y) in dec.iter().zip(&pos) {
            let t = if y {
                (n1 + 1.0) / (n1 + 2.0)
            } else {
                1.0 / (n0 + 2.0)
            };
            let p = sigmoid_predict(f, a, b);
            g1 += f * (t - p);
            g2 += t - p;
        }
        assert!(g1.abs() < 1e-5 && g2.abs() < 1e-5, "gradient ({g1}, {g2})");
    }

    /// Pairwise coupling returns a distribution, recovers one that generated consistent
    /// pairwise values, and keeps the order of the classes' strengths.
    #[test]
    fn coupling_recovers_a_consistent_distribution() {
        let truth = [0.5, 0.3, 0.15, 0.05];
        let k = truth.len();
        let mut r = vec![vec![0.0; k]; k];
        for i in 0..k {
            for j in 0..k {
                if i != j {
                    r[i][j] = truth[i] / (truth[i] + truth[j]);
                }
            }
        }
        let mut p = vec![0.0; k];
        multiclass_probability(&r, &mut p);
        let sum: f64 = p.iter().sum();
        assert!((sum - 1.0).abs() < 1e-9, "sum {sum}");
        for c in 0..k {
            assert!(
                (p[c] - truth[c]).abs() < 5e-3,
                "class {c}: {} vs {}",
                p[c],
                truth[c]
            );
        }
        // Two classes: the sigmoid's value and its complement.
        let two = class_probabilities(2, &[0.7], &[-2.0], &[0.1]);
        assert!((two[0] - sigmoid_predict(0.7, -2.0, 0.1)).abs() < 1e-15);
        assert!((two[0] + two[1] - 1.0).abs() < 1e-15);
    }
}
