// Second stage of the marked reduction: one workgroup combines the p.nwg triples of partials
// left by marked.wgsl and writes (low, mid, high) at part_v/part_i[3·p.nwg + 0, 1, 2].
// Same bindings as marked.wgsl.

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
fn main(@builtin(local_invocation_id) lid: vec3<u32>) {
    let t = lid.x;
    var bl = GT(BIG);
    var bli = NONE;
    var bm = GT(BIG);
    var bmi = NONE;
    var bh = GT(-BIG);
    var bhi = NONE;
    for (var k = t; k < p.nwg; k += WG) {
        if (better_min(part_v[3u * k], part_i[3u * k], bl, bli)) {
            bl = part_v[3u * k];
            bli = part_i[3u * k];
        }
        if (better_min(part_v[3u * k + 1u], part_i[3u * k + 1u], bm, bmi)) {
            bm = part_v[3u * k + 1u];
            bmi = part_i[3u * k + 1u];
        }
        if (better_max(part_v[3u * k + 2u], part_i[3u * k + 2u], bh, bhi)) {
            bh = part_v[3u * k + 2u];
            bhi = part_i[3u * k + 2u];
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
        let o = 3u * p.nwg;
        part_v[o] = lv[0];
        part_i[o] = li[0];
        part_v[o + 1u] = mv[0];
        part_i[o + 1u] = mi[0];
        part_v[o + 2u] = hv[0];
        part_i[o + 2u] = hi[0];
    }
}
