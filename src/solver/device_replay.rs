//! The device's working-set loop ([`DeviceLoop`](crate::backend::DeviceLoop)) replayed on the
//! host in f64, for `fwsvm check` and the tests: the same rule, step for step — the previous
//! W's first q/2 support vectors kept; the ⌈(q − kept)/2⌉ lowest g (toward) and the highest g
//! over the support (away, less those toward took) by g's f32 keys, ties to the lower point,
//! each listed in the points' order; W = toward, away, kept; [`block_steps`](super::block_steps)' inner solve to a
//! tenth of the block's gap (or of the stop rule's); the exact update of g — and compared with
//! the device after every batch: |W| and inner steps summed over the batch, α entry by entry.
//! The host notes the near-ties that f64 rounding on the device (a fused multiply-add where
//! the host rounds twice) may break the other way: from one of them the runs may part.

use crate::active::ActiveSet;
use crate::backend::{LoopSettings, Solvable};
use crate::error::{Error, Result};
use crate::problem::Problem;

/// How the device's iterations and the host's replay compared.
#[derive(Debug, Clone)]
pub struct Replay {
    /// Outer iterations run on each side.
    pub iterations: u64,
    /// Batches compared, and those (from the first) whose |W|, inner steps and α (within the
    /// tolerance) agreed.
    pub batches: usize,
    /// See [`batches`](Self::batches).
    pub matching: usize,
    /// The largest |α_device − α_host| over the matching batches.
    pub max_alpha_diff: f64,
    /// The first difference, in words.
    pub first_difference: Option<String>,
    /// The first difference came where the two sides stood at a tie that f64 rounding may
    /// break either way, so the runs legitimately part: in that batch the host's selection had
    /// a near-tie at its cut (the last key taken and the first left within one f32 step) or
    /// its inner solve one between two lowest gradients, two best decreases, a step and its
    /// clip, or the gap and the tolerance (within 1e-11 relative); or after the batch before
    /// it a point was a support vector on one side only (α within the tolerance of 0, clipped
    /// to 0 on the other).
    pub parted_at_tie: bool,
    /// The device's α at the end.
    pub alpha: ActiveSet,
}

/// The host's side: α, g = Qα (exact, f64) and W.
struct Host<'a> {
    prob: &'a Problem<'a>,
    q: usize,
    alpha: Vec<f64>,
    g: Vec<f64>,
    w: Vec<usize>,
    /// A near-tie at a cut since the last look.
    tie: bool,
}

/// f32 values as ordered u32 keys (shaders/resident.wgsl's `key_of`).
fn key_of(x: f64) -> u32 {
    let b = (x as f32).to_bits();
    if b & 0x8000_0000 != 0 {
        !b
    } else {
        b | 0x8000_0000
    }
}

impl<'a> Host<'a> {
    fn new(prob: &'a Problem<'a>, q: usize, a0: &ActiveSet) -> Self {
        let m = prob.len();
        let mut alpha = vec![0.0; m];
        for (i, a) in a0.iter() {
            alpha[i] = a;
        }
        let g = (0..m)
            .map(|i| a0.iter().map(|(j, a)| a * prob.q(i, j)).sum())
            .collect();
        Host {
            prob,
            q,
            alpha,
            g,
            w: Vec::new(),
            tie: false,
        }
    }

    fn alpha_g(&self) -> f64 {
        self.alpha
            .iter()
            .zip(&self.g)
            .filter(|(a, _)| **a > 0.0)
            .map(|(a, g)| a * g)
            .sum()
    }

    /// The `n` candidates with the smallest keys, in the points' order; notes a near-tie at
    /// the cut.
    fn smallest(&mut self, n: usize, key: impl Fn(usize) -> Option<u32>) -> Vec<usize> {
        let mut c: Vec<(u32, usize)> = (0..self.prob.len())
            .filter_map(|i| key(i).map(|k| (k, i)))
            .collect();
        c.sort_unstable();
        if n > 0 && n < c.len() && c[n].0 - c[n - 1].0 <= 1 {
            self.tie = true;
        }
        let mut s: Vec<usize> = c.into_iter().take(n).map(|(_, i)| i).collect();
        s.sort_unstable();
        s
    }

