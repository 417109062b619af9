// The working set's toward candidates without reading g back whole: every row i < p.m with
// g_i ≤ bound (p.scale, an (hi, lo) pair) takes a slot k from the counter cand[0] and, while
// k < p.n (the capacity), writes (bits of g_i, i) at cand[1 + 2k], cand[2 + 2k]. The host reads
// the counter and the slots back and selects from them; the order rows land in is irrelevant
// there (it sorts by value, then index). f32 gradients only (GT = f32).

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> g: array<GT>;
@group(0) @binding(2) var<storage, read_write> cand: array<atomic<u32>>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let bound = wide(p.scale);
    let stride = p.nwg * WG;
    for (var i = gid.x; i < p.m; i += stride) {
        let v = g[i];
        if (v <= bound) {
            let k = atomicAdd(&cand[0], 1u);
            if (k < p.n) {
                atomicStore(&cand[1u + 2u * k], bitcast<u32>(f32(v)));
                atomicStore(&cand[2u + 2u * k], i);
            }
        }
    }
}
