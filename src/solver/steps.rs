//! Closed-form line searches of the Frank–Wolfe steps (docs/METHODS.md), as pure functions of
//! scalars so they can be checked against brute force. All minimise f(α) = ½αᵀQα along a
//! direction d, using gᵀd and dᵀQd expressed through f = ½αᵀg, gradient entries and Q entries.

/// Toward (FW) step α ← (1−λ)α + λe_s: returns (λ, f after the step).
///
/// gᵀd = −Δ = g_s − 2f, dᵀQd = Q_ss − 2g_s + 2f, λ = clip(Δ/dᵀQd, 0, 1).
pub fn toward(f: f64, g_s: f64, q_ss: f64) -> (f64, f64) {
    let delta = 2.0 * f - g_s;
    let curv = q_ss - 2.0 * g_s + 2.0 * f;
    let lambda = if delta <= 0.0 {
        0.0
    } else if curv > 0.0 {
        (delta / curv).min(1.0)
    } else {
        1.0
    };
    let f_new = (1.0 - lambda) * (1.0 - lambda) * f
        + lambda * (1.0 - lambda) * g_s
        + 0.5 * lambda * lambda * q_ss;
    (lambda, f_new)
}

/// Away step α ← (1+λ)α − λe_v (requires α_v < 1): returns (λ, λ_max, f after the step).
///
/// gᵀd = 2f − g_v, dᵀQd = Q_vv − 2g_v + 2f, λ_max = α_v / (1 − α_v).
pub fn away(f: f64, g_v: f64, q_vv: f64, alpha_v: f64) -> (f64, f64, f64) {
    let lambda_max = alpha_v / (1.0 - alpha_v);
    let gain = g_v - 2.0 * f;
    let curv = q_vv - 2.0 * g_v + 2.0 * f;
    let lambda = if gain <= 0.0 {
        0.0
    } else if curv > 0.0 {
        (gain / curv).min(lambda_max)
    } else {
        lambda_max
    };
    let f_new = f - lambda * gain + 0.5 * lambda * lambda * curv;
    (lambda, lambda_max, f_new)
}

/// Pairwise step α_s += λ, α_v −= λ: returns (λ, decrease of f).
///
/// λ = clip((g_v − g_s) / (Q_ss + Q_vv − 2Q_sv), 0, α_v).
pub fn pairwise(g_s: f64, g_v: f64, q_ss: f64, q_vv: f64, q_sv: f64, alpha_v: f64) -> (f64, f64) {
    let gain = g_v - g_s;
    let curv = q_ss + q_vv - 2.0 * q_sv;
    let lambda = if gain <= 0.0 {
        0.0
    } else if curv > 0.0 {
        (gain / curv).min(alpha_v)
    } else {
        alpha_v
    };
    (lambda, lambda * gain - 0.5 * lambda * lambda * curv)
}

/// PARTAN's second line search along p = α̃ − α⁻ (Frandi, Ñanculef, Suykens, *A
/// PARTAN-Accelerated Frank-Wolfe Algorithm for Large-Scale SVM Classification*, 2015):
/// with f̃ = f(α̃), W̃ = α̃ᵀQα⁻ and f⁻ = f(α⁻), returns (μ, f⁺) where
/// μ = clip((W̃ − 2f̃) / pᵀQp, 0, μ_max), pᵀQp = 2f̃ − 2W̃ + 2f⁻, f⁺ = f̃ + μ(2f̃ − W̃) + ½μ²pᵀQp.
pub fn partan(f_t: f64, w_t: f64, f_prev: f64, mu_max: f64) -> (f64, f64) {
    let slope = 2.0 * f_t - w_t;
    let curv = 2.0 * f_t - 2.0 * w_t + 2.0 * f_prev;
    let mu = if slope >= 0.0 || mu_max <= 0.0 {
        0.0
    } else if curv > 0.0 {
        (-slope / curv).min(mu_max)
    } else {
        mu_max
    };
    (mu, f_t + mu * slope + 0.5 * mu * mu * curv)
}

#[cfg(test)]
mod tests {
    //! Each closed form against brute force on random small problems: build Q explicitly,
    //! take the step on a dense α, and compare f, g = Qα and the simplex constraints.
    use super::*;
    use crate::rng::SplitMix64;

    struct Dense {
        n: usize,
        q: Vec<f64>,
    }

