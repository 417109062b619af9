// tanh(b) = sign(b)·(1 − t)/(1 + t) with t = e^{−2|b|} ∈ (0, 1]: exp_gt's argument stays ≤ 0,
// as its f64 form needs. The sigmoid kernel's value.
fn tanh_gt(b: GT) -> GT {
    let t = exp_gt(-GT(2.0) * abs(b));
    return sign(b) * (GT(1.0) - t) / (GT(1.0) + t);
}