    /// One outer iteration: (|W|, inner steps).
    fn iterate(&mut self, eps: f64, rel_eps: f64) -> (usize, usize) {
        let (m, q) = (self.prob.len(), self.q);
        let ag = self.alpha_g();
        let kept: Vec<usize> = self
            .w
            .iter()
            .copied()
            .filter(|&i| self.alpha[i] > 0.0)
            .take(q / 2)
            .collect();
        let mut taken = vec![false; m];
        for &i in &kept {
            taken[i] = true;
        }
        let rest = q - kept.len();
        let nt = rest.div_ceil(2);
        let (g, alpha) = (std::mem::take(&mut self.g), std::mem::take(&mut self.alpha));
        let toward = self.smallest(nt, |i| (!taken[i] && !g[i].is_nan()).then(|| key_of(g[i])));
        let away = self.smallest(rest - nt, |i| {
            (!taken[i] && alpha[i] > 0.0 && !g[i].is_nan()).then(|| key_of(-g[i]))
        });
        (self.g, self.alpha) = (g, alpha);
        let mut w = toward.clone();
        w.extend(
            away.into_iter()
                .filter(|i| toward.binary_search(i).is_err()),
        );
        w.extend(kept);
        let n = w.len();
        let mut qb = vec![0.0; n * n];
        for k in 0..n {
            for l in 0..n {
                qb[k * n + l] = self.prob.q(w[k], w[l]);
            }
        }
        let mut gw: Vec<f64> = w.iter().map(|&i| self.g[i]).collect();
        let mut aw: Vec<f64> = w.iter().map(|&i| self.alpha[i]).collect();
        let a0 = aw.clone();
        let lo = gw.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = gw
            .iter()
            .zip(&aw)
            .filter(|(_, a)| **a > 0.0)
            .map(|(g, _)| *g)
            .fold(f64::NEG_INFINITY, f64::max);
        let rel = rel_eps * ag.abs();
        let goal = if eps <= rel { eps } else { rel };
        let tol = (0.1 * (hi - lo)).max(0.1 * goal);
        let (steps, tie) = inner(&qb, &mut gw, &mut aw, &w, tol, 50 * n + 1000);
        self.tie |= tie;
        for k in 0..n {
            let d = aw[k] - a0[k];
            self.alpha[w[k]] = aw[k];
            if d != 0.0 {
                for (i, gi) in self.g.iter_mut().enumerate() {
                    *gi += d * self.prob.q(i, w[k]);
                }
            }
        }
        self.w = w;
        (n, steps)
    }
}

/// Relative distance under which two values are a near-tie that rounding may order either way.
const NEAR: f64 = 1e-11;

fn near(a: f64, b: f64) -> bool {
    (a - b).abs() <= NEAR * a.abs().max(b.abs())
}

/// [`block_steps::solve`](super::block_steps::solve) in its one-loop form (the same steps, bit for bit: block_steps' own
/// test), noting near-ties: between the two lowest g of W, the two largest decreases, a step
/// and its clip at α_v, or the block's gap and the tolerance.
fn inner(
    q: &[f64],
    g: &mut [f64],
    a: &mut [f64],
    w: &[usize],
    tol: f64,
    max: usize,
) -> (usize, bool) {
    let n = w.len();
    let mut tie = false;
    // argmin g (ties to the lower point) and whether another g is nearly as low; max g over
    // the support.
    let scan = |g: &[f64], a: &[f64], tie: &mut bool| {
        let (mut s, mut gmax) = (0, f64::NEG_INFINITY);
        for k in 0..n {
            if g[k] < g[s] || (g[k] == g[s] && w[k] < w[s]) {
                s = k;
            }
            if a[k] > 0.0 && g[k] > gmax {
                gmax = g[k];
            }
        }
        *tie |= (0..n).any(|k| k != s && w[k] != w[s] && near(g[k], g[s]));
        (s, gmax)
    };
    let (mut s, mut gmax) = scan(g, a, &mut tie);
    let mut taken = 0;
    loop {
        // The stop test against the tolerance, itself a comparison rounding can tip.
        tie |= near(gmax - g[s], tol);
        if !(taken < max && gmax - g[s] > tol) {
            break;
        }
        let qs = &q[s * n..(s + 1) * n];
        let (mut v, mut best, mut second, mut lam) = (usize::MAX, 0.0, 0.0, 0.0);
        for k in 0..n {
            if a[k] <= 0.0 || k == s || g[k] <= g[s] {
                continue;
            }
            let (l, dec) = super::steps::pairwise(g[s], g[k], qs[s], q[k * n + k], qs[k], a[k]);
            if dec > best || (dec == best && v != usize::MAX && w[k] < w[v]) {
                second = best;
                (best, v, lam) = (dec, k, l);
            } else if dec > second {
                second = dec;
            }
        }
        if v == usize::MAX || lam <= 0.0 {
            break;
        }
        tie |= second > 0.0 && near(best, second);
        let curv = qs[s] + q[v * n + v] - 2.0 * qs[v];
        tie |= curv > 0.0 && near((g[v] - g[s]) / curv, a[v]);
        let (av, as_) = (a[v], a[s]);
        if as_ + lam == as_ && lam < av && av - lam == av {
            break;
        }
        a[s] = as_ + lam;
        a[v] = if lam >= av { 0.0 } else { av - lam };
        let qv = &q[v * n..(v + 1) * n];
        for k in 0..n {
            g[k] += lam * (qs[k] - qv[k]);
        }
        (s, gmax) = scan(g, a, &mut tie);
        taken += 1;
    }
    (taken, tie)
}

