//! [`Backend`] for [`GpuBackend`]: each call records its passes (`passes.rs`) and reads back
//! what the host needs; the call times kept in its stats are host time, the device work a call
//! waits for included.

use super::*;
use crate::backend::call;
use crate::backend::stats::timed_call;
use crate::backend::{Certify, Columns, Guests, Marks, Ranks};

impl Backend for GpuBackend<'_> {
    fn len(&self) -> usize {
        self.prob.len()
    }

    fn name(&self) -> String {
        format!(
            "gpu: {} ({}, {} gradient, {} columns cached, {} data chunk{})",
            self.ctx.adapter.name,
            self.ctx.adapter.backend,
            if self.wide { "f64" } else { "f32" },
            self.plan.cache_slots,
            self.plan.chunks,
            if self.plan.chunks == 1 { "" } else { "s" }
        )
    }

    fn q_diag(&self, i: usize) -> f64 {
        if i < self.prob.len() {
            return self.prob.q_diag(i);
        }
        let g = &self.guests[i - self.prob.len()];
        self.prob.kernel.from_dot(g.norm, g.norm, g.norm) + 1.0 + g.inv_c
    }

    fn q(&self, i: usize, j: usize) -> f64 {
        let m = self.prob.len();
        if i < m && j < m {
            return self.prob.q(i, j);
        }
        // The arithmetic of Problem::q, with a guest's row.
        let ((ri, yi, ni), (rj, yj, nj)) = (self.point(i), self.point(j));
        let v = yi * yj * (self.prob.kernel.from_dot(ri.dot(&rj), ni, nj) + 1.0);
        if i == j {
            v + self.guests[i - m].inv_c
        } else {
            v
        }
    }

    fn set_alpha(&mut self, alpha: &ActiveSet) -> Result<()> {
        let mut g = vec![0.0; self.prob.len()];
        crate::backend::exact::full_gradient(self.prob, alpha, &mut g);
        self.set_alpha_with(alpha, &g)
    }

    fn set_alpha_with(&mut self, _alpha: &ActiveSet, g: &[f64]) -> Result<()> {
        assert_eq!(g.len(), self.prob.len());
        // Recorded work would otherwise run after the upload below and corrupt it.
        self.flush();
        self.loop_stale();
        self.upload_vector(&self.g, g);
        if self.prev {
            self.upload_vector(&self.gp, g);
        }
        self.min_valid = false;
        self.g_changed();
        Ok(())
    }

    fn enable_prev(&mut self) {
        self.loop_stale();
        if !self.prev {
            self.prev = true;
            let bytes = self.prob.len() as u64 * self.gt;
            if bytes > 0 {
                let mut enc = self.take_encoder();
                enc.copy_buffer_to_buffer(&self.g, 0, &self.gp, 0, bytes.next_multiple_of(4));
                self.enc = Some(enc);
            }
        }
    }

    fn update(&mut self, u: &Update) -> Result<()> {
        self.loop_stale();
        timed_call!(self.stats, call::UPDATE, Result<()>, {
            let cols = u.merged_cols();
            let mut p = self.base_params();
            p.flags |= F_WRITE;
            p.scale = split(u.scale);
            let mut slots = [0usize; 2];
            let mut pinned = None;
            for (k, c) in cols.iter().enumerate() {
                if let Some((j, coef)) = *c {
                    let (slot, _) = self.resolve(j, pinned);
                    slots[k] = slot;
                    pinned = Some(slot);
                    if k == 0 {
                        p.flags |= F_COL_A;
                        p.ca = split(coef);
                    } else {
                        p.flags |= F_COL_B;
                        p.cb = split(coef);
                    }
                }
            }
            if self.prev {
                p.cp = split(u.prev_coef);
                if u.rotate {
                    p.flags |= F_ROTATE;
                }
            }
            self.record_update(p, slots[0], slots[1]);
            self.stats.updates += 1;
            Ok(())
        })
    }

    fn reduce(&mut self, alpha: &ActiveSet) -> Result<Reduction> {
        timed_call!(self.stats, call::REDUCE, Result<Reduction>, {
            if !self.min_valid {
                let p = self.base_params();
                self.record_update(p, 0, 0);
            }
            let n = alpha.len();
            let nwg2 = if n > 0 { self.list_nwg(n) } else { 0 };
            if n > 0 {
                self.lidx_host.clear();
                self.lw_host.clear();
                for (i, a) in alpha.iter() {
                    self.lidx_host.push(i as u32);
                    if self.wide {
                        self.lw_host.extend_from_slice(&a.to_le_bytes());
                    } else {
                        self.lw_host.extend_from_slice(&(a as f32).to_le_bytes());
                    }
                }
                let q = &self.ctx.queue;
                q.write_buffer(&self.lidx, 0, bytemuck::cast_slice(&self.lidx_host));
                q.write_buffer(&self.lw, 0, &self.lw_host);
                self.stats.bytes_up += 4 * self.lidx_host.len() as u64 + self.lw_host.len() as u64;
                let p = Params {
                    n: n as u32,
                    nwg: nwg2,
                    ..self.base_params()
                };
                let off = self.push_params(&p);
                let mut enc = self.take_encoder();
                passes::dispatch(&mut enc, &self.pipes.active, &self.active_bg, &[off], nwg2);
                self.stats.dispatches += 1;
                self.enc = Some(enc);
            }
            let p = Params {
                nwg: self.nwg_rows,
                nwg2,
                ..self.base_params()
            };
            let off = self.push_params(&p);
            let vbytes = 4 * self.gt;
            let mut enc = self.take_encoder();
            passes::dispatch(&mut enc, &self.pipes.fin, &self.final_bg, &[off], 1);
            self.stats.dispatches += 1;
            enc.copy_buffer_to_buffer(&self.res_v, 0, &self.staging, 0, vbytes);
            enc.copy_buffer_to_buffer(&self.res_i, 0, &self.staging, vbytes, 8);
            self.enc = Some(enc);
            // A working-set solver's selection comes back with the reduction (prefetch.rs).
            let base = vbytes + 8;
            let pre = if self.pre.on {
                Some(self.record_prefetch(base, n))
            } else {
                None
            };
            let extra = pre.as_ref().map_or(0, |p| p.1);
            self.submit_and_read(base + extra)?;
            if let Some((rec, _)) = pre {
                self.take_prefetch(rec, base as usize);
            }
            let idx = |k: usize| {
                let o = vbytes as usize + 4 * k;
                passes::read_u32(&self.readback, o)
            };
            let (s, v) = (idx(0), idx(1));
            let (s, g_s) = if s == NONE {
                (0, f64::NAN)
            } else {
                (s as usize, self.read_gt(0))
            };
            let (v, g_v) = if v == NONE || n == 0 {
                (usize::MAX, f64::NEG_INFINITY)
            } else {
                (v as usize, self.read_gt(1))
            };
            Ok(Reduction {
                s,
                g_s,
                v,
                g_v,
                alpha_g: if n > 0 { self.read_gt(2) } else { 0.0 },
                alpha_g_prev: if n > 0 && self.prev {
                    self.read_gt(3)
                } else {
                    0.0
                },
            })
        })
    }

    fn gather(&mut self, idx: &[usize], out: &mut [f64]) -> Result<()> {
        timed_call!(self.stats, call::GATHER, Result<()>, {
            if self.g_host_valid {
                for (o, &i) in out.iter_mut().zip(idx) {
                    *o = self.g_host[i];
                }
                return Ok(());
            }
            if self.prefetched_gather(idx, out) {
                return Ok(());
            }
            self.gather_from(0, 0, idx, out)
        })
    }

    fn gather_prev(&mut self, idx: &[usize], out: &mut [f64]) -> Result<()> {
        let f = if self.prev { SRC_PREV } else { 0 };
        self.gather_from(f, 0, idx, out)
    }

    fn column_entries(&mut self, j: usize, idx: &[usize], out: &mut [f64]) -> Result<()> {
        let (slot, miss) = self.resolve(j, None);
        if miss {
            self.fresh = j;
        }
        self.gather_from(SRC_COL, slot, idx, out)
    }

    fn gather_fused(
        &mut self,
        idx: &[usize],
        g: &mut [f64],
        prev: Option<&mut [f64]>,
        col: Option<(usize, &mut [f64])>,
    ) -> Result<()> {
        let n = idx.len();
        let parts = 1 + prev.is_some() as usize + col.is_some() as usize;
        if n == 0 {
            return Ok(());
        }
        if (parts * n) as u64 * self.gt > self.out_bytes {
            return crate::backend::gather_by_parts(self, idx, g, prev, col);
        }
        let slot = match &col {
            Some((j, _)) => {
                let (slot, miss) = self.resolve(*j, None);
                if miss {
                    self.fresh = *j;
                }
                slot
            }
            None => 0,
        };
        self.upload_gather_indices(idx);
        // The sources in output order: g, then g⁻, then the column (no per-call list).
        let mut srcs = [(0u32, slot); 3];
        let mut used = 1;
        if prev.is_some() {
            srcs[used].0 = if self.prev { SRC_PREV } else { 0 };
            used += 1;
        }
        if col.is_some() {
            srcs[used].0 = SRC_COL;
            used += 1;
        }
        self.read_parts(n, srcs[..used].iter().copied())?;
        for (k, o) in g.iter_mut().enumerate().take(n) {
            *o = self.read_gt(k);
        }
        let mut part = 1;
        if let Some(p) = prev {
            for (k, o) in p.iter_mut().enumerate().take(n) {
                *o = self.read_gt(part * n + k);
            }
            part += 1;
        }
        if let Some((_, q)) = col {
            for (k, o) in q.iter_mut().enumerate().take(n) {
                *o = self.read_gt(part * n + k);
            }
        }
        Ok(())
    }

    fn hints(&self) -> crate::backend::Hints {
        crate::backend::Hints {
            partial_sums: false,
            column_capacity: self.cache.capacity(),
            ws_floor: if self.ctx.is_software() {
                0
            } else {
                super::WS_FLOOR
            },
            entries_are_local: false,
            start_from_columns: false,
        }
    }

    fn stats(&self) -> BackendStats {
        BackendStats {
            bytes_up: self.stats.bytes_up + self.vector_bytes.get(),
            ..self.stats
        }
    }
}

