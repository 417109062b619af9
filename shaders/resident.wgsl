// The working-set loop on the device (src/backend/gpu/resident.rs): every pass of one outer
// iteration of ws, with no value travelling to the host inside a batch of iterations. The
// host prepends common.wgsl, the exponential, tanh.wgsl and kernel.wgsl, and appends one of
// column_batch_dense.wgsl / column_batch_csr.wgsl (`row_values`: a row against BK query rows)
// and one of resident_dense.wgsl / resident_csr.wgsl (`load_query`: a point's row into wq).
//
// One outer iteration, each entry point one dispatch, in this order:
//   begin     keep the previous W's support vectors (at most q/2, in W's order: the newest
//             first), free the other slots, ask for ⌈(q − kept)/2⌉ toward and the rest away
//             candidates;
//   radix ×4, pick ×4
//             the smallest keys of g over the points not kept (toward) and of −g over the
//             support not kept (away), eight bits a round (keys: f32 values ordered as u32);
//   count, place
//             both selections compacted in the order of the points (each workgroup a
//             contiguous block of rows, so the lists are the same whatever the timing);
//   assemble  W = toward, the away candidates toward did not take, then the kept points (so
//             the next iteration keeps the newest); the new points' slots;
//   queries   the new points' rows as dense f32 (per data chunk);
//   columns   Q[:, W_k] for the new points into their slots (per data chunk);
//   gather    Q_WW, g_W, α_W;
//   inner     SWAP-2o pairwise steps on the block in one workgroup (src/solver/block_steps.rs's
//             rule) to a tenth of the block's gap, then α_W and the record of W for the host;
//   update    g += Σ_k Δα_k Q[:, W_k], with the partials of min g, max_{α>0} g and Σ α_i g_i;
//   finish    the reduction, the stop rule, the iteration's status record.
// Once the stop rule holds (ctl[C_DONE]) every later pass of the batch returns at once.

struct Resident {
    m: u32,          // points
    q: u32,          // largest W (≤ 1024 = WG · PER)
    slot: u32,       // entries per cache slot
    nwg: u32,        // workgroups of the passes over the rows
    block_rows: u32, // rows per workgroup in count and place (⌈m / nwg⌉)
    kmax: u32,       // status records per batch
    dpad: u32,       // entries per query row in wq
    pad0: u32,
    eps: vec2<f32>,
    rel_eps: vec2<f32>,
}

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<uniform> r: Resident;
@group(0) @binding(2) var<storage, read> norms: array<GT>;
@group(0) @binding(3) var<storage, read> ylab: array<f32>;
@group(0) @binding(4) var<storage, read_write> g: array<GT>;
@group(0) @binding(5) var<storage, read_write> alpha: array<GT>;
@group(0) @binding(6) var<storage, read_write> cache: array<GT>;
@group(0) @binding(7) var<storage, read_write> wl: array<u32>;
@group(0) @binding(8) var<storage, read_write> blk: array<GT>;
@group(0) @binding(9) var<storage, read_write> ctl: array<atomic<u32>>;
@group(0) @binding(10) var<storage, read_write> sv: array<GT>;
@group(0) @binding(11) var<storage, read_write> mark: array<u32>;
@group(0) @binding(12) var<storage, read_write> stat_u: array<u32>;
@group(0) @binding(13) var<storage, read_write> stat_v: array<GT>;
@group(0) @binding(14) var<storage, read_write> wq: array<f32>;

struct Chunk {
    r0: u32,
    n: u32,
    nwg: u32,
    stride: u32,
    mapped: u32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}
@group(1) @binding(0) var<uniform> chunk: Chunk;

fn stored_row(li: u32) -> u32 {
    if (chunk.mapped != 0u) {
        return rmap[li];
    }
    return li;
}

// ctl: the loop's counters (u32; the host's resident.rs names the same offsets).
const C_DONE: u32 = 0u;    // the stop rule held: the passes that follow do nothing
const C_N: u32 = 1u;       // |W|
const C_KEPT: u32 = 2u;    // points of W kept from the previous W
const C_LOCAL: u32 = 3u;   // status records written in this batch
const C_ITER: u32 = 4u;    // outer iterations since the loop was set up
const C_STEPS: u32 = 5u;   // inner steps of this iteration
const C_ROUND: u32 = 6u;   // radix round (0..3)
const C_PREF_T: u32 = 7u;  // key prefix found so far (toward, away)
const C_PREF_A: u32 = 8u;
const C_NEED_T: u32 = 9u;  // candidates still to take at the prefix (toward, away)
const C_NEED_A: u32 = 10u;
const C_GOT_T: u32 = 11u;  // candidates selected (toward, away)
const C_GOT_A: u32 = 12u;
const C_FRESH: u32 = 13u;  // points of W new in this iteration (W's first ones)
const C_HIST: u32 = 32u;   // 2 × 256 bins
const C_CNT: u32 = 544u;   // 4 counts per workgroup of count/place (≤ 1024 workgroups)
const C_PIDX: u32 = 4640u; // argmin and argmax partial indices (2 per workgroup)