    impl Dense {
        fn random(n: usize, r: &mut SplitMix64) -> Self {
            // Q = BᵀB + δ/C: symmetric positive definite like the SVM's.
            let k = 4;
            let b: Vec<f64> = (0..n * k).map(|_| r.next_f64() * 2.0 - 1.0).collect();
            let mut q = vec![0.0; n * n];
            for i in 0..n {
                for j in 0..n {
                    q[i * n + j] = (0..k).map(|t| b[i * k + t] * b[j * k + t]).sum::<f64>()
                        + if i == j { 0.5 } else { 0.0 };
                }
            }
            Dense { n, q }
        }
        fn grad(&self, a: &[f64]) -> Vec<f64> {
            (0..self.n)
                .map(|i| (0..self.n).map(|j| self.q[i * self.n + j] * a[j]).sum())
                .collect()
        }
        fn f(&self, a: &[f64]) -> f64 {
            0.5 * a.iter().zip(self.grad(a)).map(|(x, g)| x * g).sum::<f64>()
        }
        fn qq(&self, i: usize, j: usize) -> f64 {
            self.q[i * self.n + j]
        }
    }

    fn random_alpha(n: usize, r: &mut SplitMix64) -> Vec<f64> {
        let mut a: Vec<f64> = (0..n)
            .map(|_| {
                if r.next_f64() < 0.6 {
                    r.next_f64()
                } else {
                    0.0
                }
            })
            .collect();
        a[0] += 0.1;
        let s: f64 = a.iter().sum();
        a.iter_mut().for_each(|x| *x /= s);
        a
    }

    /// Minimum of f on the segment α + t·d, t ∈ [0, tmax], by dense sampling + golden refine.
    fn brute_min(p: &Dense, a: &[f64], d: &[f64], tmax: f64) -> (f64, f64) {
        let at = |t: f64| -> f64 {
            let x: Vec<f64> = a.iter().zip(d).map(|(u, v)| u + t * v).collect();
            p.f(&x)
        };
        let (mut lo, mut hi) = (0.0, tmax);
        for _ in 0..200 {
            let m1 = lo + (hi - lo) / 3.0;
            let m2 = hi - (hi - lo) / 3.0;
            if at(m1) < at(m2) { hi = m2 } else { lo = m1 }
        }
        let t = 0.5 * (lo + hi);
        (t, at(t))
    }

    #[test]
    fn toward_matches_brute_force() {
        let mut r = SplitMix64::new(1);
        for _ in 0..50 {
            let p = Dense::random(7, &mut r);
            let a = random_alpha(7, &mut r);
            let g = p.grad(&a);
            let f = p.f(&a);
            let s = (0..7).min_by(|&i, &j| g[i].total_cmp(&g[j])).unwrap();
            let (lam, fnew) = toward(f, g[s], p.qq(s, s));
            let d: Vec<f64> = (0..7)
                .map(|i| if i == s { 1.0 } else { 0.0 } - a[i])
                .collect();
            let (tb, fb) = brute_min(&p, &a, &d, 1.0);
            assert!((lam - tb).abs() < 1e-6, "λ {lam} vs {tb}");
            assert!((fnew - fb).abs() < 1e-10);
            // the step's α and g
            let an: Vec<f64> = (0..7)
                .map(|i| (1.0 - lam) * a[i] + if i == s { lam } else { 0.0 })
                .collect();
            assert!((an.iter().sum::<f64>() - 1.0).abs() < 1e-12 && an.iter().all(|&x| x >= 0.0));
            assert!((p.f(&an) - fnew).abs() < 1e-12);
            let gn = p.grad(&an);
            for i in 0..7 {
                let upd = (1.0 - lam) * g[i] + lam * p.qq(i, s);
                assert!((gn[i] - upd).abs() < 1e-12);
            }
            assert!(fnew <= f + 1e-15);
        }
    }

    #[test]
    fn away_matches_brute_force_and_clips() {
        let mut r = SplitMix64::new(2);
        let mut clipped = 0;
        for _ in 0..200 {
            let p = Dense::random(6, &mut r);
            let a = random_alpha(6, &mut r);
            let g = p.grad(&a);
            let f = p.f(&a);
            let v = (0..6)
                .filter(|&i| a[i] > 0.0)
                .max_by(|&i, &j| g[i].total_cmp(&g[j]))
                .unwrap();
            if a[v] >= 1.0 {
                continue;
            }
            let (lam, lmax, fnew) = away(f, g[v], p.qq(v, v), a[v]);
            let d: Vec<f64> = (0..6)
                .map(|i| a[i] - if i == v { 1.0 } else { 0.0 })
                .collect();
            let (tb, fb) = brute_min(&p, &a, &d, lmax);
            assert!((lam - tb).abs() < 1e-6, "λ {lam} vs {tb}");
            assert!((fnew - fb).abs() < 1e-10);
            let an: Vec<f64> = (0..6)
                .map(|i| (1.0 + lam) * a[i] - if i == v { lam } else { 0.0 })
                .collect();
            assert!(an.iter().all(|&x| x >= -1e-15));
            assert!((an.iter().sum::<f64>() - 1.0).abs() < 1e-12);
            assert!((p.f(&an) - fnew).abs() < 1e-12);
            if lam == lmax {
                clipped += 1;
                assert!(an[v].abs() < 1e-15, "a drop step must zero α_v");
            }
        }
        assert!(clipped > 0, "no clipped away step was exercised");
    }

