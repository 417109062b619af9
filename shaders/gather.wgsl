// out[out_off + k] = src[idx[k]] for k < p.n, src = g, g⁻ (SRC_PREV) or a cached column
// (SRC_COL); several gathers of one index list share one submit at different out_off.

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> g: array<GT>;
@group(0) @binding(2) var<storage, read> gp: array<GT>;
@group(0) @binding(3) var<storage, read> col: array<GT>;
@group(0) @binding(4) var<storage, read> gidx: array<u32>;
@group(0) @binding(5) var<storage, read_write> out: array<GT>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let stride = p.nwg * WG;
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