// sv: scalar values (GT).
const V_GS: u32 = 0u;
const V_GV: u32 = 1u;
const V_AG: u32 = 2u;
const V_PART: u32 = 8u;    // min, max, sum partials (3 per workgroup)

// Status record: RU u32 and RV values per iteration, then W and α_W per iteration.
const RU: u32 = 8u;
const RV: u32 = 4u;
const PER: u32 = 4u;       // entries of a q ≤ 1024 list per invocation
const BK: u32 = 8u;        // columns per workgroup of `columns`

// wl offsets are multiples of q.
fn w_at(k: u32) -> u32 { return wl[k]; }
fn slot_at(k: u32) -> u32 { return wl[r.q + k]; }
fn free_at(k: u32) -> u32 { return wl[2u * r.q + k]; }
// blk: Q_WW (n × n, row-major), then g_W, α_W, and α_W's start (Δα after inner).
fn b_g() -> u32 { return r.q * r.q; }
fn b_a() -> u32 { return r.q * r.q + r.q; }
fn b_a0() -> u32 { return r.q * r.q + 2u * r.q; }

fn done() -> bool {
    return atomicLoad(&ctl[C_DONE]) != 0u;
}

// f32 values as u32 keys in the same order (−0 below +0).
fn key_of(x: GT) -> u32 {
    let b = bitcast<u32>(f32(x));
    return select(b | 0x80000000u, ~b, (b & 0x80000000u) != 0u);
}

fn is_nan(x: GT) -> bool {
    return !(x == x);
}

// ---- workgroup scan of pairs of counts --------------------------------------------------

var<workgroup> sc: array<vec2<u32>, 256>;

// Exclusive prefix of x over the workgroup (xy) and the workgroup's total (zw).
fn scan2(t: u32, x: vec2<u32>) -> vec4<u32> {
    workgroupBarrier();
    sc[t] = x;
    workgroupBarrier();
    for (var off = 1u; off < WG; off <<= 1u) {
        var y = sc[t];
        if (t >= off) {
            y += sc[t - off];
        }
        workgroupBarrier();
        sc[t] = y;
        workgroupBarrier();
    }
    let incl = sc[t];
    let total = sc[WG - 1u];
    workgroupBarrier();
    return vec4<u32>(incl - x, total);
}

// ---- begin ------------------------------------------------------------------------------

var<workgroup> used: array<u32, 1024>;

@compute @workgroup_size(256)
fn begin(@builtin(local_invocation_id) lid: vec3<u32>) {
    let t = lid.x;
    let off = done();
    let n_prev = select(atomicLoad(&ctl[C_N]), 0u, off);
    let half = r.q / 2u;
    // Each invocation looks at PER consecutive entries of the previous W.
    var pts: array<u32, 4>;
    var sls: array<u32, 4>;
    var keep: array<bool, 4>;
    var c = 0u;
    for (var j = 0u; j < PER; j++) {
        let k = PER * t + j;
        keep[j] = false;
        if (k < n_prev) {
            pts[j] = w_at(k);
            sls[j] = slot_at(k);
            keep[j] = alpha[pts[j]] > GT(0.0);
            c += select(0u, 1u, keep[j]);
        }
    }
    for (var j = 0u; j < PER; j++) {
        used[PER * t + j] = 0u;
    }
    let s = scan2(t, vec2<u32>(c, 0u));
    var rank = s.x;
    storageBarrier();
    for (var j = 0u; j < PER; j++) {
        let k = PER * t + j;
        if (k < n_prev) {
            if (keep[j] && rank < half) {
                wl[rank] = pts[j];
                wl[r.q + rank] = sls[j];
                used[sls[j]] = 1u;
            } else {
                mark[pts[j]] = 0u;
            }
            if (keep[j]) {
                rank += 1u;
            }
        }
    }
    let kept = min(s.z, half);
    // The free slots, in order.
    workgroupBarrier();
    var f = 0u;
    for (var j = 0u; j < PER; j++) {
        let k = PER * t + j;
        if (k < r.q && used[k] == 0u) {
            f += 1u;
        }
    }
    let fs = scan2(t, vec2<u32>(f, 0u));
    var fr = fs.x;
    for (var j = 0u; j < PER; j++) {
        let k = PER * t + j;
        if (k < r.q && used[k] == 0u) {
            wl[2u * r.q + fr] = k;
            fr += 1u;
        }
    }
    if (t == 0u && !off) {
        let rest = r.q - kept;
        let nt = (rest + 1u) / 2u;
        atomicStore(&ctl[C_N], kept);
        atomicStore(&ctl[C_KEPT], kept);
        atomicStore(&ctl[C_ROUND], 0u);
        atomicStore(&ctl[C_PREF_T], 0u);
        atomicStore(&ctl[C_PREF_A], 0u);
        atomicStore(&ctl[C_NEED_T], nt);
        atomicStore(&ctl[C_NEED_A], rest - nt);
        atomicStore(&ctl[C_STEPS], 0u);
    }
}

