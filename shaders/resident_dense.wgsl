// Dense chunks for resident.wgsl: point k of W's row (the chunk's stored row lr) into wq.
fn load_query(k: u32, lr: u32) {
    for (var f = 0u; f < r.dpad; f++) {
        var x = 0.0;
        if (f < p.d) {
            x = xd[f * chunk.stride + lr];
        }
        wq[k * r.dpad + f] = x;
    }
}
