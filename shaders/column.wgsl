// Kernel column Q[:, j] over one chunk of rows, written into a column-cache slot:
//   Q_ij = y_i y_j (k(x_i, x_j) + 1) + [i = j] / C        (docs/METHODS.md)
// The host prepends common.wgsl and kernel.wgsl, and appends exactly one of
// column_dense.wgsl / column_csr.wgsl, which define `row_value(lr) -> GT` = the squared
// distance (rbf) or the dot product (otherwise) between the chunk's stored row lr and the query x_j, and the row map `rmap`. A backend over a
// subset of the stored rows (a fold, a pair: data uploaded once) maps its row li to the
// chunk's row rmap[li].

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> norms: array<GT>;
@group(0) @binding(2) var<storage, read> ylab: array<f32>;
@group(0) @binding(3) var<storage, read> query: array<f32>;
@group(0) @binding(4) var<storage, read_write> col: array<GT>;

struct Chunk {
    r0: u32,     // first problem row of the chunk
    n: u32,      // problem rows in the chunk
    nwg: u32,    // workgroups dispatched for it
    stride: u32, // rows stored in the chunk (dense: the feature stride)
    mapped: u32, // 1: problem row li is stored row rmap[li]
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

fn stored_row(li: u32) -> u32 {
    if (chunk.mapped != 0u) {
        return rmap[li];
    }
    return li;
}
@group(1) @binding(0) var<uniform> chunk: Chunk;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let stride = chunk.nwg * WG;
    for (var li = gid.x; li < chunk.n; li += stride) {
        let i = chunk.r0 + li;
        let bias = select(GT(1.0), GT(0.0), (p.flags & F_NO_BIAS) != 0u);
        var v = GT(label_of(ylab[i]) * p.yj) * (kernel_value(row_value(stored_row(li), i)) + bias);
        if (i == p.j) {
            v += inv_c_of(ylab[i]);
        }
        col[i] = v;
    }
}
