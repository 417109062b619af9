// The kernel value from the squared distance r (rbf) or the dot product r (otherwise), as
// Params describes the kernel; shared by the column programs (column.wgsl, column_batch.wgsl).

fn kernel_value(r: GT) -> GT {
    if (p.kind == 1u) {
        return exp_gt(-wide(p.gamma) * max(r, GT(0.0)));
    }
    if (p.kind == 2u) {
        let b = wide(p.gamma) * r + wide(p.coef0);
        var v = GT(1.0);
        for (var e = 0u; e < p.degree; e++) {
            v = v * b;
        }
        return v;
    }
    if (p.kind == 3u) {
        return tanh_gt(wide(p.gamma) * r + wide(p.coef0));
    }
    return r;
}

// 1/C_i of a row with signed cost yw (the diagonal of Q; two values under class weights,
// divided by the row's weight).
fn inv_c_of(yw: f32) -> GT {
    return row_inv_c(select(p.inv_c_neg, p.inv_c, yw > 0.0), yw);
}