// ---- radix select ------------------------------------------------------------------------

var<workgroup> ht: array<atomic<u32>, 256>;
var<workgroup> ha: array<atomic<u32>, 256>;

fn round_mask(round: u32) -> u32 {
    if (round == 0u) {
        return 0u;
    }
    return ~((1u << (32u - 8u * round)) - 1u);
}

@compute @workgroup_size(256)
fn radix(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let t = lid.x;
    atomicStore(&ht[t], 0u);
    atomicStore(&ha[t], 0u);
    workgroupBarrier();
    if (!done()) {
        let round = atomicLoad(&ctl[C_ROUND]);
        let shift = 24u - 8u * round;
        let mask = round_mask(round);
        let pt = atomicLoad(&ctl[C_PREF_T]);
        let pa = atomicLoad(&ctl[C_PREF_A]);
        for (var i = wid.x * WG + t; i < r.m; i += r.nwg * WG) {
            let v = g[i];
            if (mark[i] != 0u || is_nan(v)) {
                continue;
            }
            let kt = key_of(v);
            if ((kt & mask) == pt) {
                atomicAdd(&ht[(kt >> shift) & 255u], 1u);
            }
            if (alpha[i] > GT(0.0)) {
                let ka = key_of(-v);
                if ((ka & mask) == pa) {
                    atomicAdd(&ha[(ka >> shift) & 255u], 1u);
                }
            }
        }
    }
    workgroupBarrier();
    let ct = atomicLoad(&ht[t]);
    if (ct != 0u) {
        atomicAdd(&ctl[C_HIST + t], ct);
    }
    let ca = atomicLoad(&ha[t]);
    if (ca != 0u) {
        atomicAdd(&ctl[C_HIST + 256u + t], ca);
    }
}

var<workgroup> bins: array<u32, 512>;

// The bucket of the need-th smallest key: its bits join the prefix, the keys below it leave
// the need. In round 0 a need larger than the candidates shrinks to all of them.
fn pick_one(sel: u32, shift: u32, round: u32) {
    let cn = select(C_NEED_T, C_NEED_A, sel == 1u);
    let cp = select(C_PREF_T, C_PREF_A, sel == 1u);
    var need = atomicLoad(&ctl[cn]);
    if (round == 0u) {
        var total = 0u;
        for (var b = 0u; b < 256u; b++) {
            total += bins[256u * sel + b];
        }
        need = min(need, total);
        atomicStore(&ctl[select(C_GOT_T, C_GOT_A, sel == 1u)], need);
    }
    if (need == 0u) {
        atomicStore(&ctl[cn], 0u);
        return;
    }
    var cum = 0u;
    var b = 0u;
    loop {
        let h = bins[256u * sel + b];
        if (cum + h >= need || b == 255u) {
            break;
        }
        cum += h;
        b += 1u;
    }
    atomicStore(&ctl[cp], atomicLoad(&ctl[cp]) | (b << shift));
    atomicStore(&ctl[cn], need - cum);
}

@compute @workgroup_size(256)
fn pick(@builtin(local_invocation_id) lid: vec3<u32>) {
    let t = lid.x;
    bins[t] = atomicExchange(&ctl[C_HIST + t], 0u);
    bins[256u + t] = atomicExchange(&ctl[C_HIST + 256u + t], 0u);
    workgroupBarrier();
    if (t == 0u && !done()) {
        let round = atomicLoad(&ctl[C_ROUND]);
        let shift = 24u - 8u * round;
        pick_one(0u, shift, round);
        pick_one(1u, shift, round);
        atomicStore(&ctl[C_ROUND], round + 1u);
    }
}

// ---- compaction in the points' order -----------------------------------------------------

// (lt, eq) flags of point i against the thresholds: toward in xy, away in zw.
fn flags(i: u32, tt: u32, ta: u32) -> vec4<u32> {
    let v = g[i];
    if (mark[i] != 0u || is_nan(v)) {
        return vec4<u32>(0u);
    }
    let kt = key_of(v);
    var f = vec4<u32>(select(0u, 1u, kt < tt), select(0u, 1u, kt == tt), 0u, 0u);
    if (alpha[i] > GT(0.0)) {
        let ka = key_of(-v);
        f.z = select(0u, 1u, ka < ta);
        f.w = select(0u, 1u, ka == ta);
    }
    return f;
}

