// Second stage: one workgroup combines the p.nwg argmin partials of update.wgsl and the
// p.nwg2 partials of active.wgsl into res_v = (g_s, g_v, αᵀg, αᵀg⁻), res_i = (s, v).

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> min_v: array<GT>;
@group(0) @binding(2) var<storage, read> min_i: array<u32>;
@group(0) @binding(3) var<storage, read> act_v: array<GT>;
@group(0) @binding(4) var<storage, read> act_i: array<u32>;
@group(0) @binding(5) var<storage, read_write> res_v: array<GT>;
@group(0) @binding(6) var<storage, read_write> res_i: array<u32>;

var<workgroup> av: array<GT, 256>;
var<workgroup> ai: array<u32, 256>;
var<workgroup> bv: array<GT, 256>;
var<workgroup> bi: array<u32, 256>;
var<workgroup> ws: array<GT, 256>;
var<workgroup> wp: array<GT, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3<u32>) {
    let t = lid.x;
    var mv = GT(BIG);
    var mi = NONE;
    for (var k = t; k < p.nwg; k += WG) {
        if (better_min(min_v[k], min_i[k], mv, mi)) {
            mv = min_v[k];
            mi = min_i[k];
        }
    }
    var xv = GT(-BIG);
    var xi = NONE;
    var sg = GT(0.0);
    var sp = GT(0.0);
    for (var k = t; k < p.nwg2; k += WG) {
        if (better_max(act_v[3u * k], act_i[k], xv, xi)) {
            xv = act_v[3u * k];
            xi = act_i[k];
        }
        sg += act_v[3u * k + 1u];
        sp += act_v[3u * k + 2u];
    }
    av[t] = mv;
    ai[t] = mi;
    bv[t] = xv;
    bi[t] = xi;
    ws[t] = sg;
    wp[t] = sp;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (t < s) {
            if (better_min(av[t + s], ai[t + s], av[t], ai[t])) {
                av[t] = av[t + s];
                ai[t] = ai[t + s];
            }
            if (better_max(bv[t + s], bi[t + s], bv[t], bi[t])) {
                bv[t] = bv[t + s];
                bi[t] = bi[t + s];
            }
            ws[t] += ws[t + s];
            wp[t] += wp[t + s];
        }
        workgroupBarrier();
    }
    if (t == 0u) {
        res_v[0] = av[0];
        res_v[1] = bv[0];
        res_v[2] = ws[0];
        res_v[3] = wp[0];
        res_i[0] = ai[0];
        res_i[1] = bi[0];
    }
}
