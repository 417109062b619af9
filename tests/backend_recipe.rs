//! ARCHITECTURE's "Adding a backend", followed once by a backend that exists only here: a
//! type that implements the core `Backend` (its twelve required methods), states the
//! capabilities `Columns`, `Ranks` and `Certify` with every default (no fast path of its
//! own), implements `Marks` and `Guests`, and a factory that implements `Backends` — what
//! training hands the solver. The solver's one entry (`solver::entry::solve_on`) runs the
//! default algorithm and the marked ones on it, and reaches the CPU backend's optimum within
//! the certified gaps: the recipe's step 4.

mod common;

use common::problems::random_dataset;
use fwsvm::active::ActiveSet;
use fwsvm::backend::cpu::{CpuConfig, cpu_backend};
use fwsvm::backend::{
    Backend, BackendStats, Backends, Certify, ColumnExport, Columns, Device, Guests, Local,
    MarkedReduction, Marks, Ranks, Reduction, Update,
};
use fwsvm::kernel::Kernel;
use fwsvm::problem::Problem;
use fwsvm::solver::{Algorithm, SolverParams, StopReason};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The test's backend: the CPU backend's core methods behind a counter of calls, and nothing
/// else (no batched columns, no prefetch, no certification of its own).
struct Counting<'a> {
    inner: Box<dyn Local + 'a>,
    calls: &'a AtomicUsize,
}

impl Counting<'_> {
    fn count(&self) {
        self.calls.fetch_add(1, Ordering::Relaxed);
    }
}

impl Backend for Counting<'_> {
    fn len(&self) -> usize {
        self.inner.len()
    }
    fn name(&self) -> String {
        format!("counting ({})", self.inner.name())
    }
    fn q_diag(&self, i: usize) -> f64 {
        self.inner.q_diag(i)
    }
    fn q(&self, i: usize, j: usize) -> f64 {
        self.inner.q(i, j)
    }
    fn set_alpha(&mut self, alpha: &ActiveSet) -> fwsvm::Result<()> {
        self.count();
        self.inner.set_alpha(alpha)
    }
    fn enable_prev(&mut self) {
        self.inner.enable_prev()
    }
    fn update(&mut self, u: &Update) -> fwsvm::Result<()> {
        self.count();
        self.inner.update(u)
    }
    fn reduce(&mut self, alpha: &ActiveSet) -> fwsvm::Result<Reduction> {
        self.count();
        self.inner.reduce(alpha)
    }
    fn gather(&mut self, idx: &[usize], out: &mut [f64]) -> fwsvm::Result<()> {
        self.inner.gather(idx, out)
    }
    fn gather_prev(&mut self, idx: &[usize], out: &mut [f64]) -> fwsvm::Result<()> {
        self.inner.gather_prev(idx, out)
    }
    fn column_entries(&mut self, j: usize, idx: &[usize], out: &mut [f64]) -> fwsvm::Result<()> {
        self.count();
        self.inner.column_entries(j, idx, out)
    }
    fn stats(&self) -> BackendStats {
        self.inner.stats()
    }
}

impl Columns for Counting<'_> {}

impl Ranks for Counting<'_> {}

impl Certify for Counting<'_> {}

impl Marks for Counting<'_> {
    fn fill_marks(&mut self, mk: u8) -> fwsvm::Result<()> {
        self.inner.fill_marks(mk)
    }
    fn set_marks(&mut self, marks: &[(usize, u8)]) -> fwsvm::Result<()> {
        self.inner.set_marks(marks)
    }
    fn reduce_marked(&mut self, shift: f64) -> fwsvm::Result<MarkedReduction> {
        self.count();
        self.inner.reduce_marked(shift)
    }
}

impl Guests for Counting<'_> {
    fn add_guest(&mut self, row: fwsvm::data::Row<'_>, y: f64, inv_c: f64) -> fwsvm::Result<usize> {
        self.inner.add_guest(row, y, inv_c)
    }
}

/// The test's factory: every backend it opens is a `Counting` one, for the whole problem, a
/// round's rows and a subsample alike.
#[derive(Clone, Copy)]
struct CountingBackends<'c>(&'c AtomicUsize);

impl Backends for CountingBackends<'_> {
    fn open<'a>(
        &'a self,
        prob: &'a Problem<'a>,
        cpu: CpuConfig,
        _carried: Option<ColumnExport>,
    ) -> fwsvm::Result<Box<dyn Local + 'a>> {
        Ok(Box::new(Counting {
            inner: cpu_backend(prob, cpu),
            calls: self.0,
        }))
    }
    fn on_rows(&self, _rows: &[usize]) -> Box<dyn Backends + '_> {
        Box::new(*self)
    }
    fn on_subsample(&self, _rows: &[usize], _sub: &fwsvm::data::Dataset) -> Box<dyn Backends + '_> {
        Box::new(*self)
    }
}

#[test]
fn a_backend_added_by_the_recipe_reaches_the_cpu_optimum() {
    let calls = AtomicUsize::new(0);
    let ds = random_dataset(600, 5, false, 11);
    let prob = Problem::new(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 0.5 }, 10.0).unwrap();
    let cpu = CpuConfig {
        cache_bytes: 1 << 22,
        precision: Some(fwsvm::backend::cpu::Precision::F64),
        batched: false,
    };
    for alg in [
        Algorithm::Ws,
        Algorithm::Partan,
        Algorithm::SparseFw,
        Algorithm::SimpleSvm,
    ] {
        let prob = if alg == Algorithm::SimpleSvm {
            alg.problem(&ds, ds.labels.clone(), Kernel::Rbf { gamma: 0.5 }, 10.0)
                .unwrap()
        } else {
            prob.clone()
        };
        let params = SolverParams {
            algorithm: Some(alg),
            eps: 1e-6,
            rel_eps: Some(1e-3),
            ..Default::default()
        };
        let before = calls.load(Ordering::Relaxed);
        let ours = fwsvm::solver::entry::solve_on(
            &prob,
            &CountingBackends(&calls),
            cpu,
            &params,
            None,
            &mut [],
        )
        .unwrap();
        let theirs =
            fwsvm::solver::entry::solve_on(&prob, &Device::Cpu, cpu, &params, None, &mut [])
                .unwrap();
        assert!(
            calls.load(Ordering::Relaxed) > before + 10,
            "{alg:?}: the solver did not run on the test's backend"
        );
        assert_eq!(
            ours.stop,
            StopReason::Converged,
            "{alg:?} on the test's backend"
        );
        assert_eq!(theirs.stop, StopReason::Converged, "{alg:?} on the CPU");
        let (f1, f2) = (ours.certified_f.unwrap(), theirs.certified_f.unwrap());
        // The L2-SVM's certified gaps bound each objective's distance to the optimum;
        // SimpleSVM certifies its KKT violation instead, and both stop at the same tolerance.
        let allowed = if alg == Algorithm::SimpleSvm {
            1e-6 * f2.abs()
        } else {
            ours.certified_gap.unwrap() + theirs.certified_gap.unwrap() + 1e-12 * f2.abs()
        };
        assert!(
            (f1 - f2).abs() <= allowed,
            "{alg:?}: objective {f1} against the CPU's {f2} (allowed {allowed})"
        );
    }
}