var<workgroup> cnt: array<atomic<u32>, 4>;

@compute @workgroup_size(256)
fn count(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let t = lid.x;
    if (t < 4u) {
        atomicStore(&cnt[t], 0u);
    }
    workgroupBarrier();
    if (!done()) {
        let tt = atomicLoad(&ctl[C_PREF_T]);
        let ta = atomicLoad(&ctl[C_PREF_A]);
        let start = wid.x * r.block_rows;
        let end = min(r.m, start + r.block_rows);
        var acc = vec4<u32>(0u);
        for (var i = start + t; i < end; i += WG) {
            acc += flags(i, tt, ta);
        }
        atomicAdd(&cnt[0], acc.x);
        atomicAdd(&cnt[1], acc.y);
        atomicAdd(&cnt[2], acc.z);
        atomicAdd(&cnt[3], acc.w);
    }
    workgroupBarrier();
    if (t < 4u) {
        atomicStore(&ctl[C_CNT + 4u * wid.x + t], atomicLoad(&cnt[t]));
    }
}

var<workgroup> below: array<atomic<u32>, 4>;

@compute @workgroup_size(256)
fn place(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let t = lid.x;
    if (t < 4u) {
        atomicStore(&below[t], 0u);
    }
    workgroupBarrier();
    // The counts of the workgroups before this one.
    var acc = vec4<u32>(0u);
    for (var w = t; w < wid.x; w += WG) {
        acc += vec4<u32>(
            atomicLoad(&ctl[C_CNT + 4u * w]),
            atomicLoad(&ctl[C_CNT + 4u * w + 1u]),
            atomicLoad(&ctl[C_CNT + 4u * w + 2u]),
            atomicLoad(&ctl[C_CNT + 4u * w + 3u]),
        );
    }
    atomicAdd(&below[0], acc.x);
    atomicAdd(&below[1], acc.y);
    atomicAdd(&below[2], acc.z);
    atomicAdd(&below[3], acc.w);
    workgroupBarrier();
    let base = vec4<u32>(
        atomicLoad(&below[0]),
        atomicLoad(&below[1]),
        atomicLoad(&below[2]),
        atomicLoad(&below[3]),
    );
    let off = done();
    let tt = atomicLoad(&ctl[C_PREF_T]);
    let ta = atomicLoad(&ctl[C_PREF_A]);
    let rem = vec2<u32>(atomicLoad(&ctl[C_NEED_T]), atomicLoad(&ctl[C_NEED_A]));
    // Ranks among the equal keys, and positions, carried from tile to tile.
    var eq_seen = base.yw;
    var taken = base.xz + min(base.yw, rem);
    let start = wid.x * r.block_rows;
    let end = min(r.m, start + r.block_rows);
    for (var b = start; b < end; b += WG) {
        let i = b + t;
        var f = vec4<u32>(0u);
        if (i < end && !off) {
            f = flags(i, tt, ta);
        }
        let e = scan2(t, f.yw);
        let rank = eq_seen + e.xy;
        let take = vec2<u32>(
            select(0u, 1u, f.x == 1u || (f.y == 1u && rank.x < rem.x)),
            select(0u, 1u, f.z == 1u || (f.w == 1u && rank.y < rem.y)),
        );
        let s = scan2(t, take);
        let pos = taken + s.xy;
        if (take.x == 1u) {
            wl[3u * r.q + pos.x] = i;
        }
        if (take.y == 1u) {
            wl[4u * r.q + pos.y] = i;
        }
        eq_seen += e.zw;
        taken += s.zw;
    }
}

