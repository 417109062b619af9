//! `mpirun -np P fwsvm train …`: the command line's part of a distributed run (files, messages,
//! the summary); the training itself is `fwsvm::dist`'s.

use super::*;

/// `mpirun -np P fwsvm train …`: each rank reads its slice of the training file, the solver
/// runs on every rank over the distributed backend (see `fwsvm::dist`), rank 0 checks the
/// output paths, writes the model and reports (with the messages and bytes each iteration
/// sent); an error on any rank ends every rank with its message.
pub(super) fn run_distributed(args: TrainArgs) -> Result<()> {
    use fwsvm::dist::comm::{Comm, agree};
    let comm = fwsvm::dist::mpi::MpiComm::init()?;
    let a = &args.opts;
    let root = comm.rank() == 0;
    let model_path = args
        .model
        .clone()
        .unwrap_or_else(|| default_model_path(&args.train));
    agree(&comm, check_distributed_files(&args, &model_path, root))?;
    set_threads(a.threads, a.quiet || !root);
    let t0 = Instant::now();
    let (local, slice) = fwsvm::dist::slice::read_libsvm_slice(&args.train, &comm)?;
    check_sample(a.sample, slice.total, &args.train)?;
    let quiet = a.quiet || !root;
    if !quiet {
        eprintln!(
            "fwsvm: {} ranks; {} rows ({} on rank 0), read in {:.2}s; {}",
            comm.size(),
            slice.total,
            slice.rows,
            t0.elapsed().as_secs_f64(),
            a.algorithm()
        );
    }
    let device = a.open_rank_device(args.backend, &comm, &local)?;
    let params = a.params(device);
    refuse_what_does_not_apply(&args, &params)?;
    if let Some(k) = args.cv {
        return distributed_cv(&comm, (local, slice), &params, (k, a.seed), &args, quiet);
    }
    let before = comm.traffic();
    // One-versus-one: the class pairs dealt to ranks whole when that is cheaper.
    let classes = fwsvm::dist::train::class_order(&comm, &local)?.len();
    let multiclass = classes > 2 && !params.one_class;
    // --trace: rank 0 writes it (every rank sees the same iterates of a problem trained over
    // all ranks; pairs dealt to other ranks send their lines to rank 0 at the end).
    let trace = match (&args.trace, root) {
        (Some(p), true) => Trace::create(p, multiclass).map(|t| Some(Rc::new(RefCell::new(t)))),
        _ => Ok(None),
    };
    let trace = agree(&comm, trace)?;
    // Pairs dealt to ranks: rank 0's show progress, and every rank keeps its pairs' trace
    // lines for rank 0. Pairs over all ranks: rank 0 traces them itself.
    let lines: PairLines = Rc::default();
    let (mut progress, mut shared) = (observers(None, quiet), observers(trace.clone(), quiet));
    let tracing = args.trace.is_some();
    let mut per_pair = |plan, info: &PairInfo| -> Vec<Box<dyn Observer>> {
        if plan == fwsvm::dist::plan::Distribute::Rows {
            return shared(info);
        }
        let mut v = progress(info);
        if tracing {
            v.push(Box::new(TraceLines(lines.clone(), info.index)));
        }
        v
    };
    let (mut model, results, all_rows) = fwsvm::dist::run::train_run(
        &comm,
        (&local, slice, classes),
        &params,
        args.distribute,
        &mut per_pair,
        &mut |why| {
            if !quiet {
                eprintln!("fwsvm: {why}");
            }
        },
    )?;
    if tracing && all_rows.is_some() {
        write_pair_traces(&comm, &lines.borrow(), trace.as_ref())?;
    }
    if a.probability {
        distributed_probabilities(&comm, (&local, slice), all_rows, &params, &mut model, &args)?;
    }
    let traced = trace.as_ref().map_or(Ok(()), |t| t.borrow_mut().finish());
    agree(&comm, traced)?;
    let sent = comm.traffic().since(&before);
    let saved = if root {
        model.save(&model_path)
    } else {
        Ok(())
    };
    agree(&comm, saved)?;
    if !quiet {
        report_distributed(a, &model, &results, sent, &model_path);
    }
    // --test: rank 0 reads the test file and predicts with the model, as one process does.
    let scored = match (&args.test, root) {
        (Some(path), true) => a
            .data
            .read(path, a.quiet)
            .and_then(|test| score_test(&params, &model, &test, path, a.quiet)),
        _ => Ok(()),
    };
    agree(&comm, scored)
}

