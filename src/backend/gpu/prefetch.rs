//! The working set's selection read back with the reduction: one round trip where there were
//! three per outer iteration.
//!
//! After [`Backend::reduce`](crate::backend::Backend::reduce) the working-set solver asks for
//! the k lowest gradients ([`Columns::lowest`](crate::backend::Columns::lowest)) and for the
//! gradients over the support (a gather at α's indices), each a round trip of its own, while
//! the device sits idle. Once the backend has been asked for `lowest` — it serves a
//! working-set solver — `reduce` records both into its own submit and reads them back with
//! the reduction:
//!
//! - where g is f64 or has fewer rows than the device's compaction pays for, the whole of g
//!   (what `lowest` reads then anyway; the gather is served from it);
//! - otherwise the compaction of the rows at or below the last call's bound
//!   (shaders/below.wgsl, as [`lowest_below`](GpuBackend::lowest_below)) and the gather of g
//!   at α's indices, side by side in the gather buffer.
//!
//! The next `lowest(k)` with the same k and the next gather of exactly α's indices are served
//! from that readback while no pass has written g; anything else takes its own round trip as
//! before. The values are the ones those calls would read, so the selections are the same.

use super::passes::{capacity, dispatch, parse_candidates, read_gt};
use super::*;

/// What `reduce` read back for the working set (see the module's doc).
#[derive(Default)]
pub(super) struct Prefetch {
    /// `lowest` has been called: the backend serves a working-set solver.
    pub on: bool,
    /// The compaction and the gather below are current (no pass has written g since).
    pub valid: bool,
    /// (k, candidates counted) of the compaction read back, until `lowest` takes it.
    pub low: Option<(usize, usize)>,
    /// The candidates (g_i, i) when their count lay within k ..= the capacity.
    pub cands: Vec<(f64, usize)>,
    /// α's indices as uploaded by `reduce`, and g at them.
    pub idx: Vec<u32>,
    pub g: Vec<f64>,
}

/// What one prefetch recorded: where its values lie in the readback after the reduction's.
pub(super) enum Recorded {
    /// All of g, `m` values.
    Whole,
    /// The compaction for `k` with capacity `cap`, then `n` gathered values from GT entry
    /// `goff` on.
    Compact {
        k: usize,
        cap: usize,
        goff: usize,
        n: usize,
    },
}

impl<'a> GpuBackend<'a> {
    /// Records the prefetch after the reduction's copies, its values copied into the staging
    /// buffer from byte `base` on; `n` = α's indices uploaded by this reduce (in `lidx_host`).
    /// Returns what it recorded and its bytes.
    pub(super) fn record_prefetch(&mut self, base: u64, n: usize) -> (Recorded, u64) {
        let m = self.prob.len();
        let gt = self.gt;
        let (k, bound) = self.lowest_bound;
        let cap = capacity(k);
        let goff = (4 * (1 + 2 * cap) as u64).div_ceil(gt);
        let bytes = (goff + n as u64) * gt;
        let compact = !self.wide
            && m >= self.compact_min_rows
            && k > 0
            && bound.is_finite()
            && bytes <= self.out_bytes;
        if !compact {
            let bytes = m as u64 * gt;
            if bytes > 0 {
                let mut enc = self.take_encoder();
                enc.copy_buffer_to_buffer(
                    &self.g,
                    0,
                    &self.staging,
                    base,
                    bytes.next_multiple_of(4),
                );
                self.enc = Some(enc);
            }
            return (Recorded::Whole, bytes);
        }
        // The counter starts at zero and the gather's index list is α's: both writes land
        // before this submit, after the readbacks that used the buffers before.
        self.ctx.queue.write_buffer(&self.out, 0, &[0u8; 4]);
        self.stats.bytes_up += 4;
        if n > 0 {
            self.ctx
                .queue
                .write_buffer(&self.gidx, 0, bytemuck::cast_slice(&self.lidx_host[..n]));
            self.stats.bytes_up += 4 * n as u64;
        }
        let nwg = self.list_nwg(m);
        let below = self.push_params(&Params {
            n: cap as u32,
            nwg,
            scale: split(bound),
            ..self.base_params()
        });
        let mut enc = self.take_encoder();
        dispatch(&mut enc, &self.pipes.below, &self.below_bg, &[below], nwg);
        self.stats.dispatches += 1;
        self.enc = Some(enc);
        if n > 0 {
            let nwg = self.list_nwg(n);
            let off = self.push_params(&Params {
                n: n as u32,
                nwg,
                out_off: goff as u32,
                ..self.base_params()
            });
            self.record_gather(off, 0, nwg);
        }
        let mut enc = self.take_encoder();
        enc.copy_buffer_to_buffer(&self.out, 0, &self.staging, base, bytes.next_multiple_of(4));
        self.enc = Some(enc);
        let goff = goff as usize;
        (Recorded::Compact { k, cap, goff, n }, bytes)
    }

    /// Takes what [`record_prefetch`](Self::record_prefetch) recorded out of the readback
    /// (its values from byte `base` on).
    pub(super) fn take_prefetch(&mut self, rec: Recorded, base: usize) {
        let wide = self.wide;
        let b = &self.readback[base..];
        match rec {
            Recorded::Whole => {
                let m = self.prob.len();
                self.g_host.resize(m, 0.0);
                super::passes::decode_gt(b, wide, &mut self.g_host);
                self.g_host_valid = true;
            }
            Recorded::Compact { k, cap, goff, n } => {
                let pre = &mut self.pre;
                let (count, _) = parse_candidates(b, k, cap, &mut pre.cands);
                pre.low = Some((k, count));
                pre.idx.clear();
                pre.idx.extend_from_slice(&self.lidx_host[..n]);
                pre.g.clear();
                pre.g.extend((0..n).map(|r| read_gt(b, goff + r, wide)));
                pre.valid = true;
            }
        }
    }

    /// g at `idx` from the prefetch, when it holds exactly those indices.
    pub(super) fn prefetched_gather(&self, idx: &[usize], out: &mut [f64]) -> bool {
        let pre = &self.pre;
        if !pre.valid || pre.idx.len() != idx.len() {
            return false;
        }
        if !pre.idx.iter().zip(idx).all(|(&a, &b)| a as usize == b) {
            return false;
        }
        out[..idx.len()].copy_from_slice(&pre.g);
        true
    }

    /// g has been (or is about to be) written: what was read of it is stale.
    pub(super) fn g_changed(&mut self) {
        self.g_host_valid = false;
        self.pre.valid = false;
        self.pre.low = None;
    }
}
