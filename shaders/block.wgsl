// Kernel blocks of the sampled iterations (docs/METHODS.md):
//   out[r] = Σ_k w_k Q(i_r, j_k) = y_i Σ_k c_k (k(x_i, x_j) + 1) + [i = j_k] w_k / C,
// with c_k = w_k y_{j_k} uploaded by the host. Every row involved (the rows i and the weights'
// j) is resident as a dense f32 row in `xs` (slot s at xs[s * dpad ..]); `rl` and `wl` hold
// (global index, slot) pairs. Two entry points: `per_row` (one workgroup per output row, the
// weights split over its invocations and tree-summed: the |S| × |A| block of a draw) and
// `per_thread` (one invocation per row, all weights in a loop: a step's one or two columns on
// the tracked set). The host prepends common.wgsl (GT, wide) and exp_gt.

struct Job {
    nrows: u32,   // output rows
    nw: u32,      // weights
    row_off: u32, // first entry of this job in rl
    w_off: u32,   // first entry of this job in wl / wv
    out_off: u32, // first output entry
    dpad: u32,    // floats per resident row
    d: u32,       // features
    kind: u32,    // 0 linear, 1 rbf, 2 polynomial
    degree: u32,
    nx: u32,      // per_row: workgroups along x (rows = x + y * nx)
    pad0: u32,
    pad1: u32,
    gamma: vec2<f32>,
    coef0: vec2<f32>,
    inv_c: vec2<f32>,     // 1/C of the +1 rows
    inv_c_neg: vec2<f32>, // 1/C of the −1 rows (class weights)
}

@group(0) @binding(0) var<uniform> jb: Job;
@group(0) @binding(1) var<storage, read> xs: array<f32>;
@group(0) @binding(2) var<storage, read> ylab: array<f32>;
@group(0) @binding(3) var<storage, read> rl: array<vec2<u32>>;
@group(0) @binding(4) var<storage, read> wl: array<vec2<u32>>;
@group(0) @binding(5) var<storage, read> wv: array<GT>;
@group(0) @binding(6) var<storage, read_write> out: array<GT>;

// k(x_a, x_b) for resident slots a and b.
fn kval(sa: u32, sb: u32) -> GT {
    let a = sa * jb.dpad;
    let b = sb * jb.dpad;
    var acc = GT(0.0);
    if (jb.kind == 1u) {
        for (var f = 0u; f < jb.d; f++) {
            let t = GT(xs[a + f]) - GT(xs[b + f]);
            acc = fma(t, t, acc);
        }
        return exp_gt(-wide(jb.gamma) * acc);
    }
    for (var f = 0u; f < jb.d; f++) {
        acc = fma(GT(xs[a + f]), GT(xs[b + f]), acc);
    }
    if (jb.kind == 2u) {
        let base = wide(jb.gamma) * acc + wide(jb.coef0);
        var v = GT(1.0);
        for (var e = 0u; e < jb.degree; e++) {
            v = v * base;
        }
        return v;
    }
    if (jb.kind == 3u) {
        return tanh_gt(wide(jb.gamma) * acc + wide(jb.coef0));
    }
    return acc;
}

// Weight k's contribution to row i (slot si), before the factor y_i.
fn term(i: u32, si: u32, k: u32) -> GT {
    let w = wl[jb.w_off + k];
    let c = wv[jb.w_off + k];
    var t = c * (kval(si, w.y) + GT(1.0));
    if (w.x == i) {
        // y_i · c_i / C = w_i / C since y_i² = 1.
        t += c * row_inv_c(select(jb.inv_c_neg, jb.inv_c, ylab[i] > 0.0), ylab[i]);
    }
    return t;
}

var<workgroup> red: array<GT, 256>;

@compute @workgroup_size(256)
fn per_row(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) t: u32,
) {
    // Uniform across the workgroup: every invocation reaches the barriers.
    let r = wid.x + wid.y * jb.nx;
    var acc = GT(0.0);
    var i = 0u;
    if (r < jb.nrows) {
        let ri = rl[jb.row_off + r];
        i = ri.x;
        for (var k = t; k < jb.nw; k += 256u) {
            acc += term(i, ri.y, k);
        }
    }
    red[t] = acc;
    workgroupBarrier();
    for (var s = 128u; s > 0u; s = s >> 1u) {
        if (t < s) {
            red[t] = red[t] + red[t + s];
        }
        workgroupBarrier();
    }
    if (t == 0u && r < jb.nrows) {
        out[jb.out_off + r] = GT(label_of(ylab[i])) * red[0];
    }
}

@compute @workgroup_size(256)
fn per_thread(@builtin(global_invocation_id) gid: vec3<u32>) {
    let r = gid.x + gid.y * jb.nx * 256u;
    if (r >= jb.nrows) {
        return;
    }
    let ri = rl[jb.row_off + r];
    var acc = GT(0.0);
    for (var k = 0u; k < jb.nw; k++) {
        acc += term(ri.x, ri.y, k);
    }
    out[jb.out_off + r] = GT(label_of(ylab[ri.x])) * acc;
}