@compute @workgroup_size(256)
fn assemble(@builtin(local_invocation_id) lid: vec3<u32>) {
    let t = lid.x;
    let off = done();
    let kept = atomicLoad(&ctl[C_KEPT]);
    var nt = 0u;
    var na = 0u;
    if (!off) {
        nt = atomicLoad(&ctl[C_GOT_T]);
        na = atomicLoad(&ctl[C_GOT_A]);
    }
    // The kept points move behind the new ones, with their slots.
    var kp: array<u32, 4>;
    var ks: array<u32, 4>;
    for (var j = 0u; j < PER; j++) {
        let k = PER * t + j;
        if (k < kept) {
            kp[j] = w_at(k);
            ks[j] = slot_at(k);
        }
        if (k < nt) {
            mark[wl[3u * r.q + k]] = 2u;
        }
    }
    storageBarrier();
    workgroupBarrier();
    var c = 0u;
    var keep: array<bool, 4>;
    for (var j = 0u; j < PER; j++) {
        let k = PER * t + j;
        keep[j] = k < na && mark[wl[4u * r.q + k]] == 0u;
        c += select(0u, 1u, keep[j]);
    }
    let s = scan2(t, vec2<u32>(c, 0u));
    let fresh = nt + s.z;
    var pos = nt + s.x;
    for (var j = 0u; j < PER; j++) {
        let k = PER * t + j;
        if (keep[j]) {
            let i = wl[4u * r.q + k];
            wl[pos] = i;
            wl[r.q + pos] = free_at(pos);
            mark[i] = 1u;
            pos += 1u;
        }
        if (k < nt) {
            let i = wl[3u * r.q + k];
            wl[k] = i;
            wl[r.q + k] = free_at(k);
            mark[i] = 1u;
        }
        if (k < kept && !off) {
            wl[fresh + k] = kp[j];
            wl[r.q + fresh + k] = ks[j];
        }
    }
    if (t == 0u && !off) {
        atomicStore(&ctl[C_N], fresh + kept);
        atomicStore(&ctl[C_FRESH], fresh);
    }
}

// ---- the new points' columns --------------------------------------------------------------

// One invocation per new point of W whose row lies in this chunk: its row into wq.
@compute @workgroup_size(256)
fn queries(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (done()) {
        return;
    }
    let k = gid.x;
    if (k >= atomicLoad(&ctl[C_FRESH])) {
        return;
    }
    let i = w_at(k);
    if (i < chunk.r0 || i >= chunk.r0 + chunk.n) {
        return;
    }
    load_query(k, stored_row(i - chunk.r0));
}

var<private> qbase: u32;
var<private> staged: bool;
// The workgroup's BK query rows, where BK · dpad fits (d up to 444 features).
const QTILE: u32 = 3584u;
var<workgroup> qtile: array<f32, QTILE>;
var<workgroup> u_fresh: u32;

fn query_at(c: u32, f: u32) -> f32 {
    if (staged) {
        return qtile[c * r.dpad + f];
    }
    // Rows past W's last slot are computed and dropped: read a row that exists.
    return wq[min(qbase + c, r.q - 1u) * r.dpad + f];
}

fn meta_norm(c: u32) -> GT {
    return norms[min(w_at(qbase + c), r.m - 1u)];
}

// Workgroup (x, y): rows of this chunk by a grid-stride loop, the new points BK·y … BK·y + BK − 1,
// whose rows it first stages in workgroup memory: each invocation's row against the BK rows
// held there, the BK sums in registers, the kernel's exponential and labels applied as each
// value is stored.
@compute @workgroup_size(256)
fn columns(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    let t = lid.x;
    if (t == 0u) {
        u_fresh = select(atomicLoad(&ctl[C_FRESH]), 0u, done());
    }
    let n = workgroupUniformLoad(&u_fresh);
    let first = BK * wid.y;
    if (first >= n) {
        return;
    }
    qbase = first;
    staged = BK * r.dpad <= QTILE;
    if (staged) {
        let base = qbase * r.dpad;
        let end = min(BK * r.dpad, r.q * r.dpad - base);
        for (var e = t; e < end; e += WG) {
            qtile[e] = wq[base + e];
        }
    }
    workgroupBarrier();
    var pj: array<u32, 8>;
    var yj: array<f32, 8>;
    var sj: array<u32, 8>;
    for (var c = 0u; c < BK; c++) {
        let k = min(qbase + c, n - 1u);
        pj[c] = w_at(k);
        yj[c] = label_of(ylab[pj[c]]);
        sj[c] = slot_at(k);
    }
    let stride = chunk.nwg * WG;
    for (var li = gid.x; li < chunk.n; li += stride) {
        let i = chunk.r0 + li;
        let rv = row_values(stored_row(li), i);
        let yi = label_of(ylab[i]);
        for (var c = 0u; c < BK; c++) {
            if (qbase + c < n) {
                var v = GT(yi * yj[c]) * (kernel_value(rv[c]) + GT(1.0));
                if (i == pj[c]) {
                    v += inv_c_of(ylab[i]);
                }
                cache[sj[c] * r.slot + i] = v;
            }
        }
    }
}

// Q_WW (n × n), g_W and α_W (twice: the start is kept for Δα).
@compute @workgroup_size(256)
fn gather(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>) {
    if (done()) {
        return;
    }
    let n = atomicLoad(&ctl[C_N]);
    let idx = gid.x + gid.y * nw.x * WG;
    if (idx >= n * n) {
        return;
    }
    let k = idx / n;
    let l = idx % n;
    blk[idx] = cache[slot_at(l) * r.slot + w_at(k)];
    if (l == 0u) {
        let i = w_at(k);
        blk[b_g() + k] = g[i];
        let a = alpha[i];
        blk[b_a() + k] = a;
        blk[b_a0() + k] = a;
    }
}