impl Columns for GpuBackend<'_> {
    fn device_loop(&mut self) -> Option<&mut dyn crate::backend::DeviceLoop> {
        if self.loop_available() {
            Some(self)
        } else {
            None
        }
    }

    fn prefetch_columns(&mut self, js: &[usize]) -> Result<usize> {
        Ok(self.prefetch(js))
    }

    /// Four columns a pass (the terms in the order of updates by pairs, so the same numbers);
    /// with g⁻ kept, or a cache too small to hold four columns at once, by pairs.
    fn update_many(&mut self, scale: f64, cols: &[(usize, f64)]) -> Result<()> {
        self.loop_stale();
        timed_call!(self.stats, call::UPDATE_MANY, Result<()>, {
            if self.prev || self.cache.usable() < 6 {
                return crate::backend::update_by_pairs(self, scale, cols);
            }
            // Every column at once where the cache is one binding and holds them all.
            if cols.len() > 4
                && cols.len().min(UPDATE_LIST_MAX) + 2 <= self.cache.usable()
                && self.record_update_list(scale, cols)
            {
                return Ok(());
            }
            let mut scale = scale;
            let mut rest = cols;
            while !rest.is_empty() || scale != 1.0 {
                let (now, later) = rest.split_at(rest.len().min(4));
                let mut p = self.base_params();
                p.flags |= F_WRITE;
                p.scale = split(scale);
                let mut slots = [0usize; 4];
                for (k, &(j, c)) in now.iter().enumerate() {
                    // The other three are the most recently used: never the one evicted.
                    let (slot, _) = self.resolve(j, None);
                    slots[k] = slot;
                    let (flag, coef) = match k {
                        0 => (F_COL_A, &mut p.ca),
                        1 => (F_COL_B, &mut p.cb),
                        2 => (F_COL_C, &mut p.cc),
                        _ => (F_COL_D, &mut p.cd),
                    };
                    p.flags |= flag;
                    *coef = split(c);
                }
                self.record_update4(p, slots);
                self.stats.updates += 1;
                scale = 1.0;
                rest = later;
            }
            Ok(())
        })
    }

    /// One readback of all of g (kept on the host until a pass writes g: the working set's
    /// gathers that follow are served from it), the selection on the host.
    fn lowest(&mut self, k: usize, out: &mut Vec<(f64, usize)>) -> Result<()> {
        timed_call!(self.stats, call::LOWEST, Result<()>, {
            self.pre.on = true;
            if self.pre.valid
                && let Some((pk, count)) = self.pre.low.take()
                && pk == k
            {
                if count >= k && count <= super::passes::capacity(k) {
                    out.clear();
                    out.extend_from_slice(&self.pre.cands);
                    self.finish_lowest(k, out);
                    return Ok(());
                }
            } else if !self.wide
                && !self.g_host_valid
                && k > 0
                && self.prob.len() >= self.compact_min_rows
                && self.lowest_below(k, out)?
            {
                return Ok(());
            }
            self.read_gradient()?;
            let g = &self.g_host;
            let mut bound = self.lowest_bound;
            crate::backend::select_lowest_bounded_slice(
                g,
                k,
                &mut bound,
                &mut self.select_lists,
                out,
            );
            self.lowest_bound = bound;
            Ok(())
        })
    }

    /// The columns of `w` in batched passes (the misses only), then g_W and Q[w, w] by
    /// gathers recorded into one submit and read back once (in a few when the block is
    /// larger than the gather buffer).
    fn block(&mut self, w: &[usize], out: &mut [f64], g_w: &mut [f64]) -> Result<usize> {
        self.loop_stale();
        timed_call!(self.stats, call::BLOCK, Result<usize>, {
            let n = w.len();
            let need = 2 * n + 2;
            if n == 0 || need > self.cache.capacity() {
                return crate::backend::block_by_columns(self, w, out, g_w);
            }
            let held = w.iter().filter(|&&j| self.cache.holds(j)).count();
            self.stats.cache_hits += held as u64;
            self.cache.ensure_usable(need);
            self.prefetch(w);
            let mut slots = std::mem::take(&mut self.slot_buf);
            slots.clear();
            for &j in w {
                let (slot, hit) = self.cache.get_or_assign(j, None);
                if !hit {
                    self.record_column(j, slot);
                    self.cache.mark_valid(slot);
                }
                slots.push(slot);
            }
            // One dispatch per readback where the whole cache is bound and the index list holds W
            // and its slots; otherwise one per column.
            let one_dispatch = self.gather_all_bg.is_some() && 2 * n <= self.prob.len();
            if one_dispatch {
                self.gidx_host.clear();
                self.gidx_host.extend(w.iter().map(|&i| i as u32));
                self.gidx_host.extend(slots.iter().map(|&s| s as u32));
                self.ctx
                    .queue
                    .write_buffer(&self.gidx, 0, bytemuck::cast_slice(&self.gidx_host));
                self.stats.bytes_up += 4 * self.gidx_host.len() as u64;
            } else {
                self.upload_gather_indices(w);
            }
            // Parts of n values: g_W, then the n columns; as many per readback as the buffer holds.
            let per_read = ((self.out_bytes / self.gt) as usize / n).max(1);
            let mut part = 0;
            while part <= n {
                let last = (part + per_read).min(n + 1);
                let src = |k: usize| {
                    if k == 0 {
                        (0, 0)
                    } else {
                        (SRC_COL, slots[k - 1])
                    }
                };
                if one_dispatch {
                    self.read_block_parts(n, part, last)?;
                } else {
                    self.read_parts(n, (part..last).map(src))?;
                }
                for k in part..last {
                    let dst = if k == 0 {
                        &mut g_w[..n]
                    } else {
                        &mut out[(k - 1) * n..k * n]
                    };
                    for (r, o) in dst.iter_mut().enumerate() {
                        *o = self.read_gt((k - part) * n + r);
                    }
                }
                part = last;
            }
            self.slot_buf = slots;
            Ok(held)
        })
    }

    /// The cache's memory only (no column is carried over: the next backend's slots are over
    /// other rows), for [`GpuBackend::with_data_reusing`].
    fn export_columns(&mut self, _keep: &[usize]) -> Option<crate::backend::ColumnExport> {
        Some(crate::backend::ColumnExport(Box::new(super::CacheMemory(
            self.cache_buf.clone(),
        ))))
    }
}

