// Dense rows for column_batch.wgsl: as column_dense.wgsl, the row's features read once for
// every query of the batch.
@group(1) @binding(1) var<storage, read> xd: array<f32>;
@group(1) @binding(2) var<storage, read> rmap: array<u32>;

fn row_values(lr: u32, i: u32) -> array<GT, BK> {
    let n = chunk.stride;
    var acc: array<GT, BK>;
    for (var f = 0u; f < p.d; f++) {
        let x = GT(xd[f * n + lr]);
        for (var c = 0u; c < BK; c++) {
            if (c < p.n) {
                if (p.kind == 1u) {
                    let t = x - GT(query_at(c, f));
                    acc[c] = fma(t, t, acc[c]);
                } else {
                    acc[c] = fma(x, GT(query_at(c, f)), acc[c]);
                }
            }
        }
    }
    return acc;
}
