// The first stage of argmin over all points, shared by update.wgsl and update_list.wgsl: each
// workgroup's invocations pool their (min g, lowest index) and the first writes the
// workgroup's partial. The final pass (final.wgsl) combines the partials.

var<workgroup> wv: array<GT, 256>;
var<workgroup> wi: array<u32, 256>;

fn write_partial(t: u32, w: u32, bv: GT, bi: u32) {
    wv[t] = bv;
    wi[t] = bi;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (t < s && better_min(wv[t + s], wi[t + s], wv[t], wi[t])) {
            wv[t] = wv[t + s];
            wi[t] = wi[t + s];
        }
        workgroupBarrier();
    }
    if (t == 0u) {
        part_v[w] = wv[0];
        part_i[w] = wi[0];
    }
}