impl Ranks for GpuBackend<'_> {}

impl Certify for GpuBackend<'_> {}

impl Guests for GpuBackend<'_> {
    fn add_guest(&mut self, row: Row<'_>, y: f64, inv_c: f64) -> Result<usize> {
        let m = self.prob.len();
        if m + self.guests.len() >= NONE as usize {
            return Err(Error::Backend(
                "too many points for 32-bit column numbers".into(),
            ));
        }
        self.guests.push(Guest {
            row: crate::data::OwnedRow::from(row),
            y,
            norm: row.sq_norm(),
            inv_c,
        });
        Ok(m + self.guests.len() - 1)
    }
}

impl Marks for GpuBackend<'_> {
    fn fill_marks(&mut self, mk: u8) -> Result<()> {
        self.marks_host.clear();
        self.marks_host.resize(self.prob.len(), mk as u32);
        if !self.marks_host.is_empty() {
            self.ctx
                .queue
                .write_buffer(&self.marks, 0, bytemuck::cast_slice(&self.marks_host));
            self.stats.bytes_up += 4 * self.marks_host.len() as u64;
        }
        Ok(())
    }

    fn set_marks(&mut self, marks: &[(usize, u8)]) -> Result<()> {
        if self.marks_host.len() != self.prob.len() {
            self.fill_marks(crate::backend::mark::NONE)?;
        }
        // The writes land before the next submit; no recorded pass reads the marks except a
        // marked reduction, which is submitted as soon as it is recorded.
        let q = &self.ctx.queue;
        for &(i, mk) in marks {
            self.marks_host[i] = mk as u32;
            q.write_buffer(
                &self.marks,
                4 * i as u64,
                bytemuck::bytes_of(&self.marks_host[i]),
            );
        }
        self.stats.bytes_up += 4 * marks.len() as u64;
        Ok(())
    }

    fn reduce_marked(&mut self, shift: f64) -> Result<MarkedReduction> {
        if self.marks_host.len() != self.prob.len() {
            return Ok(MarkedReduction::EMPTY);
        }
        let nwg = self.nwg_rows;
        let p = Params {
            nwg,
            scale: split(shift),
            ..self.base_params()
        };
        let off = self.push_params(&p);
        let vbytes = 3 * self.gt;
        let mut enc = self.take_encoder();
        {
            let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
            pass.set_pipeline(&self.pipes.marked);
            pass.set_bind_group(0, &self.marked_bg, &[off]);
            pass.dispatch_workgroups(nwg, 1, 1);
            self.stats.dispatches += 1;
            pass.set_pipeline(&self.pipes.marked_final);
            pass.dispatch_workgroups(1, 1, 1);
            self.stats.dispatches += 1;
        }
        let o = 3 * nwg as u64;
        enc.copy_buffer_to_buffer(&self.mpart_v, o * self.gt, &self.staging, 0, vbytes);
        enc.copy_buffer_to_buffer(
            &self.mpart_i,
            o * 4,
            &self.staging,
            vbytes.next_multiple_of(4),
            12,
        );
        self.enc = Some(enc);
        let ioff = vbytes.next_multiple_of(4) as usize;
        self.submit_and_read(ioff as u64 + 12)?;
        let idx = |k: usize| {
            let o = ioff + 4 * k;
            match passes::read_u32(&self.readback, o) {
                NONE => usize::MAX,
                i => i as usize,
            }
        };
        let val = |k: usize, empty: f64| {
            if idx(k) == usize::MAX {
                empty
            } else {
                self.read_gt(k)
            }
        };
        Ok(MarkedReduction {
            low: (idx(0), val(0, f64::INFINITY)),
            mid: (idx(1), val(1, f64::INFINITY)),
            high: (idx(2), val(2, f64::NEG_INFINITY)),
        })
    }
}
