// Up to BK kernel columns in one pass over a chunk of rows: each invocation reads its row once
// and computes its entry of every column of the batch:
//   Q_ij = y_i y_j (k(x_i, x_j) + 1) + [i = j] / C        (docs/METHODS.md)
// The host prepends common.wgsl, kernel.wgsl and one of the outputs — column_batch_slots.wgsl
// (BK = 4 columns written into cache slots bound at dynamic offsets) or column_batch_tile.wgsl
// (BK = 16 columns written into one tile buffer, copied into their slots afterwards) — each
// defining BK and `store(c, i, v)`; and appends exactly one of column_batch_dense.wgsl /
// column_batch_csr.wgsl, which define `row_values(lr, i)` = the squared distances (rbf) or dot
// products (otherwise) between the chunk's stored row lr and the batch's query rows, in the
// same order of operations as column_dense.wgsl / column_csr.wgsl, so every entry is the number
// the single-column shader writes.
//
// Params: n = columns in the batch (1..BK), q_off = the first query row, pad1 = the query rows'
// stride, out_off = the batch's per-column scalars in the query buffer: for column c, four
// words at out_off + 4c: j (bits), y_j, ‖x_j‖² as an (hi, lo) pair.

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> norms: array<GT>;
@group(0) @binding(2) var<storage, read> ylab: array<f32>;
@group(0) @binding(3) var<storage, read> query: array<f32>;

struct Chunk {
    r0: u32,
    n: u32,
    nwg: u32,
    stride: u32,
    mapped: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}
@group(1) @binding(0) var<uniform> chunk: Chunk;

fn stored_row(li: u32) -> u32 {
    if (chunk.mapped != 0u) {
        return rmap[li];
    }
    return li;
}

fn meta_j(c: u32) -> u32 {
    return bitcast<u32>(query[p.out_off + 4u * c]);
}

fn meta_y(c: u32) -> f32 {
    return query[p.out_off + 4u * c + 1u];
}

fn meta_norm(c: u32) -> GT {
    return GT(query[p.out_off + 4u * c + 2u]) + GT(query[p.out_off + 4u * c + 3u]);
}

fn query_at(c: u32, f: u32) -> f32 {
    return query[p.q_off + c * p.pad1 + f];
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let stride = chunk.nwg * WG;
    let bias = select(GT(1.0), GT(0.0), (p.flags & F_NO_BIAS) != 0u);
    for (var li = gid.x; li < chunk.n; li += stride) {
        let i = chunk.r0 + li;
        let r = row_values(stored_row(li), i);
        for (var c = 0u; c < BK; c++) {
            if (c < p.n) {
                var v = GT(label_of(ylab[i]) * meta_y(c)) * (kernel_value(r[c]) + bias);
                if (i == meta_j(c)) {
                    v += inv_c_of(ylab[i]);
                }
                store(c, i, v);
            }
        }
    }
}
