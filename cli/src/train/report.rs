//! What `fwsvm train` prints around a run: the warnings and first line, the per-pair summary
//! (iterations, support vectors, gap, device traffic, call times), and the test accuracy.

use super::*;

/// The warnings on the data and kernel, then the run's first line (unless quiet).
pub(super) fn announce(
    args: &TrainArgs,
    ds: &Dataset,
    params: &TrainParams,
    kernel: &fwsvm::kernel::Kernel,
    classes: &[f64],
    read_s: f64,
) {
    let a = &args.opts;
    let algorithm = a.algorithm();
    for &(label, _) in &a.class_weight {
        if !classes.contains(&label) && !a.quiet {
            // As svm-train: the weight is ignored, with a warning.
            eprintln!(
                "fwsvm: warning: class {label} of --class-weight/-w{label} is not in {}; \
                 ignored",
                args.train.display()
            );
        }
    }
    if !a.quiet {
        let notes = kernel_warnings(
            ds,
            kernel,
            &args.train,
            a.seed,
            matches!(a.gamma, Gamma::Auto),
        );
        let many = if params.one_class {
            None
        } else {
            many_classes_note(classes.len())
        };
        for w in notes.iter().chain(&many) {
            eprintln!("{w}");
        }
        eprintln!(
            "fwsvm: {} rows, {} features ({}), {}; {} with {}, C = {}; read in {:.2}s; {}",
            ds.len(),
            ds.n_features(),
            if ds.is_dense() { "dense" } else { "sparse" },
            if params.one_class {
                "one-class (labels ignored)".to_string()
            } else {
                format!("{} classes", classes.len())
            },
            algorithm,
            describe_kernel(kernel),
            a.cost,
            read_s,
            if params.sample > 0 {
                format!(
                    "sampled iterations, |S| = {} (kernel blocks on the {})",
                    params.sample,
                    params.device.describe()
                )
            } else {
                params.device.describe()
            }
        );
    }
}

/// The observers of each class pair: a progress line (unless quiet) and the trace.
pub(super) fn observers(
    trace: Option<Rc<RefCell<Trace>>>,
    quiet: bool,
) -> impl FnMut(&PairInfo) -> Vec<Box<dyn Observer>> {
    move |info: &PairInfo| -> Vec<Box<dyn Observer>> {
        let mut v: Vec<Box<dyn Observer>> = Vec::new();
        let prefix = if info.count > 1 {
            format!(
                "pair {}/{} ({} vs {})",
                info.index + 1,
                info.count,
                info.classes.0,
                info.classes.1
            )
        } else {
            "training".to_string()
        };
        if let Some(p) = ProgressLine::new(prefix, quiet) {
            v.push(Box::new(p));
        }
        if let Some(t) = &trace {
            t.borrow_mut().set_pair(info.index);
            v.push(Box::new(SharedTrace(t.clone())));
        }
        v
    }
}

/// An L2-SVM stopped with a gap above 2f still has a point of negative margin: say so.
pub(super) fn warn_negative_margins(algorithm: Algorithm, reports: &[fwsvm::train::PairReport]) {
    for r in reports {
        let (f, gap) = (
            r.result.certified_f.unwrap_or(r.result.f),
            r.result.certified_gap.unwrap_or(r.result.gap),
        );
        if algorithm.is_l2svm() && gap > 2.0 * f {
            eprintln!(
                "fwsvm: warning: {}the duality gap ({gap:.3e}) exceeds 2f = αᵀQα ({:.3e}): some \
                 point's margin is still negative and the model may be far from optimal \
                 (stopped by {}); see --rel-eps and -e/--eps",
                if reports.len() > 1 {
                    format!("pair {} vs {}: ", r.classes.0, r.classes.1)
                } else {
                    String::new()
                },
                2.0 * f,
                r.result.stop
            );
        }
    }
}