/// Rank 0 checks the run's files (a distributed run reads LIBSVM text only); every rank gets
/// its verdict through `agree`.
fn check_distributed_files(
    args: &TrainArgs,
    model_path: &std::path::Path,
    root: bool,
) -> Result<()> {
    if args.opts.data.format != fwsvm::data::Format::Libsvm {
        return Err(Error::param(
            "--format other than libsvm is not distributed over ranks yet: run it in one process"
                .into(),
        ));
    }
    if !root {
        return Ok(());
    }
    let mut f = RunFiles::new();
    f.input("training data", &args.train)
        .input_opt("test data", args.test.as_deref())
        .output_opt("trace", args.trace.as_deref());
    if args.cv.is_none() {
        f.output("model file", model_path);
    }
    f.check()
}

/// `-v k` over ranks: the folds' accuracy (rank 0 prints the total as svm-train does).
fn distributed_cv(
    comm: &fwsvm::dist::mpi::MpiComm,
    (local, slice): (fwsvm::data::Dataset, fwsvm::dist::slice::RowSlice),
    params: &fwsvm::train::TrainParams,
    (k, seed): (usize, u64),
    args: &TrainArgs,
    quiet: bool,
) -> Result<()> {
    use fwsvm::dist::comm::Comm;
    let root = comm.rank() == 0;
    let mut on_plan = |why: &str| {
        if !quiet {
            eprintln!("fwsvm: {why}");
        }
    };
    let folds = fwsvm::dist::run::cross_validate_run(
        comm,
        local,
        slice,
        params,
        (k, seed),
        args.distribute,
        &mut on_plan,
    )?;
    let (held, right) = folds
        .iter()
        .fold((0, 0), |(h, r), (n, c, _)| (h + n, r + c));
    if !quiet {
        for (f, (n, c, iters)) in folds.iter().enumerate() {
            eprintln!(
                "fwsvm: fold {}/{k}: {n} held out, {:.2} % correct; iterations {iters}",
                f + 1,
                100.0 * *c as f64 / (*n).max(1) as f64
            );
        }
    }
    if root {
        println!(
            "Cross Validation Accuracy = {}%",
            crate::fmt::fmt_g(100.0 * right as f64 / held.max(1) as f64, 6)
        );
    }
    Ok(())
}

