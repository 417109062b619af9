// Outputs of column_batch.wgsl: BK = 4 columns, each a cache slot bound at its own dynamic
// offset (the most an adapter must allow: four dynamic storage bindings per layout).
@group(0) @binding(4) var<storage, read_write> col0: array<GT>;
@group(0) @binding(5) var<storage, read_write> col1: array<GT>;
@group(0) @binding(6) var<storage, read_write> col2: array<GT>;
@group(0) @binding(7) var<storage, read_write> col3: array<GT>;

const BK: u32 = 4u;

fn store(c: u32, i: u32, v: GT) {
    switch c {
        case 0u: { col0[i] = v; }
        case 1u: { col1[i] = v; }
        case 2u: { col2[i] = v; }
        default: { col3[i] = v; }
    }
}