// ---- the inner solve ------------------------------------------------------------------------

var<workgroup> rv: array<GT, 256>;
var<workgroup> rk: array<u32, 256>;
var<workgroup> rv2: array<GT, 256>;
var<workgroup> rk2: array<u32, 256>;
var<workgroup> u_n: u32;
var<workgroup> u_go: u32;
var<workgroup> u_s: u32;
var<workgroup> u_lam: GT;
var<workgroup> u_gv: GT;
var<workgroup> u_av: GT;
var<workgroup> u_as: GT;

// Ties go to the lower point (W's entries), as on the host.
fn lower_point(k: u32, than: u32) -> bool {
    return w_at(k) < w_at(than);
}

fn min_wins(v: GT, k: u32, bv: GT, bk: u32) -> bool {
    return k != NONE && (bk == NONE || v < bv || (v == bv && lower_point(k, bk)));
}

fn max_wins(v: GT, k: u32, bv: GT, bk: u32) -> bool {
    return k != NONE && (bk == NONE || v > bv || (v == bv && lower_point(k, bk)));
}

// The workgroup's minimum of (rv, rk) and maximum of (rv2, rk2) into slot 0.
fn reduce_both(t: u32) {
    for (var off = WG / 2u; off > 0u; off >>= 1u) {
        workgroupBarrier();
        if (t < off) {
            if (min_wins(rv[t + off], rk[t + off], rv[t], rk[t])) {
                rv[t] = rv[t + off];
                rk[t] = rk[t + off];
            }
            if (max_wins(rv2[t + off], rk2[t + off], rv2[t], rk2[t])) {
                rv2[t] = rv2[t + off];
                rk2[t] = rk2[t + off];
            }
        }
    }
    workgroupBarrier();
}

fn reduce_max(t: u32) {
    for (var off = WG / 2u; off > 0u; off >>= 1u) {
        workgroupBarrier();
        if (t < off) {
            if (max_wins(rv2[t + off], rk2[t + off], rv2[t], rk2[t])) {
                rv2[t] = rv2[t + off];
                rk2[t] = rk2[t + off];
            }
        }
    }
    workgroupBarrier();
}