/// The per-pair lines (several classes) and the run's summary, working-set rounds and device
/// traffic.
pub(super) fn summarize(
    algorithm: Algorithm,
    model: &fwsvm::model::Model,
    reports: &[fwsvm::train::PairReport],
    multiclass: bool,
) {
    if multiclass {
        say_pairs(reports);
    }
    let iters: u64 = reports.iter().map(|r| r.result.iterations).sum();
    let secs: f64 = reports.iter().map(|r| r.result.seconds).sum();
    let cert_secs: f64 = reports.iter().map(|r| r.result.certify_seconds).sum();
    let gap = reports
        .iter()
        .filter_map(|r| r.result.certified_gap)
        .fold(None::<f64>, |m, g| Some(m.map_or(g, |m| m.max(g))));
    let obj: f64 = reports
        .iter()
        .map(|r| r.result.certified_f.unwrap_or(r.result.f))
        .sum();
    // The gap relative to 2f (the default rule of ws tests it against --rel-eps), the largest
    // over class pairs.
    let rel = reports
        .iter()
        .filter_map(|r| {
            let (gap, f) = (r.result.certified_gap?, r.result.certified_f?);
            (f > 0.0).then(|| gap / (2.0 * f))
        })
        .fold(None::<f64>, |m, g| Some(m.map_or(g, |m| m.max(g))));
    let stop = reports
        .iter()
        .map(|r| r.result.stop)
        .find(|s| *s != fwsvm::solver::StopReason::Converged)
        .unwrap_or(fwsvm::solver::StopReason::Converged);
    let cache = reports.iter().fold((0, 0), |(c, h), r| {
        (
            c + r.result.stats.columns_computed,
            h + r.result.stats.cache_hits,
        )
    });
    eprintln!(
        "fwsvm: {algorithm}: iterations {iters}, SVs {}, {} {}, objective {:.9}, {:.2}s (+{:.2}s certify), stop: {stop}; columns computed {}, cache hits {}",
        model.total_sv(),
        if algorithm.is_l2svm() {
            "certified gap"
        } else {
            "certified KKT violation"
        },
        match (gap, rel) {
            _ if reports.iter().any(|r| r.result.certified_gap.is_none()) =>
                uncertified(algorithm, reports),
            (Some(g), Some(r)) if algorithm.is_l2svm() =>
                format!("{g:.3e} ({:.1} % of 2f)", 100.0 * r),
            (Some(g), _) => format!("{g:.3e}"),
            (None, _) => uncertified(algorithm, reports),
        },
        obj,
        secs,
        cert_secs,
        cache.0,
        cache.1
    );
    say_merged(reports);
    say_rounds_and_traffic(reports, iters);
}

/// What the summary says in place of the certified gap when a pair has none: the model is not
/// certified, and the largest gap the solver last estimated (on its working set, or the warm
/// start's subsample when the run ended there).
fn uncertified(algorithm: Algorithm, reports: &[fwsvm::train::PairReport]) -> String {
    // (total_cmp puts NaN, an unknown gap, above every number.)
    let worst = reports
        .iter()
        .filter(|r| r.result.certified_gap.is_none())
        .max_by(|a, b| a.result.gap.total_cmp(&b.result.gap));
    match worst {
        Some(r) if r.result.gap.is_nan() => {
            "none: NOT CERTIFIED, no gap estimate (stopped inside a pass over the rows)".into()
        }
        Some(r) if algorithm.is_l2svm() && r.result.f > 0.0 => format!(
            "none: NOT CERTIFIED, last gap estimate {:.3e} ({:.1} % of 2f)",
            r.result.gap,
            100.0 * r.result.gap / (2.0 * r.result.f)
        ),
        Some(r) => format!("none: NOT CERTIFIED, last estimate {:.3e}", r.result.gap),
        None => "none: NOT CERTIFIED".into(),
    }
}

/// One line per class pair of a multi-class run.
fn say_pairs(reports: &[fwsvm::train::PairReport]) {
    for r in reports {
        eprintln!(
            "  pair {} vs {}: m {}, iterations {}, SVs {}, certified gap {}, {:.2}s, {}",
            r.classes.0,
            r.classes.1,
            r.m,
            r.result.iterations,
            r.result.alpha.len(),
            r.result
                .certified_gap
                .map(|g| format!("{g:.3e}"))
                .unwrap_or("-".into()),
            r.result.seconds,
            r.result.stop
        );
    }
}

/// The warm starts, the working-set rounds, the device traffic and the backend call times.
fn say_rounds_and_traffic(reports: &[fwsvm::train::PairReport], iters: u64) {
    for r in reports {
        say_warm_and_rounds(&r.result);
    }
    let mut traffic = fwsvm::backend::BackendStats::default();
    for r in reports {
        traffic.add(&r.result.stats);
    }
    if traffic.has_device_traffic() {
        eprintln!(
            "fwsvm: device traffic {} ({} round trips, {} submits, {} dispatches, {} bytes \
             up, {} bytes down in all); {:.2}s in round trips",
            traffic.per_iteration(iters),
            traffic.round_trips,
            traffic.submits,
            traffic.dispatches,
            traffic.bytes_up,
            traffic.bytes_down,
            traffic.wait_ns as f64 * 1e-9
        );
    }
    if let Some(line) = traffic.call_times() {
        eprintln!("fwsvm: {line}");
    }
}

