// CSR chunks for resident.wgsl: point k of W's row (the chunk's stored row lr) into wq.
fn load_query(k: u32, lr: u32) {
    for (var f = 0u; f < r.dpad; f++) {
        wq[k * r.dpad + f] = 0.0;
    }
    for (var e = indptr[lr]; e < indptr[lr + 1u]; e++) {
        let f = cols[e];
        if (f < r.dpad) {
            wq[k * r.dpad + f] = vals[e];
        }
    }
}
