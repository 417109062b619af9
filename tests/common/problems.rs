//! Small random problems shared by the variant and GPU parity tests, and an optimum computed
//! independently of the library (FISTA on the simplex).
#![allow(dead_code)]

use fwsvm::data::Dataset;
use fwsvm::kernel::Kernel;
use fwsvm::problem::Problem;
use fwsvm::rng::SplitMix64;

pub fn random_dataset(m: usize, d: usize, sparse: bool, seed: u64) -> Dataset {
    let mut r = SplitMix64::new(seed);
    let (mut ip, mut ix, mut vs, mut y) = (vec![0usize], Vec::new(), Vec::new(), Vec::new());
    for i in 0..m {
        let label = if i % 3 == 0 { 1.0 } else { -1.0 };
        for f in 0..d {
            if !sparse || r.next_f64() < 0.35 {
                ix.push(f as u32);
                let shift = if f == 0 { 0.7 * label } else { 0.0 };
                vs.push((r.next_f64() * 2.0 - 1.0 + shift) as f32);
            }
        }
        ip.push(ix.len());
        y.push(label);
    }
    Dataset::from_csr(d, ip, ix, vs, y)
}

/// Euclidean projection onto the unit simplex (sort-based).
pub fn project_simplex(v: &mut [f64]) {
    let mut u = v.to_vec();
    u.sort_by(|a, b| b.total_cmp(a));
    let (mut css, mut theta) = (0.0, 0.0);
    for (k, &x) in u.iter().enumerate() {
        css += x;
        let t = (css - 1.0) / (k as f64 + 1.0);
        if x - t > 0.0 {
            theta = t;
        }
    }
    v.iter_mut().for_each(|x| *x = (*x - theta).max(0.0));
}

/// min ½αᵀQα on the simplex by FISTA with exact Q — independent of the library's solvers.
pub fn reference_optimum(prob: &Problem<'_>) -> (f64, Vec<f64>) {
    let m = prob.len();
    let q: Vec<f64> = (0..m * m).map(|k| prob.q(k / m, k % m)).collect();
    let grad = |a: &[f64]| -> Vec<f64> {
        (0..m)
            .map(|i| (0..m).map(|j| q[i * m + j] * a[j]).sum())
            .collect()
    };
    // Lipschitz constant: Gershgorin bound on the largest eigenvalue.
    let l = (0..m)
        .map(|i| (0..m).map(|j| q[i * m + j].abs()).sum::<f64>())
        .fold(0.0, f64::max);
    let mut x = vec![1.0 / m as f64; m];
    let mut yv = x.clone();
    let mut t = 1.0f64;
    for _ in 0..60_000 {
        let g = grad(&yv);
        let mut xn: Vec<f64> = yv.iter().zip(&g).map(|(a, b)| a - b / l).collect();
        project_simplex(&mut xn);
        let tn = (1.0 + (1.0 + 4.0 * t * t).sqrt()) / 2.0;
        yv = xn
            .iter()
            .zip(&x)
            .map(|(a, b)| a + (t - 1.0) / tn * (a - b))
            .collect();
        x = xn;
        t = tn;
    }
    let g = grad(&x);
    (0.5 * x.iter().zip(&g).map(|(a, b)| a * b).sum::<f64>(), x)
}

/// (name, data, kernel, C, interior): with a small C every point is a support vector and the
/// optimum lies inside the simplex, where plain FW converges linearly; elsewhere the optimum is
/// sparse and FW is O(1/k) (Frandi, Ñanculef, Suykens, *A PARTAN-Accelerated Frank-Wolfe
/// Algorithm for Large-Scale SVM Classification*, 2015, Table 3), so only the variants with
/// away, pairwise or PARTAN steps are asked for 1e-8 there.
pub fn problems() -> Vec<(String, Dataset, Kernel, f64, bool)> {
    vec![
        (
            "rbf dense, interior".into(),
            random_dataset(70, 5, false, 15),
            Kernel::Rbf { gamma: 0.8 },
            0.02,
            true,
        ),
        (
            "poly sparse, interior".into(),
            random_dataset(60, 9, true, 16),
            Kernel::Poly {
                gamma: 0.5,
                coef0: 1.0,
                degree: 2,
            },
            0.01,
            true,
        ),
        (
            "rbf dense".into(),
            random_dataset(70, 5, false, 11),
            Kernel::Rbf { gamma: 0.8 },
            10.0,
            false,
        ),
        (
            "rbf sparse".into(),
            random_dataset(60, 9, true, 12),
            Kernel::Rbf { gamma: 0.5 },
            1.0,
            false,
        ),
        (
            "poly dense".into(),
            random_dataset(50, 4, false, 13),
            Kernel::Poly {
                gamma: 0.5,
                coef0: 1.0,
                degree: 2,
            },
            5.0,
            false,
        ),
        (
            "linear sparse".into(),
            random_dataset(55, 8, true, 14),
            Kernel::Linear,
            100.0,
            false,
        ),
    ]
}
