// Shared by every fwsvm compute shader. The host prepends `alias GT = f32;` and `exp_gt` =
// exp, or, where the adapter has SHADER_F64 and --precision f64 asks for it, `alias GT = f64;`
// and exp_f64.wgsl: GT is the type of the gradient, the cached kernel columns and the kernel
// arithmetic (the data stay f32).
//
// One Params block per dispatch, selected by a dynamic uniform offset. Scalars that must keep
// f64 precision travel as an (hi, lo) pair of f32 whose sum is the f64 value rounded twice.

struct Params {
    m: u32,        // rows (points) in the problem
    n: u32,        // items this dispatch covers (active-list or gather length)
    d: u32,        // features
    j: u32,        // the column being computed (global row index)
    kind: u32,     // kernel: 0 linear, 1 rbf, 2 polynomial, 3 sigmoid
    degree: u32,   // polynomial degree
    flags: u32,    // see F_* below
    nwg: u32,      // workgroups of a grid-stride loop
    nwg2: u32,     // partials of the second reduction (final pass)
    q_off: u32,    // offset of x_j in the query buffer
    out_off: u32,  // gather: first output entry
    pad1: u32,
    gamma: vec2<f32>,
    coef0: vec2<f32>,
    inv_c: vec2<f32>,
    normj: vec2<f32>,
    yj: f32,
    pad2: f32,
    inv_c_neg: vec2<f32>, // 1/C of the −1 rows (inv_c: of the +1 rows; class weights)
    scale: vec2<f32>,
    ca: vec2<f32>,
    cb: vec2<f32>,
    cp: vec2<f32>,
    cc: vec2<f32>,
    cd: vec2<f32>,
}

const F_COL_A: u32 = 1u;   // update: add ca·colA
const F_COL_B: u32 = 2u;   // update: add cb·colB
const F_PREV: u32 = 4u;    // g⁻ exists: add cp·g⁻ and sum αᵀg⁻
const F_ROTATE: u32 = 8u;  // update: g⁻ ← g_old
const F_WRITE: u32 = 16u;  // update: write g (otherwise only the argmin)
const SRC_PREV: u32 = 32u; // gather: from g⁻
const SRC_COL: u32 = 64u;  // gather: from the column binding
const F_NO_BIAS: u32 = 128u; // column: external query, k(x_i, z) without Q's +1
const F_COL_C: u32 = 256u; // update: add cc·colC (after colB)
const F_COL_D: u32 = 512u; // update: add cd·colD (after colC)
const SRC_BLOCK: u32 = 1024u; // gather: parts of g_W and Q[W, W] in one dispatch (gather.wgsl)

const WG: u32 = 256u;
const NONE: u32 = 0xffffffffu;
const BIG: f32 = 3.0e38;

fn wide(v: vec2<f32>) -> GT {
    return GT(v.x) + GT(v.y);
}

// Lower value wins; ties go to the lower index (as the CPU's first-minimum scan).
fn better_min(v: GT, i: u32, bv: GT, bi: u32) -> bool {
    return v < bv || (v == bv && i < bi);
}

// The label buffer holds each row's signed cost y_i·s_i: its sign is the label, its magnitude
// the row's weight s_i (1 without per-row weights, so unweighted arithmetic is unchanged), which
// divides its class's diagonal term 1/C (merged duplicates carry their count, sample weights
// their value rounded to f32).
fn label_of(yw: f32) -> f32 {
    return sign(yw);
}

fn row_inv_c(class_inv_c: vec2<f32>, yw: f32) -> GT {
    return wide(class_inv_c) / GT(abs(yw));
}

// Higher value wins; ties go to the lower index.
fn better_max(v: GT, i: u32, bv: GT, bi: u32) -> bool {
    return v > bv || (v == bv && i < bi);
}