@compute @workgroup_size(256)
fn inner(@builtin(local_invocation_id) lid: vec3<u32>) {
    let t = lid.x;
    if (t == 0u) {
        u_n = select(atomicLoad(&ctl[C_N]), 0u, done());
    }
    let n = workgroupUniformLoad(&u_n);
    if (n == 0u) {
        return;
    }
    var gl: array<GT, 4>;
    var al: array<GT, 4>;
    var a0: array<GT, 4>;
    var dg: array<GT, 4>;
    for (var j = 0u; j < PER; j++) {
        let k = t + WG * j;
        if (k < n) {
            gl[j] = blk[b_g() + k];
            al[j] = blk[b_a() + k];
            a0[j] = al[j];
            dg[j] = blk[k * n + k];
        }
    }
    // argmin g and max g over the support of W.
    var bv = GT(0.0);
    var bk = NONE;
    var hv = GT(0.0);
    var hk = NONE;
    for (var j = 0u; j < PER; j++) {
        let k = t + WG * j;
        if (k < n) {
            if (min_wins(gl[j], k, bv, bk)) {
                bv = gl[j];
                bk = k;
            }
            if (al[j] > GT(0.0) && max_wins(gl[j], k, hv, hk)) {
                hv = gl[j];
                hk = k;
            }
        }
    }
    rv[t] = bv;
    rk[t] = bk;
    rv2[t] = hv;
    rk2[t] = hk;
    reduce_both(t);
    let ag = sv[V_AG];
    let rel = wide(r.rel_eps) * abs(ag);
    let eps = wide(r.eps);
    let goal = select(rel, eps, eps <= rel);
    var spread = -GT(BIG);
    if (rk2[0] != NONE) {
        spread = rv2[0] - rv[0];
    }
    let tol = max(GT(0.1) * spread, GT(0.1) * goal);
    let max_steps = 50u * n + 1000u;
    var taken = 0u;
    loop {
        workgroupBarrier();
        if (t == 0u) {
            u_go = select(0u, 1u, taken < max_steps && rk2[0] != NONE && rv2[0] - rv[0] > tol);
            u_s = rk[0];
        }
        if (workgroupUniformLoad(&u_go) == 0u) {
            break;
        }
        let s = workgroupUniformLoad(&u_s);
        let gs = rv[0];
        let qss = blk[s * n + s];
        // The exact decrease of the pairwise step from s to each candidate of this invocation.
        hv = GT(0.0);
        hk = NONE;
        for (var j = 0u; j < PER; j++) {
            let k = t + WG * j;
            if (k < n && k != s) {
                let gain = gl[j] - gs;
                let curv = qss + dg[j] - GT(2.0) * blk[s * n + k];
                let rr = gain / curv;
                let clipped = select(al[j], rr, rr < al[j]);
                let lam = select(al[j], clipped, curv > GT(0.0));
                let d = lam * gain - GT(0.5) * lam * lam * curv;
                if (al[j] > GT(0.0) && gain > GT(0.0) && max_wins(d, k, hv, hk)) {
                    hv = d;
                    hk = k;
                }
            }
        }
        rv2[t] = hv;
        rk2[t] = hk;
        reduce_max(t);
        let v = rk2[0];
        if (v != NONE && t == v % WG) {
            u_gv = gl[v / WG];
            u_av = al[v / WG];
        }
        if (t == s % WG) {
            u_as = al[s / WG];
        }
        workgroupBarrier();
        if (t == 0u) {
            var go = 0u;
            var lam = GT(0.0);
            if (v != NONE && rv2[0] > GT(0.0)) {
                // src/solver/steps.rs's pairwise step.
                let gain = u_gv - gs;
                let curv = qss + blk[v * n + v] - GT(2.0) * blk[s * n + v];
                if (gain > GT(0.0)) {
                    if (curv > GT(0.0)) {
                        lam = min(gain / curv, u_av);
                    } else {
                        lam = u_av;
                    }
                }
                let tiny = u_as + lam == u_as && lam < u_av && u_av - lam == u_av;
                go = select(0u, 1u, lam > GT(0.0) && !tiny);
            }
            u_go = go;
            u_lam = lam;
            u_s = v;
        }
        if (workgroupUniformLoad(&u_go) == 0u) {
            break;
        }
        let vv = workgroupUniformLoad(&u_s);
        let lam = u_lam;
        let av = u_av;
        bv = GT(0.0);
        bk = NONE;
        hv = GT(0.0);
        hk = NONE;
        for (var j = 0u; j < PER; j++) {
            let k = t + WG * j;
            if (k < n) {
                if (k == s) {
                    al[j] = al[j] + lam;
                }
                if (k == vv) {
                    al[j] = select(av - lam, GT(0.0), lam >= av);
                }
                gl[j] += lam * (blk[s * n + k] - blk[vv * n + k]);
                if (min_wins(gl[j], k, bv, bk)) {
                    bv = gl[j];
                    bk = k;
                }
                if (al[j] > GT(0.0) && max_wins(gl[j], k, hv, hk)) {
                    hv = gl[j];
                    hk = k;
                }
            }
        }
        taken += 1u;
        rv[t] = bv;
        rk[t] = bk;
        rv2[t] = hv;
        rk2[t] = hk;
        reduce_both(t);
    }
    // α_W, Δα for the update, and W with α_W for the host's record.
    let local = atomicLoad(&ctl[C_LOCAL]);
    let rec_u = RU * r.kmax + local * r.q;
    let rec_v = RV * r.kmax + local * r.q;
    for (var j = 0u; j < PER; j++) {
        let k = t + WG * j;
        if (k < n) {
            let i = w_at(k);
            alpha[i] = al[j];
            blk[b_a0() + k] = al[j] - a0[j];
            stat_u[rec_u + k] = i;
            stat_v[rec_v + k] = al[j];
        }
    }
    if (t == 0u) {
        atomicStore(&ctl[C_STEPS], taken);
    }
}

// ---- the update of g and the reduction ------------------------------------------------------

var<workgroup> sd: array<GT, 256>;
var<workgroup> ss: array<u32, 256>;
var<workgroup> rs: array<GT, 256>;

// Ties to the lower point index (rows, not W positions).
fn min_row(v: GT, i: u32, bv: GT, bi: u32) -> bool {
    return i != NONE && (bi == NONE || v < bv || (v == bv && i < bi));
}

fn max_row(v: GT, i: u32, bv: GT, bi: u32) -> bool {
    return i != NONE && (bi == NONE || v > bv || (v == bv && i < bi));
}

fn reduce_rows(t: u32) {
    for (var off = WG / 2u; off > 0u; off >>= 1u) {
        workgroupBarrier();
        if (t < off) {
            if (min_row(rv[t + off], rk[t + off], rv[t], rk[t])) {
                rv[t] = rv[t + off];
                rk[t] = rk[t + off];
            }
            if (max_row(rv2[t + off], rk2[t + off], rv2[t], rk2[t])) {
                rv2[t] = rv2[t + off];
                rk2[t] = rk2[t + off];
            }
            rs[t] += rs[t + off];
        }
    }
    workgroupBarrier();
}

