//! The passes one iteration records and submits: the command encoder and parameter slots,
//! kernel columns (single, batched, external queries), the fused gradient update, gathers and
//! uploads, and the read-back of results. The [`Backend`](crate::backend::Backend) methods in
//! `mod.rs` drive them.

use super::*;

impl<'a> GpuBackend<'a> {
    /// The recording encoder, taken out of `self` so passes can borrow the other fields; give
    /// it back with `self.enc = Some(enc)`.
    pub(super) fn take_encoder(&mut self) -> wgpu::CommandEncoder {
        self.enc.take().unwrap_or_else(|| {
            self.ctx
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None })
        })
    }

    /// Reserves a Params block for the next dispatch; returns its dynamic offset.
    pub(super) fn push_params(&mut self, p: &Params) -> u32 {
        if self.n_params == PARAM_SLOTS {
            self.flush();
        }
        let off = self.n_params * self.param_stride as usize;
        self.param_host[off..off + PARAMS_SIZE as usize].copy_from_slice(bytemuck::bytes_of(p));
        self.n_params += 1;
        off as u32
    }

    /// Submits what is recorded (params and query rows first), without waiting.
    pub(super) fn flush(&mut self) {
        let q = &self.ctx.queue;
        if self.n_params > 0 {
            let bytes = &self.param_host[..self.n_params * self.param_stride as usize];
            q.write_buffer(&self.params, 0, bytes);
            self.stats.bytes_up += bytes.len() as u64;
        }
        if self.n_queries > 0 {
            let rows = &self.query_host[..self.n_queries * self.dpad];
            q.write_buffer(&self.query, 0, bytemuck::cast_slice(rows));
            self.stats.bytes_up += std::mem::size_of_val(rows) as u64;
        }
        if self.meta_dirty {
            let base = QUERY_SLOTS * self.dpad;
            let meta = &self.query_host[base..];
            q.write_buffer(&self.query, 4 * base as u64, bytemuck::cast_slice(meta));
            self.stats.bytes_up += std::mem::size_of_val(meta) as u64;
            self.meta_dirty = false;
        }
        if let Some(enc) = self.enc.take() {
            q.submit([enc.finish()]);
            self.stats.submits += 1;
        }
        self.ulist_pending = false;
        self.n_params = 0;
        self.n_queries = 0;
    }

    /// Flushes, waits, and copies `bytes` of the readback buffer into `self.readback`.
    pub(super) fn submit_and_read(&mut self, bytes: u64) -> Result<()> {
        let t = std::time::Instant::now();
        self.flush();
        self.stats.round_trips += 1;
        self.stats.bytes_down += bytes;
        let r = read_back(
            self.ctx,
            &self.staging,
            bytes,
            &self.map_state,
            &mut self.readback,
        );
        self.stats.wait_ns += t.elapsed().as_nanos() as u64;
        r
    }

    pub(super) fn base_params(&self) -> Params {
        Params {
            m: self.prob.len() as u32,
            d: self.d as u32,
            kind: self.kind,
            degree: self.degree,
            gamma: split(self.gamma),
            coef0: split(self.coef0),
            inv_c: split(self.inv_c.0),
            inv_c_neg: split(self.inv_c.1),
            nwg: self.nwg_rows,
            flags: if self.prev { F_PREV } else { 0 },
            ..Default::default()
        }
    }

    /// Records the computation of column j into cache slot `slot`.
    pub(super) fn record_column(&mut self, j: usize, slot: usize) {
        let (prob, m) = (self.prob, self.prob.len());
        if j < m {
            self.record_query(prob.data.row(j), j as u32, prob.y[j], prob.norms[j], slot);
        } else {
            // The guest's row is lent out of self for the recording.
            let guests = std::mem::take(&mut self.guests);
            let g = &guests[j - m];
            self.record_query(g.row.as_row(), j as u32, g.y, g.norm, slot);
            self.guests = guests;
        }
        self.stats.columns_computed += 1;
    }

    /// Records the computation of the columns `cols` = (j, slot), at most
    /// [`batch_width`](Self::batch_width), in one batched pass: each row is read once for all
    /// of them (shaders/column_batch.wgsl; the same entries as one column at a time). The
    /// tiled pass writes them into the tile buffer, then each is copied into its slot on the
    /// device; the other writes four slots directly.
    pub(super) fn record_batch(&mut self, cols: &[(usize, usize)]) {
        assert!((1..=self.batch_width()).contains(&cols.len()));
        if self.n_queries > 0 || self.n_params == PARAM_SLOTS {
            self.flush();
        }
        let (d, dpad) = (self.d, self.dpad);
        let base = QUERY_SLOTS * dpad;
        for (c, &(j, _)) in cols.iter().enumerate() {
            let m = self.prob.len();
            let (row, y, norm) = if j < m {
                (self.prob.data.row(j), self.prob.y[j], self.prob.norms[j])
            } else {
                let g = &self.guests[j - m];
                (g.row.as_row(), g.y, g.norm)
            };
            fill_query(row, d, &mut self.query_host[c * dpad..(c + 1) * dpad]);
            let norm = split(norm);
            let meta = &mut self.query_host[base + 4 * c..base + 4 * c + 4];
            meta.copy_from_slice(&[f32::from_bits(j as u32), y as f32, norm[0], norm[1]]);
        }
        self.n_queries = cols.len();
        self.meta_dirty = true;
        let p = Params {
            n: cols.len() as u32,
            q_off: 0,
            pad1: dpad as u32,
            out_off: base as u32,
            ..self.base_params()
        };
        let off = self.push_params(&p);
        let mut enc = self.take_encoder();
        {
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
            if let Some(bg) = &self.tile_bg {
                let tile = self.pipes.tile.as_ref().expect("tiled pipelines");
                pass.set_pipeline(if self.dense { &tile.dense } else { &tile.csr });
                pass.set_bind_group(0, bg, &[off]);
            } else {
                let mut offs = [off, 0, 0, 0, 0];
                for k in 0..pipelines::BATCH_COLUMNS {
                    // Unused outputs alias the first column's slot; the shader writes only n.
                    let slot = cols.get(k).unwrap_or(&cols[0]).1;
                    offs[k + 1] = (slot as u64 * self.slot_stride) as u32;
                }
                let batch = self.pipes.batch.as_ref().expect("batched pipelines");
                let bg = self.batch_bg.as_ref().expect("batched bind group");
                pass.set_pipeline(if self.dense { &batch.dense } else { &batch.csr });
                pass.set_bind_group(0, bg, &offs);
            }
            dispatch_chunks(&mut pass, &self.chunks, &mut self.stats.dispatches);
        }
        if self.tile_bg.is_some() {
            let bytes = self.prob.len() as u64 * self.gt;
            for (c, &(_, slot)) in cols.iter().enumerate() {
                enc.copy_buffer_to_buffer(
                    &self.tile,
                    c as u64 * bytes,
                    &self.cache_buf,
                    slot as u64 * self.slot_stride,
                    bytes,
                );
            }
        }
        self.enc = Some(enc);
        self.stats.columns_computed += cols.len() as u64;
    }

    /// Columns one batched pass computes: the tile's where there is one, else
    /// [`pipelines::BATCH_COLUMNS`]; 0 where the adapter can bind neither pass.
    pub(super) fn batch_width(&self) -> usize {
        if self.tile_bg.is_some() {
            self.tile_cols
        } else if self.batch_bg.is_some() {
            pipelines::BATCH_COLUMNS
        } else {
            0
        }
    }

    /// Computes the columns `js` that are not cached, [`batch_width`](Self::batch_width) per
    /// pass over the data, into the cache; at most half the slots the cache may use now are
    /// filled, so none of them evicts another. Returns how many were computed (0 where the
    /// adapter cannot bind a batched pass).
    pub(super) fn prefetch(&mut self, js: &[usize]) -> usize {
        self.loop_stale();
        let width = self.batch_width();
        if width == 0 {
            return 0;
        }
        let room = (self.cache.usable() / 2).max(1);
        let mut done = 0;
        let mut batch: Vec<(usize, usize)> = Vec::with_capacity(width);
        for &j in js.iter().take(room) {
            if batch.iter().any(|&(b, _)| b == j) {
                continue;
            }
            let (slot, hit) = self.cache.get_or_assign(j, None);
            if hit {
                continue;
            }
            self.cache.mark_valid(slot);
            batch.push((j, slot));
            if batch.len() == width {
                self.record_batch(&batch);
                done += batch.len();
                batch.clear();
            }
        }
        if !batch.is_empty() {
            self.record_batch(&batch);
            done += batch.len();
        }
        self.stats.prefetched += done as u64;
        done
    }

    /// Records y_i·y·(k(x_i, z) + 1) (+ 1/C at row `j`) for all rows i into slot `slot`, for
    /// the query row z with squared norm `norm`.
    pub(super) fn record_query(&mut self, z: Row<'_>, j: u32, y: f64, norm: f64, slot: usize) {
        // Room for the query row and the Params block in the same submit: a flush between
        // writing the one and pushing the other would let a later query overwrite this one.
        if self.n_queries == QUERY_SLOTS || self.n_params == PARAM_SLOTS {
            self.flush();
        }
        let q_off = self.n_queries * self.dpad;
        let d = self.d;
        fill_query(z, d, &mut self.query_host[q_off..q_off + self.dpad]);
        self.n_queries += 1;
        let mut p = Params {
            j,
            q_off: q_off as u32,
            yj: y as f32,
            normj: split(norm),
            ..self.base_params()
        };
        if j == NONE {
            // An external query (prediction): the kernel value alone, without Q's +1.
            p.flags |= F_NO_BIAS;
        }
        let off = self.push_params(&p);
        let slot_off = (slot as u64 * self.slot_stride) as u32;
        let mut enc = self.take_encoder();
        {
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
            pass.set_pipeline(if self.dense {
                &self.pipes.column_dense
            } else {
                &self.pipes.column_csr
            });
            pass.set_bind_group(0, &self.column_bg, &[off, slot_off]);
            dispatch_chunks(&mut pass, &self.chunks, &mut self.stats.dispatches);
        }
        self.enc = Some(enc);
    }

    /// g ← g + Σ_k c_k·y_i·k(x_i, z_k) over all rows i (Q's +1 left out), for query rows z_k that need not
    /// be rows of the data (a model's support vectors, for prediction on the device); each
    /// query is (z_k, ‖z_k‖², c_k), and its features beyond the data's are ignored (the
    /// caller handles that case). Uses cache slots 0 and 1 and forgets the cache: meant for
    /// a backend that only serves this. Recorded only; [`Backend::gather`] waits for it.
    pub fn accumulate_queries(&mut self, queries: &[(Row<'_>, f64, f64)]) -> Result<()> {
        self.loop_stale();
        self.cache = ColumnCache::with_slots(self.prob.len(), self.cache.capacity());
        for pair in queries.chunks(2) {
            let mut p = self.base_params();
            p.flags |= F_WRITE | F_COL_A;
            p.scale = split(1.0);
            let (z, norm, c) = pair[0];
            self.record_query(z, NONE, 1.0, norm, 0);
            p.ca = split(c);
            if let Some(&(z, norm, c)) = pair.get(1) {
                self.record_query(z, NONE, 1.0, norm, 1);
                p.flags |= F_COL_B;
                p.cb = split(c);
            }
            self.record_update(p, 0, 1);
        }
        self.ctx.check("prediction pass")
    }

    /// Sets g = 0.
    pub fn clear_gradient(&mut self) -> Result<()> {
        self.flush();
        self.loop_stale();
        self.upload_vector(&self.g, &vec![0.0; self.prob.len()]);
        self.min_valid = false;
        self.g_changed();
        Ok(())
    }

    /// Column j resident (recording its computation if needed); returns its slot.
    pub(super) fn resolve(&mut self, j: usize, pinned: Option<usize>) -> (usize, bool) {
        // A host column may take a slot of the device loop's W.
        self.loop_stale();
        let (slot, hit) = self.cache.get_or_assign(j, pinned);
        let fresh = std::mem::replace(&mut self.fresh, usize::MAX);
        if hit {
            if j != fresh {
                self.stats.cache_hits += 1;
            }
        } else {
            self.record_column(j, slot);
            self.cache.mark_valid(slot);
        }
        (slot, !hit)
    }

    /// Records the update pass (with F_WRITE unset: only the argmin partials).
    pub(super) fn record_update(&mut self, p: Params, a: usize, b: usize) {
        self.record_update4(p, [a, b, 0, 0]);
    }

    /// Records the update pass with up to four column slots (see shaders/update.wgsl).
    pub(super) fn record_update4(&mut self, mut p: Params, slots: [usize; 4]) {
        if p.flags & F_WRITE != 0 {
            self.g_changed();
        }
        p.nwg = self.nwg_rows;
        let off = self.push_params(&p);
        let [oa, ob, oc, od] = slots.map(|s| (s as u64 * self.slot_stride) as u32);
        let mut enc = self.take_encoder();
        let offsets = [off, oa, ob, oc, od];
        dispatch(
            &mut enc,
            &self.pipes.update,
            &self.update_bg,
            &offsets,
            self.nwg_rows,
        );
        self.stats.dispatches += 1;
        self.enc = Some(enc);
        self.min_valid = true;
    }

    /// Records g = scale·g + Σ c·Q[:, j] over `cols` (all resident in the cache at once) by
    /// update-by-list passes of up to [`UPDATE_LIST_MAX`] columns (shaders/update_list.wgsl).
    /// False, with nothing recorded, where the cache is not bound whole.
    pub(super) fn record_update_list(&mut self, scale: f64, cols: &[(usize, f64)]) -> bool {
        let Some(bg) = self.update_list_bg.clone() else {
            return false;
        };
        let mut scale = scale;
        for part in cols.chunks(UPDATE_LIST_MAX) {
            // One list buffer: a list written before this submit must run first.
            if self.ulist_pending {
                self.flush();
            }
            let mut list = std::mem::take(&mut self.ulist_host);
            list.clear();
            for &(j, c) in part {
                let (slot, _) = self.resolve(j, None);
                let [hi, lo] = split(c);
                list.push([slot as u32, hi.to_bits(), lo.to_bits(), 0]);
            }
            self.ctx
                .queue
                .write_buffer(&self.ulist, 0, bytemuck::cast_slice(&list));
            self.stats.bytes_up += 16 * list.len() as u64;
            self.ulist_host = list;
            self.ulist_pending = true;
            self.g_changed();
            let p = Params {
                n: part.len() as u32,
                nwg: self.nwg_rows,
                pad1: (self.slot_stride / self.gt) as u32,
                scale: split(scale),
                ..self.base_params()
            };
            let off = self.push_params(&p);
            let mut enc = self.take_encoder();
            dispatch(
                &mut enc,
                &self.pipes.update_list,
                &bg,
                &[off],
                self.nwg_rows,
            );
            self.stats.dispatches += 1;
            self.stats.updates += 1;
            self.enc = Some(enc);
            self.min_valid = true;
            scale = 1.0;
        }
        true
    }

    pub(super) fn list_nwg(&self, n: usize) -> u32 {
        (ceil_div(n as u64, WG) as u32).clamp(1, self.nwg_list_max)
    }

    /// Gathers the uploaded index list's n entries from each source (flags, cache slot) of
    /// `parts` — part k into output entries k·n.. — recorded into one submit, and reads them
    /// back in one round trip (entry k·n + r is then `read_gt(k·n + r)`). The caller keeps
    /// `parts.len()·n` values within the gather buffer.
    pub(super) fn read_parts(
        &mut self,
        n: usize,
        parts: impl ExactSizeIterator<Item = (u32, usize)>,
    ) -> Result<()> {
        let nwg = self.list_nwg(n);
        let bytes = (parts.len() * n) as u64 * self.gt;
        for (k, (flags, slot)) in parts.enumerate() {
            let p = Params {
                n: n as u32,
                nwg,
                flags,
                out_off: (k * n) as u32,
                ..self.base_params()
            };
            let off = self.push_params(&p);
            self.record_gather(off, (slot as u64 * self.slot_stride) as u32, nwg);
        }
        let mut enc = self.take_encoder();
        enc.copy_buffer_to_buffer(&self.out, 0, &self.staging, 0, bytes.next_multiple_of(4));
        self.enc = Some(enc);
        self.submit_and_read(bytes)
    }

    /// Parts `first..last` of the working set's block (part 0 = g_W, part c = column c − 1 at
    /// W's rows) by one dispatch over the whole cache (shaders/gather.wgsl, SRC_BLOCK), read
    /// back in one round trip; the index list holds W's n points, then their n cache slots.
    pub(super) fn read_block_parts(&mut self, n: usize, first: usize, last: usize) -> Result<()> {
        let parts = last - first;
        let nwg = self.list_nwg(parts * n);
        let p = Params {
            n: n as u32,
            j: first as u32,
            q_off: parts as u32,
            pad1: (self.slot_stride / self.gt) as u32,
            nwg,
            flags: SRC_BLOCK,
            ..self.base_params()
        };
        let off = self.push_params(&p);
        let mut enc = self.take_encoder();
        let Some(bg) = self.gather_all_bg.as_ref() else {
            self.enc = Some(enc);
            return Err(Error::Backend(
                "a block gather needs the whole column cache in one binding".into(),
            ));
        };
        dispatch(&mut enc, &self.pipes.gather, bg, &[off, 0], nwg);
        self.stats.dispatches += 1;
        let bytes = (parts * n) as u64 * self.gt;
        enc.copy_buffer_to_buffer(&self.out, 0, &self.staging, 0, bytes.next_multiple_of(4));
        self.enc = Some(enc);
        self.submit_and_read(bytes)
    }

    /// The `k` lowest (g_i, i) by the device's compaction (shaders/below.wgsl) of the rows at
    /// or below the last call's bound: one pass and a readback of at most 4k + 64 candidates
    /// instead of all of g. False, with nothing to use in `out`, when there is no bound for
    /// this k yet or the bound let through fewer than k rows or more than the capacity; the
    /// caller then reads g whole. Otherwise the same selection as from g read whole (the same
    /// f32 values, sorted by value, then index), and the bound moves as it would there.
    pub(super) fn lowest_below(&mut self, k: usize, out: &mut Vec<(f64, usize)>) -> Result<bool> {
        let (bk, bound) = self.lowest_bound;
        let cap = capacity(k);
        let bytes = 4 * (1 + 2 * cap) as u64;
        if bk != k || !bound.is_finite() || bytes > self.out_bytes {
            return Ok(false);
        }
        // The counter starts at zero: the write lands before the next submit, after the
        // readbacks that used the buffer before.
        self.ctx.queue.write_buffer(&self.out, 0, &[0u8; 4]);
        self.stats.bytes_up += 4;
        let m = self.prob.len();
        let nwg = self.list_nwg(m);
        let p = Params {
            n: cap as u32,
            nwg,
            scale: split(bound),
            ..self.base_params()
        };
        let off = self.push_params(&p);
        let mut enc = self.take_encoder();
        dispatch(&mut enc, &self.pipes.below, &self.below_bg, &[off], nwg);
        self.stats.dispatches += 1;
        enc.copy_buffer_to_buffer(&self.out, 0, &self.staging, 0, bytes);
        self.enc = Some(enc);
        self.submit_and_read(bytes)?;
        let (_, ok) = parse_candidates(&self.readback, k, cap, out);
        if ok {
            self.finish_lowest(k, out);
        }
        Ok(ok)
    }

    /// The k lowest of the candidates in `out` (all rows at or below the bound), sorted by
    /// value, then index; the bound moves to the 2k-th, as when g is read whole.
    pub(super) fn finish_lowest(&mut self, k: usize, out: &mut Vec<(f64, usize)>) {
        super::super::select_lowest(out, 2 * k);
        self.lowest_bound = (k, out.last().map_or(f64::NEG_INFINITY, |l| l.0));
        out.truncate(k);
    }

    /// Reads all of g back into `g_host` (one copy, one round trip) unless it is current.
    pub(super) fn read_gradient(&mut self) -> Result<()> {
        let m = self.prob.len();
        if self.g_host_valid {
            return Ok(());
        }
        let bytes = m as u64 * self.gt;
        if bytes > 0 {
            let mut enc = self.take_encoder();
            enc.copy_buffer_to_buffer(&self.g, 0, &self.staging, 0, bytes.next_multiple_of(4));
            self.enc = Some(enc);
            self.submit_and_read(bytes)?;
        }
        self.g_host.resize(m, 0.0);
        decode_gt(&self.readback, self.wide, &mut self.g_host);
        self.g_host_valid = true;
        Ok(())
    }

    /// Entry k of the last readback, read as a GT value.
    pub(super) fn read_gt(&self, k: usize) -> f64 {
        let b = &self.readback;
        read_gt(b, k, self.wide)
    }

    pub(super) fn gather_from(
        &mut self,
        flags: u32,
        slot: usize,
        idx: &[usize],
        out: &mut [f64],
    ) -> Result<()> {
        if idx.is_empty() {
            return Ok(());
        }
        let n = idx.len();
        self.upload_gather_indices(idx);
        self.read_parts(n, std::iter::once((flags, slot)))?;
        for (k, o) in out.iter_mut().enumerate().take(n) {
            *o = self.read_gt(k);
        }
        Ok(())
    }

    /// Records one gather pass with parameter slot `off` and column-slot offset `so`.
    pub(super) fn record_gather(&mut self, off: u32, so: u32, nwg: u32) {
        let mut enc = self.take_encoder();
        dispatch(
            &mut enc,
            &self.pipes.gather,
            &self.gather_bg,
            &[off, so],
            nwg,
        );
        self.stats.dispatches += 1;
        self.enc = Some(enc);
    }

    /// Uploads a gather's index list. The upload lands before the next submit, i.e. before
    /// the gather runs; earlier gathers have completed (each waits for its readback).
    pub(super) fn upload_gather_indices(&mut self, idx: &[usize]) {
        self.gidx_host.clear();
        self.gidx_host.extend(idx.iter().map(|&i| i as u32));
        self.ctx
            .queue
            .write_buffer(&self.gidx, 0, bytemuck::cast_slice(&self.gidx_host));
        self.stats.bytes_up += 4 * self.gidx_host.len() as u64;
    }

    pub(super) fn upload_vector(&self, buf: &wgpu::Buffer, v: &[f64]) {
        let width = if self.wide { 8 } else { 4 };
        self.vector_bytes
            .set(self.vector_bytes.get() + width * v.len() as u64);
        if self.wide {
            self.ctx.queue.write_buffer(buf, 0, bytemuck::cast_slice(v));
        } else {
            let f: Vec<f32> = v.iter().map(|&x| x as f32).collect();
            self.ctx
                .queue
                .write_buffer(buf, 0, bytemuck::cast_slice(&f));
        }
    }
}

/// Records one compute pass of one dispatch: `pipe` with `bg` at the dynamic `offsets`, `nwg`
/// workgroups.
pub(super) fn dispatch(
    enc: &mut wgpu::CommandEncoder,
    pipe: &wgpu::ComputePipeline,
    bg: &wgpu::BindGroup,
    offsets: &[u32],
    nwg: u32,
) {
    let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
    pass.set_pipeline(pipe);
    pass.set_bind_group(0, bg, offsets);
    pass.dispatch_workgroups(nwg, 1, 1);
}

/// The column passes' dispatches in an open pass: every chunk of rows with its bind group 1,
/// counted in `dispatches`.
fn dispatch_chunks(pass: &mut wgpu::ComputePass<'_>, chunks: &[Chunk], dispatches: &mut u64) {
    for c in chunks {
        pass.set_bind_group(1, &c.bind, &[]);
        pass.dispatch_workgroups(c.nwg, 1, 1);
        *dispatches += 1;
    }
}

/// Maps the first `bytes` of `staging` once the submitted work has run and copies them into
/// `out`. `state` is the map callback's flag (0 pending, 1 mapped, 2 failed).
pub(super) fn read_back(
    ctx: &GpuContext,
    staging: &wgpu::Buffer,
    bytes: u64,
    state: &Arc<AtomicU8>,
    out: &mut Vec<u8>,
) -> Result<()> {
    // Another thread polling the same device may be the one that runs the callback, so poll
    // until it has run.
    state.store(0, Ordering::Relaxed);
    let flag = state.clone();
    let slice = staging.slice(0..bytes.max(4).next_multiple_of(4));
    slice.map_async(wgpu::MapMode::Read, move |r| {
        flag.store(if r.is_ok() { 1 } else { 2 }, Ordering::Release);
    });
    loop {
        ctx.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| Error::Backend(format!("{}: {e}", ctx.adapter.name)))?;
        ctx.check("compute pass")?;
        match state.load(Ordering::Acquire) {
            0 => std::thread::yield_now(),
            1 => break,
            _ => {
                return Err(Error::Backend(format!(
                    "{}: reading results back failed",
                    ctx.adapter.name
                )));
            }
        }
    }
    {
        let view = slice
            .get_mapped_range()
            .map_err(|e| Error::Backend(format!("{}: {e}", ctx.adapter.name)))?;
        out.clear();
        out.extend_from_slice(&view[..bytes as usize]);
    }
    staging.unmap();
    Ok(())
}

