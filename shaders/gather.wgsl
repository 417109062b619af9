// out[out_off + k] = src[idx[k]] for k < p.n, src = g, g⁻ (SRC_PREV) or a cached column
// (SRC_COL); several gathers of one index list share one submit at different out_off.
//
// SRC_BLOCK: the working set's block in one dispatch, `col` bound to the whole cache. The
// index list holds W (n = p.n entries), then the cache slots of W's columns; part 0 is g_W,
// part c ≥ 1 column c − 1 at the rows of W. Parts p.j .. p.j + p.q_off − 1 go to out[0..],
// n entries each; p.pad1 = the entries of one cache slot.

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> g: array<GT>;
@group(0) @binding(2) var<storage, read> gp: array<GT>;
@group(0) @binding(3) var<storage, read> col: array<GT>;
@group(0) @binding(4) var<storage, read> gidx: array<u32>;
@group(0) @binding(5) var<storage, read_write> out: array<GT>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let stride = p.nwg * WG;
    if ((p.flags & SRC_BLOCK) != 0u) {
        let total = p.q_off * p.n;
        for (var k = gid.x; k < total; k += stride) {
            let part = p.j + k / p.n;
            let i = gidx[k % p.n];
            if (part == 0u) {
                out[k] = g[i];
            } else {
                out[k] = col[gidx[p.n + part - 1u] * p.pad1 + i];
            }
        }
        return;
    }
    for (var k = gid.x; k < p.n; k += stride) {
        let i = gidx[k];
        let o = p.out_off + k;
        if ((p.flags & SRC_COL) != 0u) {
            out[o] = col[i];
        } else if ((p.flags & SRC_PREV) != 0u) {
            out[o] = gp[i];
        } else {
            out[o] = g[i];
        }
    }
}
