//! Non-parametric tests for comparing algorithms over several datasets, the protocol of
//! Ñanculef, Frandi, Sartori, Allende, *A Novel Frank-Wolfe Algorithm. Analysis and
//! Applications to Large-Scale SVM Training*, 2014 (after Demšar, *Statistical comparisons of
//! classifiers over multiple data sets*, JMLR 2006): the Friedman test on average ranks with
//! the Iman–Davenport correction, and pairwise Wilcoxon signed-rank tests with exact p-values.

/// Ranks of `v` (1 = smallest), ties given their average rank.
pub fn ranks(v: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..v.len()).collect();
    idx.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
    let mut r = vec![0.0; v.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i + 1;
        while j < idx.len() && v[idx[j]] == v[idx[i]] {
            j += 1;
        }
        let avg = (i + j + 1) as f64 / 2.0; // ranks i+1 ..= j
        for &k in &idx[i..j] {
            r[k] = avg;
        }
        i = j;
    }
    r
}

/// Outcome of the Friedman test.
#[derive(Debug, Clone, PartialEq)]
pub struct Friedman {
    /// Average rank of each algorithm (1 = best).
    pub avg_ranks: Vec<f64>,
    /// Friedman's χ²_F.
    pub chi2: f64,
    /// Iman–Davenport's F_F = (N − 1) χ²_F / (N (k − 1) − χ²_F).
    pub f: f64,
    /// Degrees of freedom of F_F: (k − 1, (k − 1)(N − 1)).
    pub df: (f64, f64),
    /// p-value of F_F.
    pub p: f64,
}

/// The Friedman test with the Iman–Davenport correction. `scores[d][a]` is algorithm a's
/// score on dataset d; with `lower_is_better` the smallest score gets rank 1 (times), else the
/// largest (accuracies). Needs k ≥ 2 algorithms and N ≥ 2 datasets.
pub fn friedman(scores: &[Vec<f64>], lower_is_better: bool) -> Option<Friedman> {
    let n = scores.len();
    let k = scores.first()?.len();
    if n < 2 || k < 2 || scores.iter().any(|r| r.len() != k) {
        return None;
    }
    let mut sum = vec![0.0; k];
    for row in scores {
        let keyed: Vec<f64> = row
            .iter()
            .map(|&v| if lower_is_better { v } else { -v })
            .collect();
        for (s, r) in sum.iter_mut().zip(ranks(&keyed)) {
            *s += r;
        }
    }
    let (nf, kf) = (n as f64, k as f64);
    let avg: Vec<f64> = sum.iter().map(|s| s / nf).collect();
    let chi2 = 12.0 * nf / (kf * (kf + 1.0))
        * (avg.iter().map(|r| r * r).sum::<f64>() - kf * (kf + 1.0).powi(2) / 4.0);
    let denom = nf * (kf - 1.0) - chi2;
    let df = (kf - 1.0, (kf - 1.0) * (nf - 1.0));
    let (f, p) = if denom <= 0.0 {
        // Every dataset ranks the algorithms identically: F_F is infinite.
        (f64::INFINITY, 0.0)
    } else {
        let f = (nf - 1.0) * chi2 / denom;
        (f, f_sf(f, df.0, df.1))
    };
    Some(Friedman {
        avg_ranks: avg,
        chi2,
        f,
        df,
        p,
    })
}

/// Outcome of a Wilcoxon signed-rank test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Wilcoxon {
    /// Sum of the ranks of the positive differences (a − b > 0).
    pub w_plus: f64,
    /// Sum of the ranks of the negative differences.
    pub w_minus: f64,
    /// Pairs with a non-zero difference (zeros are dropped, Wilcoxon's convention).
    pub n: usize,
    /// Exact two-sided p-value (the null distribution enumerated over the observed ranks, so
    /// ties are handled exactly).
    pub p: f64,
}

/// Wilcoxon's signed-rank test on paired samples `a` and `b`, exact two-sided p-value.
pub fn wilcoxon(a: &[f64], b: &[f64]) -> Wilcoxon {
    let d: Vec<f64> = a
        .iter()
        .zip(b)
        .map(|(x, y)| x - y)
        .filter(|v| *v != 0.0)
        .collect();
    let n = d.len();
    if n == 0 {
        return Wilcoxon {
            w_plus: 0.0,
            w_minus: 0.0,
            n: 0,
            p: 1.0,
        };
    }
    let abs: Vec<f64> = d.iter().map(|v| v.abs()).collect();
    let r = ranks(&abs);
    let w_plus: f64 = r
        .iter()
        .zip(&d)
        .filter(|(_, v)| **v > 0.0)
        .map(|(r, _)| r)
        .sum();
    let total: f64 = r.iter().sum();
    // Doubled ranks are integers (average ranks are multiples of ½): count sign assignments
    // by their doubled positive-rank sum.
    let r2: Vec<usize> = r.iter().map(|v| (2.0 * v).round() as usize).collect();
    let max: usize = r2.iter().sum();
    let mut ways = vec![0f64; max + 1];
    ways[0] = 1.0;
    for &x in &r2 {
        for s in (x..=max).rev() {
            ways[s] += ways[s - x];
        }
    }
    let all = 2f64.powi(n as i32);
    let w2 = (2.0 * w_plus).round() as usize;
    let low: f64 = ways[..=w2].iter().sum::<f64>() / all;
    let high: f64 = ways[w2..].iter().sum::<f64>() / all;
    Wilcoxon {
        w_plus,
        w_minus: total - w_plus,
        n,
        p: (2.0 * low.min(high)).min(1.0),
    }
}

