// CSR rows: indptr is relative to the chunk's first non-zero. RBF from the norms:
// ‖x_i‖² + ‖x_j‖² − 2⟨x_i, x_j⟩ (clamped at 0 by the caller); i is the problem row.
@group(1) @binding(1) var<storage, read> indptr: array<u32>;
@group(1) @binding(2) var<storage, read> cols: array<u32>;
@group(1) @binding(3) var<storage, read> vals: array<f32>;
@group(1) @binding(4) var<storage, read> rmap: array<u32>;

fn row_value(lr: u32, i: u32) -> GT {
    var acc = GT(0.0);
    for (var k = indptr[lr]; k < indptr[lr + 1u]; k++) {
        acc = fma(GT(vals[k]), GT(query[p.q_off + cols[k]]), acc);
    }
    if (p.kind == 1u) {
        return norms[i] + wide(p.normj) - GT(2.0) * acc;
    }
    return acc;
}
