// CSR rows for column_batch.wgsl: as column_csr.wgsl, the row's non-zeros read once for every
// query of the batch.
@group(1) @binding(1) var<storage, read> indptr: array<u32>;
@group(1) @binding(2) var<storage, read> cols: array<u32>;
@group(1) @binding(3) var<storage, read> vals: array<f32>;
@group(1) @binding(4) var<storage, read> rmap: array<u32>;

fn row_values(lr: u32, i: u32) -> array<GT, BK> {
    var acc: array<GT, BK>;
    for (var k = indptr[lr]; k < indptr[lr + 1u]; k++) {
        let v = GT(vals[k]);
        let f = cols[k];
        for (var c = 0u; c < BK; c++) {
            if (c < p.n) {
                acc[c] = fma(v, GT(query_at(c, f)), acc[c]);
            }
        }
    }
    if (p.kind == 1u) {
        for (var c = 0u; c < BK; c++) {
            acc[c] = norms[i] + meta_norm(c) - GT(2.0) * acc[c];
        }
    }
    return acc;
}
