// First stage of the marked reduction (Backend::reduce_marked): with h_i = g_i + shift·y_i,
// each of the p.nwg workgroups strides over the rows and leaves three partials — argmin of h
// over rows marked LOW (bit 1), argmin over MID (bit 2), argmax over HIGH (bit 4) — at
// part_v/part_i[3·wid + 0, 1, 2]. Ties go to the lowest index. The shift is p.scale.

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
        let h = g[i] + shift * GT(label_of(ylab[i]));
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
    reduce_and_write(t, bl, bli, bm, bmi, bh, bhi, 3u * wid.x);
}
