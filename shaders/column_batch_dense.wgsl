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

// RB rows at once (column_batch.wgsl): each query value loaded once for all of them, the same
// operations per entry as row_values.
fn rows_values(l0: u32, step: u32) -> array<array<GT, BK>, RB> {
    let n = chunk.stride;
    var lr: array<u32, RB>;
    for (var k = 0u; k < RB; k++) {
        lr[k] = stored_row(min(l0 + k * step, chunk.n - 1u));
    }
    var acc: array<array<GT, BK>, RB>;
    for (var f = 0u; f < p.d; f++) {
        var x: array<GT, RB>;
        for (var k = 0u; k < RB; k++) {
            x[k] = GT(xd[f * n + lr[k]]);
        }
        for (var c = 0u; c < BK; c++) {
            if (c < p.n) {
                let qv = GT(query_at(c, f));
                for (var k = 0u; k < RB; k++) {
                    if (p.kind == 1u) {
                        let t = x[k] - qv;
                        acc[k][c] = fma(t, t, acc[k][c]);
                    } else {
                        acc[k][c] = fma(x[k], qv, acc[k][c]);
                    }
                }
            }
        }
    }
    return acc;
}
