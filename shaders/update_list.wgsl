// The working set's gradient update in one pass, with the whole column cache bound:
//   g_new = scale·g + Σ_k c_k·Q[:, j_k]
// over the list of p.n entries (cache slot of column j_k, c_k as an (hi, lo) pair of f32 bits),
// each term added in the list's order as update.wgsl adds its four, so the numbers are those of
// four-column passes over the same list; then the first stage of argmin (partials.wgsl).
// p.pad1 = the entries of one cache slot. Replaces q/4 dispatches of update.wgsl by one.

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> cache: array<GT>;
@group(0) @binding(2) var<storage, read_write> g: array<GT>;
@group(0) @binding(3) var<storage, read> list: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read_write> part_v: array<GT>;
@group(0) @binding(5) var<storage, read_write> part_i: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let t = lid.x;
    let stride = p.nwg * WG;
    let scale = wide(p.scale);
    var bv = GT(BIG);
    var bi = NONE;
    for (var i = wid.x * WG + t; i < p.m; i += stride) {
        var v = scale * g[i];
        for (var k = 0u; k < p.n; k++) {
            let e = list[k];
            let c = wide(vec2<f32>(bitcast<f32>(e.y), bitcast<f32>(e.z)));
            v += c * cache[e.x * p.pad1 + i];
        }
        g[i] = v;
        if (v < bv) {
            bv = v;
            bi = i;
        }
    }
    write_partial(t, wid.x, bv, bi);
}
