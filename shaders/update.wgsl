// The fused gradient update and the first stage of argmin over all points:
//   g_new = scale·g + ca·Q[:, a] + cb·Q[:, b] + cc·Q[:, c] + cd·Q[:, d] + cp·g⁻
// (then g⁻ ← g_old if F_ROTATE), each term added in that order, so four columns in one pass
// give the numbers of two passes of two (scale 1 in the second: 1·x = x).
// Each of the p.nwg workgroups strides over the rows and leaves its (min g, lowest index)
// (partials.wgsl, which the host prepends).

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> col_a: array<GT>;
@group(0) @binding(2) var<storage, read> col_b: array<GT>;
@group(0) @binding(3) var<storage, read_write> g: array<GT>;
@group(0) @binding(4) var<storage, read_write> gp: array<GT>;
@group(0) @binding(5) var<storage, read_write> part_v: array<GT>;
@group(0) @binding(6) var<storage, read_write> part_i: array<u32>;
@group(0) @binding(7) var<storage, read> col_c: array<GT>;
@group(0) @binding(8) var<storage, read> col_d: array<GT>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let t = lid.x;
    let stride = p.nwg * WG;
    let scale = wide(p.scale);
    let ca = wide(p.ca);
    let cb = wide(p.cb);
    let cp = wide(p.cp);
    let cc = wide(p.cc);
    let cd = wide(p.cd);
    var bv = GT(BIG);
    var bi = NONE;
    for (var i = wid.x * WG + t; i < p.m; i += stride) {
        var v = g[i];
        if ((p.flags & F_WRITE) != 0u) {
            let old = v;
            v = scale * old;
            if ((p.flags & F_COL_A) != 0u) {
                v += ca * col_a[i];
            }
            if ((p.flags & F_COL_B) != 0u) {
                v += cb * col_b[i];
            }
            if ((p.flags & F_COL_C) != 0u) {
                v += cc * col_c[i];
            }
            if ((p.flags & F_COL_D) != 0u) {
                v += cd * col_d[i];
            }
            if ((p.flags & F_PREV) != 0u) {
                v += cp * gp[i];
                if ((p.flags & F_ROTATE) != 0u) {
                    gp[i] = old;
                }
            }
            g[i] = v;
        }
        if (v < bv) {
            bv = v;
            bi = i;
        }
    }
    write_partial(t, wid.x, bv, bi);
}