/// `-b 1` over ranks: Platt's sigmoids, the class pairs dealt to ranks that hold every row.
fn distributed_probabilities(
    comm: &fwsvm::dist::mpi::MpiComm,
    (local, slice): (&fwsvm::data::Dataset, fwsvm::dist::slice::RowSlice),
    all_rows: Option<fwsvm::data::Dataset>,
    params: &fwsvm::train::TrainParams,
    model: &mut fwsvm::model::Model,
    args: &TrainArgs,
) -> Result<()> {
    use fwsvm::dist::comm::Comm;
    // Platt's sigmoids, the class pairs dealt to ranks that hold every row.
    let t = Instant::now();
    fwsvm::dist::run::add_probabilities_run(
        comm,
        (local, slice),
        all_rows,
        params,
        model,
        args.distribute,
        &mut |_| {},
    )?;
    if !(args.opts.quiet || comm.rank() != 0) {
        eprintln!(
            "fwsvm: probability estimates: Platt's sigmoid for each class pair from {}-fold \
             cross-validated decision values, pairs dealt to the ranks ({:.2}s)",
            fwsvm::train::PROBABILITY_FOLDS,
            t.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// `--sample` draws from the rows of all ranks.
fn check_sample(sample: usize, total: usize, train: &std::path::Path) -> Result<()> {
    if sample > total {
        return Err(Error::param(format!(
            "--sample {sample}: more than the {total} rows of {}; draw at most that many (the \
             paper uses 194), or 0 for the full gradient",
            train.display()
        )));
    }
    Ok(())
}

/// The trace lines of the class pairs dealt to ranks, gathered to rank 0 and written there in
/// pair order. Collective.
fn write_pair_traces(
    comm: &fwsvm::dist::mpi::MpiComm,
    lines: &[(usize, Vec<u8>)],
    trace: Option<&Rc<RefCell<Trace>>>,
) -> Result<()> {
    let mut got = fwsvm::dist::run::gather_pair_blocks(comm, lines)?;
    got.sort_by_key(|&(pair, _)| pair);
    if let Some(t) = trace {
        let mut t = t.borrow_mut();
        got.iter().for_each(|(_, block)| t.write_bytes(block));
    }
    Ok(())
}

/// The run's summary line on standard error (rank 0).
fn report_distributed(
    a: &TrainOpts,
    model: &fwsvm::model::Model,
    results: &[fwsvm::solver::SolveResult],
    sent: fwsvm::dist::comm::Traffic,
    model_path: &std::path::Path,
) {
    let iterations: u64 = results.iter().map(|r| r.iterations).sum();
    let it = iterations.max(1) as f64;
    let gap = results
        .iter()
        .map(|r| r.certified_gap.unwrap_or(r.gap))
        .fold(0.0, f64::max);
    let stop = results
        .iter()
        .map(|r| r.stop)
        .find(|s| *s != fwsvm::solver::StopReason::Converged)
        .unwrap_or(fwsvm::solver::StopReason::Converged);
    // The working-set solver's iterations are its outer ones (q columns each).
    let per = if a.algorithm() == fwsvm::solver::Algorithm::Ws {
        "outer iteration"
    } else {
        "iteration"
    };
    eprintln!(
        "fwsvm: {}: {} class pair(s), iterations {}, SVs {}, largest certified gap {:.3e}, \
         objective {:.9}, {:.2}s (+{:.2}s certify), stop: {}; rank 0 sent {} messages, {} \
         bytes ({:.1} messages, {:.0} bytes per {per})",
        a.algorithm(),
        results.len(),
        iterations,
        model.total_sv(),
        gap,
        results
            .iter()
            .map(|r| r.certified_f.unwrap_or(r.f))
            .sum::<f64>(),
        results.iter().map(|r| r.seconds).sum::<f64>(),
        results.iter().map(|r| r.certify_seconds).sum::<f64>(),
        stop,
        sent.messages,
        sent.bytes,
        sent.messages as f64 / it,
        sent.bytes as f64 / it
    );
    if let [r] = results {
        super::report::say_warm_and_rounds(r);
    }
    eprintln!("fwsvm: model written to {}", model_path.display());
}

/// Keeps one class pair's trace lines (a rank's dealt pairs, sent to rank 0 at the end), in
/// one block of text per pair.
struct TraceLines(PairLines, usize);

/// Blocks of trace lines by class pair, shared by the pairs' observers.
type PairLines = Rc<RefCell<Vec<(usize, Vec<u8>)>>>;

impl Observer for TraceLines {
    fn observe(&mut self, p: &fwsvm::solver::Progress) {
        let mut blocks = self.0.borrow_mut();
        if blocks.last().is_none_or(|b| b.0 != self.1) {
            blocks.push((self.1, Vec::new()));
        }
        if let Some((_, block)) = blocks.last_mut() {
            // Writing into a Vec cannot fail.
            let _ = Trace::write_line(block, Some(self.1), p);
        }
    }
}
