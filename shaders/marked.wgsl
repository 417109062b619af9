// First stage of the marked reduction (Backend::reduce_marked): with h_i = g_i + shift·y_i,
// each of the p.nwg workgroups strides over the rows and leaves three partials — argmin of h
// over rows marked LOW (bit 1), argmin over MID (bit 2), argmax over HIGH (bit 4) — at
// part_v/part_i[3·wid + 0, 1, 2]. Ties go to the lowest index. The shift is p.scale.

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> g: array<GT>;
@group(0) @binding(2) var<storage, read> ylab: array<f32>;
@group(0) @binding(3) var<storage, read> marks: array<u32>;
@group(0) @binding(4) var<storage, read_write> part_v: array<GT>;
@group(0) @binding(5) var<storage, read_write> part_i: array<u32>;

var<workgroup> lv: array<GT, 256>;
var<workgroup> li: array<u32, 256>;
var<workgroup> mv: array<GT, 256>;
var<workgroup> mi: array<u32, 256>;
var<workgroup> hv: array<GT, 256>;
var<workgroup> hi: array<u32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let t = lid.x;
    let stride = p.nwg * WG;
    let shift = wide(p.scale);
    var bl = GT(BIG);
    var bli = NONE;
    var bm = GT(BIG);
    var bmi = NONE;
    var bh = GT(-BIG);
    var bhi = NONE;
    for (var i = wid.x * WG + t; i < p.m; i += stride) {
        let mk = marks[i];
        if (mk == 0u) {
            continue;
        }
        let h = g[i] + shift * GT(ylab[i]);
        // i grows along the loop: a strict comparison keeps the lowest index on ties.
        if ((mk & 1u) != 0u && h < bl) {
            bl = h;
            bli = i;
        }
        if ((mk & 2u) != 0u && h < bm) {
            bm = h;
            bmi = i;
        }
        if ((mk & 4u) != 0u && h > bh) {
            bh = h;
            bhi = i;
        }
    }
    lv[t] = bl;
    li[t] = bli;
    mv[t] = bm;
    mi[t] = bmi;
    hv[t] = bh;
    hi[t] = bhi;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (t < s) {
            if (better_min(lv[t + s], li[t + s], lv[t], li[t])) {
                lv[t] = lv[t + s];
                li[t] = li[t + s];
            }
            if (better_min(mv[t + s], mi[t + s], mv[t], mi[t])) {
                mv[t] = mv[t + s];
                mi[t] = mi[t + s];
            }
            if (better_max(hv[t + s], hi[t + s], hv[t], hi[t])) {
                hv[t] = hv[t + s];
                hi[t] = hi[t + s];
            }
        }
        workgroupBarrier();
    }
    if (t == 0u) {
        part_v[3u * wid.x] = lv[0];
        part_i[3u * wid.x] = li[0];
        part_v[3u * wid.x + 1u] = mv[0];
        part_i[3u * wid.x + 1u] = mi[0];
        part_v[3u * wid.x + 2u] = hv[0];
        part_i[3u * wid.x + 2u] = hi[0];
    }
}