@compute @workgroup_size(256)
fn update(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>) {
    let t = lid.x;
    if (t == 0u) {
        u_n = select(atomicLoad(&ctl[C_N]), NONE, done());
    }
    let n = workgroupUniformLoad(&u_n);
    if (n == NONE) {
        return;
    }
    var bv = GT(0.0);
    var bi = NONE;
    var hv = GT(0.0);
    var hi = NONE;
    var sum = GT(0.0);
    for (var base = wid.x * WG; base < r.m; base += r.nwg * WG) {
        let i = base + t;
        let live = i < r.m;
        var v = GT(0.0);
        if (live) {
            v = g[i];
        }
        for (var c0 = 0u; c0 < n; c0 += WG) {
            workgroupBarrier();
            if (c0 + t < n) {
                sd[t] = blk[b_a0() + c0 + t];
                ss[t] = slot_at(c0 + t);
            }
            workgroupBarrier();
            if (live) {
                let e_end = min(WG, n - c0);
                for (var e = 0u; e < e_end; e++) {
                    let d = sd[e];
                    if (d != GT(0.0)) {
                        v += d * cache[ss[e] * r.slot + i];
                    }
                }
            }
        }
        if (live) {
            g[i] = v;
            if (min_row(v, i, bv, bi)) {
                bv = v;
                bi = i;
            }
            let a = alpha[i];
            if (a > GT(0.0)) {
                if (max_row(v, i, hv, hi)) {
                    hv = v;
                    hi = i;
                }
                sum += a * v;
            }
        }
    }
    rv[t] = bv;
    rk[t] = bi;
    rv2[t] = hv;
    rk2[t] = hi;
    rs[t] = sum;
    reduce_rows(t);
    if (t == 0u) {
        sv[V_PART + 3u * wid.x] = rv[0];
        sv[V_PART + 3u * wid.x + 1u] = rv2[0];
        sv[V_PART + 3u * wid.x + 2u] = rs[0];
        atomicStore(&ctl[C_PIDX + 2u * wid.x], rk[0]);
        atomicStore(&ctl[C_PIDX + 2u * wid.x + 1u], rk2[0]);
    }
}

@compute @workgroup_size(256)
fn finish(@builtin(local_invocation_id) lid: vec3<u32>) {
    let t = lid.x;
    if (t == 0u) {
        u_n = select(0u, 1u, done());
    }
    if (workgroupUniformLoad(&u_n) != 0u) {
        return;
    }
    var bv = GT(0.0);
    var bi = NONE;
    var hv = GT(0.0);
    var hi = NONE;
    var sum = GT(0.0);
    for (var w = t; w < r.nwg; w += WG) {
        let i = atomicLoad(&ctl[C_PIDX + 2u * w]);
        let v = sv[V_PART + 3u * w];
        if (min_row(v, i, bv, bi)) {
            bv = v;
            bi = i;
        }
        let h = atomicLoad(&ctl[C_PIDX + 2u * w + 1u]);
        let hval = sv[V_PART + 3u * w + 1u];
        if (max_row(hval, h, hv, hi)) {
            hv = hval;
            hi = h;
        }
        sum += sv[V_PART + 3u * w + 2u];
    }
    rv[t] = bv;
    rk[t] = bi;
    rv2[t] = hv;
    rk2[t] = hi;
    rs[t] = sum;
    reduce_rows(t);
    if (t == 0u) {
        let gs = rv[0];
        let ag = rs[0];
        sv[V_GS] = gs;
        sv[V_GV] = rv2[0];
        sv[V_AG] = ag;
        let rel = wide(r.rel_eps) * abs(ag);
        let eps = wide(r.eps);
        let allowed = select(rel, eps, eps <= rel);
        let converged = ag - gs <= allowed;
        let local = atomicLoad(&ctl[C_LOCAL]);
        let iter = atomicLoad(&ctl[C_ITER]);
        let u = RU * local;
        stat_u[u] = iter;
        stat_u[u + 1u] = rk[0];
        stat_u[u + 2u] = rk2[0];
        stat_u[u + 3u] = atomicLoad(&ctl[C_N]);
        stat_u[u + 4u] = atomicLoad(&ctl[C_STEPS]);
        stat_u[u + 5u] = select(0u, 1u, converged);
        stat_u[u + 6u] = atomicLoad(&ctl[C_FRESH]);
        let v = RV * local;
        stat_v[v] = gs;
        stat_v[v + 1u] = rv2[0];
        stat_v[v + 2u] = ag;
        atomicStore(&ctl[C_LOCAL], local + 1u);
        atomicStore(&ctl[C_ITER], iter + 1u);
        if (converged) {
            atomicStore(&ctl[C_DONE], 1u);
        }
    }
}