/// P(F > f) for the F distribution with (d1, d2) degrees of freedom (statrs' Fisher–Snedecor
/// survival function; the exact Wilcoxon enumeration above is written here because no kept
/// crate gives exact p-values with tied ranks).
pub fn f_sf(f: f64, d1: f64, d2: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, FisherSnedecor};
    if f.is_nan() {
        return f64::NAN;
    }
    if f <= 0.0 {
        return 1.0;
    }
    if f.is_infinite() {
        return 0.0;
    }
    match FisherSnedecor::new(d1, d2) {
        Ok(dist) => dist.sf(f),
        Err(_) => f64::NAN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_average_ties() {
        assert_eq!(ranks(&[3.0, 1.0, 3.0, 2.0]), vec![3.5, 1.0, 3.5, 2.0]);
    }

    #[test]
    fn f_survival_matches_closed_forms_and_scipy() {
        // F(2, 2): P(F > f) = 1 / (1 + f).
        for f in [0.1, 1.0, 3.7, 20.0] {
            assert!((f_sf(f, 2.0, 2.0) - 1.0 / (1.0 + f)).abs() < 1e-13, "{f}");
        }
        // F(1, d2) is t² with d2 dof; t(1) is Cauchy: P(|t| > 1) = ½, so P(F(1,1) > 1) = ½.
        assert!((f_sf(1.0, 1.0, 1.0) - 0.5).abs() < 1e-13);
        // scipy.stats.f.sf(2.7, 3, 12) and f.sf(0.4, 4, 20) (scipy 1.x).
        assert!((f_sf(2.7, 3.0, 12.0) - 0.092_542_793_843_686_87).abs() < 1e-12);
        assert!((f_sf(0.4, 4.0, 20.0) - 0.806_299_775_554_821_1).abs() < 1e-12);
        // The edges: no mass below 0, none beyond ∞, NaN stays NaN.
        assert_eq!(f_sf(0.0, 3.0, 5.0), 1.0);
        assert_eq!(f_sf(f64::INFINITY, 3.0, 5.0), 0.0);
        assert!(f_sf(f64::NAN, 3.0, 5.0).is_nan());
    }

    #[test]
    fn friedman_on_a_worked_example() {
        // Three algorithms on four datasets; a always best, c always worst (times: lower wins).
        let s = vec![
            vec![1.0, 2.0, 3.0],
            vec![1.0, 3.0, 2.5],
            vec![0.5, 0.9, 2.0],
            vec![2.0, 2.1, 2.2],
        ];
        let fr = friedman(&s, true).unwrap();
        assert_eq!(fr.avg_ranks, vec![1.0, 2.25, 2.75]);
        // χ²_F = 12·4/(3·4)·(1 + 5.0625 + 7.5625 − 12) = 6.5; F_F = 3·6.5/(8 − 6.5) = 13.
        assert!((fr.chi2 - 6.5).abs() < 1e-12);
        assert!((fr.f - 13.0).abs() < 1e-12);
        assert_eq!(fr.df, (2.0, 6.0));
        // P(F(2, 6) > 13) = (1 + 2·13/6)^(−3) (closed form for d1 = 2).
        let exact = (1.0f64 + 13.0 / 3.0).powi(-3);
        assert!((fr.p - exact).abs() < 1e-12, "{} vs {exact}", fr.p);
        // Accuracies: higher wins, so the ranks reverse.
        let fa = friedman(&s, false).unwrap();
        assert_eq!(fa.avg_ranks, vec![3.0, 1.75, 1.25]);
    }

    #[test]
    fn wilcoxon_exact_distribution() {
        // All 5 differences positive: W+ = 15, p = 2 / 2⁵.
        let w = wilcoxon(&[2.0, 3.0, 4.0, 5.0, 6.0], &[1.0, 1.0, 1.0, 1.0, 1.0]);
        assert_eq!((w.w_plus, w.w_minus, w.n), (15.0, 0.0, 5));
        assert!((w.p - 2.0 / 32.0).abs() < 1e-15);
        // Differences 1, −2, 3, 4 (ranks 1..4): W+ = 8, W− = 2. Sign assignments with a
        // positive-rank sum ≤ 2: {}, {1}, {2} → P = 3/16, two-sided 6/16.
        let w = wilcoxon(&[1.0, 0.0, 3.0, 4.0], &[0.0, 2.0, 0.0, 0.0]);
        assert_eq!((w.w_plus, w.w_minus), (8.0, 2.0));
        assert!((w.p - 6.0 / 16.0).abs() < 1e-15);
        // scipy.stats.wilcoxon(d, method="exact") for these differences: p = 0.0546875.
        let d = [0.3, 1.2, -0.5, 2.2, 0.9, 1.7, -0.1, 0.8];
        let w = wilcoxon(&d, &[0.0; 8]);
        assert_eq!(w.w_minus, 4.0);
        assert!((w.p - 0.054_687_5).abs() < 1e-15, "{}", w.p);
        // Zeros dropped; all zero: p = 1.
        assert_eq!(wilcoxon(&[1.0, 2.0], &[1.0, 2.0]).p, 1.0);
        // Tied |d| (1, 1, −1): ranks 2, 2, 2; W+ = 4; sums 0,2,2,2,4,4,4,6 → P(≤4) = 7/8,
        // P(≥4) = 4/8 → p = 1.
        let w = wilcoxon(&[1.0, 1.0, 0.0], &[0.0, 0.0, 1.0]);
        assert_eq!(w.w_plus, 4.0);
        assert!((w.p - 1.0).abs() < 1e-15);
    }
}