/// Runs `batches` batches of `batch` outer iterations of the device loop on `be` from `a0`
/// (q, stop rule (ε, rel_eps)) and the same iterations on the host, comparing after each
/// batch: the first batch that differs by |W|, inner steps or an α entry further apart than
/// `tol` ends the comparison. The host's side costs m·|W| kernel values an iteration: keep m
/// to thousands. An error where `be` runs no device loop.
#[allow(clippy::too_many_arguments)]
pub fn replay(
    prob: &Problem<'_>,
    be: &mut dyn Solvable,
    a0: &ActiveSet,
    q: usize,
    (eps, rel_eps): (f64, f64),
    batches: usize,
    batch: usize,
    tol: f64,
) -> Result<Replay> {
    be.set_alpha(a0)?;
    let mut host = Host::new(prob, q, a0);
    let mut alpha = a0.clone();
    let mut out = Replay {
        iterations: 0,
        batches: 0,
        matching: 0,
        max_alpha_diff: 0.0,
        first_difference: None,
        parted_at_tie: false,
        alpha: a0.clone(),
    };
    for b in 0..batches {
        let settings = LoopSettings {
            q,
            eps,
            rel_eps,
            alpha_g: host.alpha_g(),
            max_iterations: batch as u64,
            batch: Some(batch),
        };
        let Some(dl) = be.device_loop() else {
            return Err(Error::Backend(
                "this backend runs no device loop to replay".into(),
            ));
        };
        let rep = dl.run_batch(&mut alpha, &settings)?;
        if rep.q != q {
            return Err(Error::Backend(format!(
                "the device took q = {} for the replay's {q} (its column cache holds fewer columns)",
                rep.q
            )));
        }
        let (mut n, mut steps) = (0, 0);
        host.tie = false;
        for _ in 0..rep.iterations {
            let (a, s) = host.iterate(eps, rel_eps);
            n += a as u64;
            steps += s as u64;
        }
        out.iterations += rep.iterations;
        out.batches += 1;
        if out.first_difference.is_some() {
            continue;
        }
        let worst = (0..prob.len())
            .map(|i| ((alpha.get(i) - host.alpha[i]).abs(), i))
            .fold((0.0, 0), |a, b| if b.0 > a.0 { b } else { a });
        if rep.sizes != n || rep.inner_steps != steps || !(worst.0 <= tol) {
            out.parted_at_tie |= host.tie;
            out.first_difference = Some(format!(
                "batch {b}: |W| summed {} on the device, {n} on the host; inner steps {} and {steps}; largest α difference {:.3e} (point {})",
                rep.sizes, rep.inner_steps, worst.0, worst.1
            ));
        } else {
            out.matching += 1;
            out.max_alpha_diff = out.max_alpha_diff.max(worst.0);
            // The next iteration keeps W's support vectors: a point in one support only may
            // change W from there.
            let one_sided = (0..prob.len()).any(|i| (alpha.get(i) > 0.0) != (host.alpha[i] > 0.0));
            out.parted_at_tie = one_sided;
        }
        if rep.iterations < batch as u64 {
            break;
        }
    }
    out.alpha = alpha;
    Ok(out)
}