    #[test]
    fn pairwise_matches_brute_force_and_clips() {
        let mut r = SplitMix64::new(3);
        let mut clipped = 0;
        for _ in 0..200 {
            let p = Dense::random(6, &mut r);
            let a = random_alpha(6, &mut r);
            let g = p.grad(&a);
            let f = p.f(&a);
            let s = (0..6).min_by(|&i, &j| g[i].total_cmp(&g[j])).unwrap();
            let v = (0..6)
                .filter(|&i| a[i] > 0.0)
                .max_by(|&i, &j| g[i].total_cmp(&g[j]))
                .unwrap();
            if s == v {
                continue;
            }
            let (lam, dec) = pairwise(g[s], g[v], p.qq(s, s), p.qq(v, v), p.qq(s, v), a[v]);
            let d: Vec<f64> = (0..6)
                .map(|i| {
                    if i == s {
                        1.0
                    } else if i == v {
                        -1.0
                    } else {
                        0.0
                    }
                })
                .collect();
            let (tb, fb) = brute_min(&p, &a, &d, a[v]);
            assert!((lam - tb).abs() < 1e-6);
            assert!(((f - dec) - fb).abs() < 1e-10);
            if lam == a[v] {
                clipped += 1;
            }
        }
        assert!(clipped > 0);
    }

    #[test]
    fn partan_recursions_match_brute_force() {
        let mut r = SplitMix64::new(4);
        let n = 8;
        for _ in 0..100 {
            let p = Dense::random(n, &mut r);
            let ap = random_alpha(n, &mut r); // α⁻
            let a = random_alpha(n, &mut r); // α
            let g = p.grad(&a);
            let gp = p.grad(&ap);
            let f = p.f(&a);
            let fp = p.f(&ap);
            let w: f64 = (0..n).map(|i| a[i] * gp[i]).sum(); // W = αᵀQα⁻
            let s = (0..n).min_by(|&i, &j| g[i].total_cmp(&g[j])).unwrap();
            let (lam, ft) = toward(f, g[s], p.qq(s, s));
            let at: Vec<f64> = (0..n)
                .map(|i| (1.0 - lam) * a[i] + if i == s { lam } else { 0.0 })
                .collect();
            let wt = (1.0 - lam) * w + lam * gp[s];
            let wt_direct: f64 = (0..n).map(|i| at[i] * gp[i]).sum();
            assert!((wt - wt_direct).abs() < 1e-12, "W̃ recursion");
            let mut mu_max = f64::INFINITY;
            for i in 0..n {
                if ap[i] > at[i] {
                    mu_max = mu_max.min(at[i] / (ap[i] - at[i]));
                }
            }
            let (mu, fplus) = partan(ft, wt, fp, mu_max);
            let d: Vec<f64> = (0..n).map(|i| at[i] - ap[i]).collect();
            let (tb, fb) = brute_min(&p, &at, &d, mu_max.min(50.0));
            assert!((mu - tb).abs() < 1e-5, "μ {mu} vs {tb}");
            assert!((fplus - fb).abs() < 1e-10);
            let aplus: Vec<f64> = (0..n).map(|i| (1.0 + mu) * at[i] - mu * ap[i]).collect();
            assert!(aplus.iter().all(|&x| x >= -1e-12), "α⁺ left the simplex");
            assert!((aplus.iter().sum::<f64>() - 1.0).abs() < 1e-12);
            assert!((p.f(&aplus) - fplus).abs() < 1e-10);
            // g⁺ = (1+μ)g̃ − μg⁻ and next W = α⁺ᵀQα
            let gt: Vec<f64> = (0..n)
                .map(|i| (1.0 - lam) * g[i] + lam * p.qq(i, s))
                .collect();
            let gplus = p.grad(&aplus);
            for i in 0..n {
                assert!((gplus[i] - ((1.0 + mu) * gt[i] - mu * gp[i])).abs() < 1e-10);
            }
            let wnext = (1.0 + mu) * ((1.0 - lam) * 2.0 * f + lam * g[s]) - mu * w;
            let wnext_direct: f64 = (0..n).map(|i| aplus[i] * g[i]).sum();
            assert!((wnext - wnext_direct).abs() < 1e-10);
        }
    }
}
