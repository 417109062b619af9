// Dense rows, stored feature-major within the chunk (x[f * stride + lr]) so that neighbouring
// invocations read neighbouring words. RBF uses Σ (x_f − q_f)² directly (no cancellation).
@group(1) @binding(1) var<storage, read> xd: array<f32>;
@group(1) @binding(2) var<storage, read> rmap: array<u32>;

fn row_value(lr: u32, i: u32) -> GT {
    let n = chunk.stride;
    var acc = GT(0.0);
    if (p.kind == 1u) {
        for (var f = 0u; f < p.d; f++) {
            let t = GT(xd[f * n + lr]) - GT(query[p.q_off + f]);
            acc = fma(t, t, acc);
        }
    } else {
        for (var f = 0u; f < p.d; f++) {
            acc = fma(GT(xd[f * n + lr]), GT(query[p.q_off + f]), acc);
        }
    }
    return acc;
}