/// What the warm start and the working-set rounds of a run did (a line each, where they ran).
pub(super) fn say_warm_and_rounds(r: &fwsvm::solver::SolveResult) {
    if let Some(w) = &r.warm
        && let Some(stop) = w.stopped
    {
        eprintln!(
            "fwsvm: warm start: ended by {} ({} points in its subsample, {} support \
             vectors, {} iterations, {:.2}s); the model is the subsample's solution",
            if stop == fwsvm::solver::StopReason::Interrupted {
                "a stop request"
            } else {
                "the time limit"
            },
            w.points,
            w.sub_support,
            w.iterations,
            w.seconds
        );
    } else if let Some(w) = &r.warm {
        eprintln!(
            "fwsvm: warm start: {} points solved first ({} support vectors, {} in a nested \
             half: support ∝ points^{:.2}, at most {} predicted; {} iterations), extended \
             to {} starting support vectors ({:.2}s; the added points' gradient over the first \
             working set {:.2}s)",
            w.points,
            w.sub_support,
            w.half_support,
            w.growth,
            w.cap,
            w.iterations,
            w.support,
            w.seconds,
            w.start_gradient_seconds
        );
    }
    if let Some(w) = &r.shrink {
        eprintln!("fwsvm: {}", describe_shrink(w));
    }
    if r.warm.is_some_and(|w| w.fell_back) {
        eprintln!(
            "fwsvm: stopped before the run from the extended start was nearer its optimum \
             than the subsample's solution was to its own: the model is that solution"
        );
    }
}

/// Predicts the test data and prints svm-predict's accuracy line.
pub(super) fn score_test(
    params: &TrainParams,
    model: &fwsvm::model::Model,
    test: &Dataset,
    path: &std::path::Path,
    quiet: bool,
) -> Result<()> {
    if test.n_features() > model.n_features() && !quiet {
        eprintln!(
            "fwsvm: warning: {} has features beyond index {} that no support vector uses",
            path.display(),
            model.n_features()
        );
    }
    let pred = fwsvm::predict::labels_on_device(
        &params.device,
        model,
        test,
        fwsvm::backend::GPU_PREDICT_MIN_WORK,
        None,
    )?;
    let (ok, n) = accuracy(&pred, &test.labels);
    println!("{}", accuracy_line(ok, n));
    Ok(())
}

pub(super) struct SharedTrace(Rc<RefCell<Trace>>);

impl Observer for SharedTrace {
    fn observe(&mut self, p: &fwsvm::solver::Progress) {
        self.0.borrow_mut().observe(p);
    }
}

/// One line on the working-set rounds of a run.
pub(super) fn describe_shrink(w: &fwsvm::solver::shrink::ShrinkStats) -> String {
    let pct = |n: usize| 100.0 * n as f64 / w.m.max(1) as f64;
    format!(
        "working set of {} points: {} at the start, {} at the smallest, {} at the end \
         ({:.1} %); {} shrink{}, {} rebuild{} of the set-aside gradients ({:.2}s)",
        w.m,
        w.first_size,
        w.smallest,
        w.last_size,
        pct(w.last_size),
        w.shrinks,
        if w.shrinks == 1 { "" } else { "s" },
        w.rebuilds,
        if w.rebuilds == 1 { "" } else { "s" },
        w.rebuild_seconds
    )
}

pub(super) fn describe_kernel(k: &fwsvm::kernel::Kernel) -> String {
    match k {
        fwsvm::kernel::Kernel::Linear => "linear kernel".into(),
        fwsvm::kernel::Kernel::Rbf { gamma } => {
            format!("rbf kernel, gamma = {}", crate::fmt::fmt_exact(*gamma))
        }
        fwsvm::kernel::Kernel::Poly {
            gamma,
            coef0,
            degree,
        } => format!(
            "poly kernel, gamma = {}, coef0 = {coef0}, degree = {degree}",
            crate::fmt::fmt_exact(*gamma)
        ),
        fwsvm::kernel::Kernel::Sigmoid { gamma, coef0 } => format!(
            "sigmoid kernel, gamma = {}, coef0 = {coef0}",
            crate::fmt::fmt_exact(*gamma)
        ),
    }
}

/// The summary's line on merged repeated points, where any pair merged them.
fn say_merged(reports: &[fwsvm::train::PairReport]) {
    let (rows, points) = reports
        .iter()
        .fold((0, 0), |(m, p), r| (m + r.m, p + r.merged.unwrap_or(r.m)));
    if reports.iter().any(|r| r.merged.is_some()) {
        let pairs = match reports.len() {
            1 => String::new(),
            n => format!(" (summed over {n} class pairs)"),
        };
        eprintln!(
            "fwsvm: repeated points merged: {rows} rows trained as {points} weighted \
             points{pairs} (--duplicates keep trains them apart)"
        );
    }
}
