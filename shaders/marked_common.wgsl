// Shared by marked.wgsl and marked_final.wgsl (the host prepends it): the bindings, the
// per-invocation (low, mid, high) candidates in workgroup memory, and their tree reduction.

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

// Stores invocation t's candidates, reduces the workgroup's, and writes the winners at
// part_v/part_i[o + 0, 1, 2] (from invocation 0).
fn reduce_and_write(t: u32, bl: GT, bli: u32, bm: GT, bmi: u32, bh: GT, bhi: u32, o: u32) {
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
        part_v[o] = lv[0];
        part_i[o] = li[0];
        part_v[o + 1u] = mv[0];
        part_i[o + 1u] = mi[0];
        part_v[o + 2u] = hv[0];
        part_i[o + 2u] = hi[0];
    }
}