/// Entry k of a read-back buffer of GT values (f64 when `wide`, else f32), little-endian.
pub(super) fn read_gt(b: &[u8], k: usize, wide: bool) -> f64 {
    if wide {
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[8 * k..8 * k + 8]);
        f64::from_le_bytes(w)
    } else {
        let mut w = [0u8; 4];
        w.copy_from_slice(&b[4 * k..4 * k + 4]);
        f32::from_le_bytes(w) as f64
    }
}

/// `out[i]` = entry i of a read-back buffer of GT values; in parallel for a large vector.
pub(super) fn decode_gt(b: &[u8], wide: bool, out: &mut [f64]) {
    use rayon::prelude::*;
    const CHUNK: usize = 1 << 16;
    let one = |(c, part): (usize, &mut [f64])| {
        for (r, o) in part.iter_mut().enumerate() {
            *o = read_gt(b, c * CHUNK + r, wide);
        }
    };
    if out.len() >= 1 << 18 {
        out.par_chunks_mut(CHUNK).enumerate().for_each(one);
    } else {
        out.chunks_mut(CHUNK).enumerate().for_each(one);
    }
}

/// The u32 at byte offset `o` of a read-back buffer, little-endian.
pub(super) fn read_u32(b: &[u8], o: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[o..o + 4]);
    u32::from_le_bytes(w)
}

/// The capacity of the compaction for k: candidates read back at most.
pub(super) fn capacity(k: usize) -> usize {
    4 * k + 64
}

/// Reads the compaction's counter and, when it lies within k ..= `cap`, its candidates into
/// `out` (in the order they landed); returns the counter and whether `out` holds them.
pub(super) fn parse_candidates(
    b: &[u8],
    k: usize,
    cap: usize,
    out: &mut Vec<(f64, usize)>,
) -> (usize, bool) {
    let count = read_u32(b, 0) as usize;
    out.clear();
    if count < k || count > cap {
        return (count, false);
    }
    out.extend((0..count).map(|c| {
        let v = f32::from_bits(read_u32(b, 4 * (1 + 2 * c))) as f64;
        (v, read_u32(b, 4 * (2 + 2 * c)) as usize)
    }));
    (count, true)
}
