//! The stopping rules (docs/METHODS.md), below both the solver loop and the backends: the
//! loop ends a run with them, and the sampled iterations' safeguard (a backend) asks the same
//! question of its own estimates, so neither layer reaches into the other for it.

/// Which stopping rule ends a run (docs/METHODS.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum StopRule {
    /// The duality gap: Δ = 2f − min g ≤ ε (and ≤ rel_eps · 2f).
    #[default]
    Gap,
    /// CVM's relative rule for normalized kernels (constant κ = Q_ii): the farthest point's
    /// squared distance to the ball's centre κ − 2g_s + 2f ≤ (1+ε)² R², R² = κ − 2f.
    Meb,
}

/// Whether a duality gap `gap` at αᵀg = `alpha_g` meets the stop rule (κ: the MEB rule's
/// Q_ii). Shared by the solver and the sampled iterations' safeguard.
pub fn stop_rule_met(
    rule: StopRule,
    eps: f64,
    rel_eps: f64,
    gap: f64,
    alpha_g: f64,
    kappa: f64,
) -> bool {
    gap <= allowed_gap(rule, eps, rel_eps, alpha_g, kappa)
}

/// The largest duality gap the stop rule accepts at αᵀg = `alpha_g`.
pub fn allowed_gap(rule: StopRule, eps: f64, rel_eps: f64, alpha_g: f64, kappa: f64) -> f64 {
    match rule {
        // |2f|: an indefinite kernel (sigmoid) can make f negative.
        // (A NaN bound accepts nothing.)
        StopRule::Gap => {
            let rel = rel_eps * alpha_g.abs();
            if eps <= rel { eps } else { rel }
        }
        // dist² − R² = 2Δ ≤ ((1+ε)² − 1) R²
        StopRule::Meb => 0.5 * (((1.0 + eps).powi(2) - 1.0) * (kappa - alpha_g)),
    }
}
