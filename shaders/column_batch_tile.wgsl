// Outputs of column_batch.wgsl: BK = 16 columns in one tile buffer, column c at rows
// c·m .. c·m + m − 1 (the host copies each into its cache slot on the device): a pass reads
// the data once for sixteen columns instead of four.
@group(0) @binding(4) var<storage, read_write> tile: array<GT>;

const BK: u32 = 16u;

fn store(c: u32, i: u32, v: GT) {
    tile[c * p.m + i] = v;
}
