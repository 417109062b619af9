// Kernel column Q[:, j] over one chunk of rows, written into a column-cache slot:
//   Q_ij = y_i y_j (k(x_i, x_j) + 1) + [i = j] / C        (ALGORITHMS.md §1)
// The host prepends common.wgsl and exactly one of column_dense.wgsl / column_csr.wgsl, which
// define `row_value(li) -> GT` = the squared distance (rbf) or the dot product (otherwise)
// between chunk row li and the query x_j.

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> norms: array<GT>;
@group(0) @binding(2) var<storage, read> ylab: array<f32>;
@group(0) @binding(3) var<storage, read> query: array<f32>;
@group(0) @binding(4) var<storage, read_write> col: array<GT>;

struct Chunk {
    r0: u32,  // first row of the chunk
    n: u32,   // rows in the chunk
    nwg: u32, // workgroups dispatched for it
    pad: u32,
}
@group(1) @binding(0) var<uniform> chunk: Chunk;

fn kernel_value(i: u32, r: GT) -> GT {
    if (p.kind == 1u) {
        return exp_gt(-wide(p.gamma) * max(r, GT(0.0)));
    }
    if (p.kind == 2u) {
        let b = wide(p.gamma) * r + wide(p.coef0);
        var v = GT(1.0);
        for (var e = 0u; e < p.degree; e++) {
            v = v * b;
        }
        return v;
    }
    return r;
}

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let stride = chunk.nwg * WG;
    for (var li = gid.x; li < chunk.n; li += stride) {
        let i = chunk.r0 + li;
        let bias = select(GT(1.0), GT(0.0), (p.flags & F_NO_BIAS) != 0u);
        var v = GT(ylab[i] * p.yj) * (kernel_value(i, row_value(li)) + bias);
        if (i == p.j) {
            v += wide(p.inv_c);
        }
        col[i] = v;
    }
}
