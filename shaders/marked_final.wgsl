// Second stage of the marked reduction: one workgroup combines the p.nwg triples of partials
// left by marked.wgsl and writes (low, mid, high) at part_v/part_i[3·p.nwg + 0, 1, 2].
// Bindings and the tree reduction: marked_common.wgsl.

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
    reduce_and_write(t, bl, bli, bm, bmi, bh, bhi, 3u * p.nwg);
}
