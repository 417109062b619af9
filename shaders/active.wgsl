// First stage of the active-set reduction over the uploaded list (index, α): argmax of g
// (ties to the lower point index; the list is in no particular order), αᵀg and αᵀg⁻.

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> g: array<GT>;
@group(0) @binding(2) var<storage, read> gp: array<GT>;
@group(0) @binding(3) var<storage, read> lidx: array<u32>;
@group(0) @binding(4) var<storage, read> lw: array<GT>;
@group(0) @binding(5) var<storage, read_write> part_v: array<GT>;
@group(0) @binding(6) var<storage, read_write> part_i: array<u32>;

var<workgroup> wv: array<GT, 256>;
var<workgroup> wi: array<u32, 256>;
var<workgroup> ws: array<GT, 256>;
var<workgroup> wp: array<GT, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let t = lid.x;
    let stride = p.nwg * WG;
    let prev = (p.flags & F_PREV) != 0u;
    var bv = GT(-BIG);
    var bi = NONE;
    var sg = GT(0.0);
    var sp = GT(0.0);
    for (var k = wid.x * WG + t; k < p.n; k += stride) {
        let i = lidx[k];
        let w = lw[k];
        let v = g[i];
        if (better_max(v, i, bv, bi)) {
            bv = v;
            bi = i;
        }
        sg += w * v;
        if (prev) {
            sp += w * gp[i];
        }
    }
    wv[t] = bv;
    wi[t] = bi;
    ws[t] = sg;
    wp[t] = sp;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (t < s) {
            if (better_max(wv[t + s], wi[t + s], wv[t], wi[t])) {
                wv[t] = wv[t + s];
                wi[t] = wi[t + s];
            }
            ws[t] += ws[t + s];
            wp[t] += wp[t + s];
        }
        workgroupBarrier();
    }
    if (t == 0u) {
        part_v[3u * wid.x] = wv[0];
        part_v[3u * wid.x + 1u] = ws[0];
        part_v[3u * wid.x + 2u] = wp[0];
        part_i[wid.x] = wi[0];
    }
}
