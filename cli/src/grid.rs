//! `fwsvm grid`: cross-validated accuracy over log2 grids of C and γ, as LIBSVM's grid.py.
//!
//! Every grid point is a stratified k-fold cross-validation with the same folds (`--seed`).
//! Results are appended to a CSV as each point finishes, so an interrupted search continues
//! with `--resume`; the best point is printed and a heat map written as SVG.

use super::common::{BackendArg, ProgressLine};
use super::train::TrainOpts;
use clap::Args;
use fwsvm::error::{Error, Result};
use fwsvm::kernel::Kernel;
use fwsvm::output::{RunFiles, write_output};
use fwsvm::solver::Observer;
use fwsvm::train::{Gamma, PairInfo, TrainParams, cross_validate};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Options of `fwsvm grid`.
#[derive(Debug, Args)]
#[command(disable_help_flag = true)]
pub struct GridArgs {
    /// Print help (-h is svm-train's shrinking switch here).
    #[arg(long, action = clap::ArgAction::Help)]
    help: Option<bool>,
    /// Training data.
    train: PathBuf,
    /// log2 C grid: BEGIN,END,STEP (END included when on the grid).
    #[arg(long, default_value = "-5,15,2", allow_hyphen_values = true)]
    log2c: String,
    /// log2 γ grid: BEGIN,END,STEP (ignored for the linear kernel).
    #[arg(long, default_value = "3,-15,-2", allow_hyphen_values = true)]
    log2g: String,
    /// Folds of each cross-validation.
    #[arg(short = 'v', long = "cv", default_value_t = 5, value_parser = super::common::parse_count::<usize>)]
    folds: usize,
    /// Results CSV, appended as each point finishes [default: <TRAIN file name>.grid.csv].
    #[arg(long)]
    out: Option<PathBuf>,
    /// Heat-map SVG [default: <TRAIN file name>.grid.svg].
    #[arg(long)]
    svg: Option<PathBuf>,
    /// Continue a partial run: points already in the CSV are kept, not recomputed.
    #[arg(long)]
    resume: bool,
    #[command(flatten)]
    opts: TrainOpts,
    /// Compute backend (as for train).
    #[arg(long, value_enum, default_value = "auto", help_heading = super::common::BACKEND)]
    backend: BackendArg,
    /// Under mpirun, how the grid uses the ranks: tasks = whole folds of whole points dealt
    /// to the ranks (every rank holds all rows), rows = each fold split over all ranks by
    /// rows; auto = tasks when the data fit every rank's share of memory.
    #[arg(long, value_enum, default_value = "auto", help_heading = super::common::BACKEND)]
    distribute: fwsvm::dist::plan::Distribute,
}

/// BEGIN,END,STEP → the grid values, END included when reached (as grid.py's range_f).
pub fn parse_range(s: &str, what: &str) -> Result<Vec<f64>> {
    let bad = |why: &str| Error::param(format!("{what} `{s}`: {why}"));
    let v: Vec<f64> = s
        .split(',')
        .map(|t| t.trim().parse::<f64>())
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| bad("expected BEGIN,END,STEP numbers"))?;
    let [b, e, st] = v[..] else {
        return Err(bad("expected three numbers BEGIN,END,STEP"));
    };
    if !(b.is_finite() && e.is_finite() && st.is_finite()) {
        return Err(bad("values must be finite"));
    }
    if b == e {
        return Ok(vec![b]);
    }
    if st == 0.0 || (e - b).signum() != st.signum() {
        return Err(bad("STEP must be non-zero and go from BEGIN toward END"));
    }
    let n = ((e - b) / st + 1e-9).floor() + 1.0;
    if !(n <= 1000.0) {
        return Err(bad("more than 1000 grid values"));
    }
    let n = n as usize;
    Ok((0..n).map(|k| b + k as f64 * st).collect())
}

const HEADER: &str = "log2c,log2g,c,gamma,accuracy,seconds";

/// One finished grid point.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Point {
    log2c: f64,
    log2g: Option<f64>,
    accuracy: f64,
    seconds: f64,
}

fn same(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(1.0)
}

/// The same grid point (a linear-kernel point, without γ, matches only another).
fn same_point(p: &Point, lc: f64, lg: Option<f64>) -> bool {
    same(p.log2c, lc)
        && match (p.log2g, lg) {
            (None, None) => true,
            (Some(x), Some(y)) => same(x, y),
            _ => false,
        }
}

const SETTINGS: &str = "# settings: ";

/// Reads the settings line and the points of a results CSV; a torn last line (an interrupted
/// write) is dropped.
fn read_results(path: &Path) -> Result<(Option<String>, Vec<Point>)> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let complete = match text.rfind('\n') {
        Some(p) => &text[..=p],
        None => "",
    };
    let mut lines = complete.lines().enumerate();
    match lines.next() {
        Some((_, h)) if h.trim() == HEADER => {}
        _ => {
            return Err(Error::InvalidData {
                path: path.to_path_buf(),
                msg: format!(
                    "line 1: expected the header `{HEADER}`; not a `fwsvm grid` results file"
                ),
            });
        }
    }
    let mut out = Vec::new();
    let mut settings = None;
    for (n, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix(SETTINGS) {
            settings = Some(rest.trim().to_string());
            continue;
        }
        let f: Vec<&str> = line.split(',').collect();
        let num = |k: usize| -> Option<f64> { f.get(k)?.trim().parse().ok() };
        let parsed = (|| {
            Some(Point {
                log2c: num(0)?,
                log2g: if f.get(1)?.trim() == "-" {
                    None
                } else {
                    Some(num(1)?)
                },
                accuracy: num(4)?,
                seconds: num(5)?,
            })
        })();
        match parsed {
            Some(p) if f.len() == 6 => out.push(p),
            _ => {
                return Err(Error::InvalidData {
                    path: path.to_path_buf(),
                    msg: format!(
                        "line {}: `{line}` is not log2c,log2g,c,gamma,accuracy,seconds",
                        n + 1
                    ),
                });
            }
        }
    }
    Ok((settings, out))
}

fn default_path(train: &Path, ext: &str) -> PathBuf {
    let name = train
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "train".into());
    PathBuf::from(format!("{name}.{ext}"))
}

/// A search's files and finished points; the points are evaluated by the caller, in batches.
struct Search {
    log2c: Vec<f64>,
    log2g: Vec<Option<f64>>,
    csv: PathBuf,
    svg: PathBuf,
    done: Vec<Point>,
    done_settings: Option<String>,
    /// The CSV, open for appending (None on the ranks of a distributed search but the first).
    file: Option<std::fs::File>,
    t0: Instant,
}

/// A grid point to evaluate: its number (1-based, over the whole grid), log2 C, log2 γ.
type Pending = (usize, f64, Option<f64>);

impl Search {
    /// Checks the output paths and reads the finished points of `--resume`.
    fn open(a: &GridArgs) -> Result<Search> {
        let log2c = parse_range(&a.log2c, "--log2c")?;
        let csv = a
            .out
            .clone()
            .unwrap_or_else(|| default_path(&a.train, "grid.csv"));
        let svg = a
            .svg
            .clone()
            .unwrap_or_else(|| default_path(&a.train, "grid.svg"));
        RunFiles::new()
            .input("training data", &a.train)
            .output("results CSV", &csv)
            .output("heat map", &svg)
            .check()?;
        if !matches!(
            fwsvm::output::resolve(&csv)?,
            fwsvm::output::Target::Replace(_)
        ) {
            return Err(Error::param(format!(
                "--out {}: the results CSV is appended to as each point finishes and read back \
                 by --resume, so it must be a regular file (not standard output, a device or a \
                 FIFO)",
                csv.display()
            )));
        }
        let mut done = Vec::new();
        let mut done_settings = None;
        if csv.exists() {
            if !a.resume {
                return Err(Error::param(format!(
                    "{} exists: pass --resume to continue that search, or another --out",
                    csv.display()
                )));
            }
            (done_settings, done) = read_results(&csv)?;
        }
        Ok(Search {
            log2c,
            log2g: Vec::new(),
            csv,
            svg,
            done,
            done_settings,
            file: None,
            t0: Instant::now(),
        })
    }

    /// Sets the γ grid (none for the linear kernel), checks the folds against the `m` rows and
    /// the settings against a resumed file's, and (with `write`) rewrites the CSV with its
    /// complete lines, open for appending.
    fn start(
        &mut self,
        a: &GridArgs,
        base: &TrainParams,
        linear: bool,
        m: usize,
        write: bool,
    ) -> Result<()> {
        self.log2g = if linear {
            vec![None]
        } else {
            parse_range(&a.log2g, "--log2g")?
                .into_iter()
                .map(Some)
                .collect()
        };
        if a.folds < 2 || a.folds > m {
            return Err(Error::param(format!(
                "--cv needs 2 ≤ K ≤ the number of rows ({m}), got {}",
                a.folds
            )));
        }
        let o = &a.opts;
        let decided = base.resolved();
        let settings = format!(
            "algorithm={} kernel={:?} degree={} coef0={} eps={} rel_eps={} sample={} folds={} \
             seed={}",
            decided.solver.algorithm(),
            base.kernel,
            base.degree,
            base.coef0,
            base.solver.eps,
            decided.solver.rel_eps(),
            base.sample,
            a.folds,
            o.seed()
        );
        if let Some(old) = &self.done_settings
            && *old != settings
        {
            return Err(Error::param(format!(
                "{} was made with other settings ({old}; now {settings}): use another --out",
                self.csv.display()
            )));
        }
        if !write {
            return Ok(());
        }
        // Rewrite the file with its complete lines (drops a torn last line), then append.
        write_output(&self.csv, |w| {
            writeln!(w, "{HEADER}")?;
            writeln!(w, "{SETTINGS}{settings}")?;
            for p in &self.done {
                write_point(w, p)?;
            }
            Ok(())
        })?;
        self.file = Some(
            std::fs::OpenOptions::new()
                .append(true)
                .open(&self.csv)
                .map_err(|e| Error::io(&self.csv, e))?,
        );
        self.t0 = Instant::now();
        Ok(())
    }

    /// Points in the grid.
    fn total(&self) -> usize {
        self.log2c.len() * self.log2g.len()
    }

    /// The points not finished yet, in grid order.
    fn pending(&self) -> Vec<Pending> {
        let mut out = Vec::new();
        let mut k = 0;
        for &lc in &self.log2c {
            for &lg in &self.log2g {
                k += 1;
                if !self.done.iter().any(|p| same_point(p, lc, lg)) {
                    out.push((k, lc, lg));
                }
            }
        }
        out
    }

    /// Records a finished point: appended to the CSV (where this process writes it) and
    /// printed with the best so far.
    fn record(&mut self, (k, lc, lg): Pending, accuracy: f64, seconds: f64) -> Result<()> {
        let p = Point {
            log2c: lc,
            log2g: lg,
            accuracy,
            seconds,
        };
        self.done.push(p);
        let Some(file) = self.file.as_mut() else {
            return Ok(());
        };
        write_point(file, &p).map_err(|e| Error::io(&self.csv, e))?;
        file.flush().map_err(|e| Error::io(&self.csv, e))?;
        let best =
            best_point(&in_grid(&self.done, &self.log2c, &self.log2g)).expect("one point at least");
        println!(
            "[{k}/{}] {}: {}% ({:.1}s)   best: {} {}%",
            self.total(),
            describe(&p),
            crate::fmt::fmt_g(p.accuracy, 6),
            p.seconds,
            describe(&best),
            crate::fmt::fmt_g(best.accuracy, 6)
        );
        Ok(())
    }

    /// Writes the heat map and prints the best point (where this process writes).
    fn finish(&self, a: &GridArgs) -> Result<()> {
        if self.file.is_none() {
            return Ok(());
        }
        let best = best_point(&in_grid(&self.done, &self.log2c, &self.log2g))
            .expect("the grid is not empty");
        write_svg(
            &self.svg,
            &a.train,
            &self.log2c,
            &self.log2g,
            &self.done,
            &best,
            a.folds,
        )?;
        println!(
            "Best: C = {}, {}cross-validation accuracy = {}% ({} points, {:.1}s; results in {}, \
             heat map in {})",
            crate::fmt::fmt_g(best.log2c.exp2(), 6),
            match best.log2g {
                Some(g) => format!("gamma = {}, ", crate::fmt::fmt_g(g.exp2(), 6)),
                None => String::new(),
            },
            crate::fmt::fmt_g(best.accuracy, 6),
            self.done.len(),
            self.t0.elapsed().as_secs_f64(),
            self.csv.display(),
            self.svg.display()
        );
        Ok(())
    }
}

/// The settings of grid point (log2 C, log2 γ) over `base`.
fn point_params(base: &TrainParams, lc: f64, lg: Option<f64>) -> TrainParams {
    TrainParams {
        c: lc.exp2(),
        gamma: match lg {
            Some(g) => Gamma::Value(g.exp2()),
            None => base.gamma,
        },
        ..base.clone()
    }
}

/// Runs `fwsvm grid`.
pub fn run(a: GridArgs) -> Result<()> {
    #[cfg(feature = "mpi")]
    if super::train::launched_by_mpirun() {
        return run_distributed(a);
    }
    super::train::refuse_mpirun_without_mpi("grid")?;
    let o = &a.opts;
    o.refuse_train_only("grid")?;
    let mut search = Search::open(&a)?;
    let (ds, _, _) = o.read(&a.train, None)?;
    super::train::require_two_classes(&ds, &a.train)?;
    let mut base = o.params(o.open_device(a.backend)?);
    // On a GPU the data go up once for every fold of every grid point (sampled runs bind
    // only their blocks' rows).
    if base.sample == 0 {
        base.device = base.device.share(&ds)?;
    }
    let linear = matches!(base.resolve_kernel(&ds)?, Kernel::Linear);
    search.start(&a, &base, linear, ds.len(), true)?;
    let quiet = o.quiet();
    let total = search.total();
    for (k, lc, lg) in search.pending() {
        let params = point_params(&base, lc, lg);
        let t = Instant::now();
        let label = describe(&Point {
            log2c: lc,
            log2g: lg,
            accuracy: 0.0,
            seconds: 0.0,
        });
        let mut obs = |fold: usize, info: &PairInfo| -> Vec<Box<dyn Observer>> {
            let prefix = format!(
                "[{k}/{total}] {label}, fold {}/{}{}",
                fold + 1,
                a.folds,
                if info.count > 1 {
                    format!(", pair {}/{}", info.index + 1, info.count)
                } else {
                    String::new()
                }
            );
            match ProgressLine::new(prefix, quiet) {
                Some(p) => vec![Box::new(p) as Box<dyn Observer>],
                None => Vec::new(),
            }
        };
        let r = cross_validate(&ds, &params, a.folds, o.seed(), &mut obs)?;
        search.record((k, lc, lg), r.accuracy(), t.elapsed().as_secs_f64())?;
    }
    search.finish(&a)
}

/// `mpirun -np P fwsvm grid …`: rank 0 checks the files, reads a resumed search and writes
/// the results; every rank reads its slice of the rows. With the whole data fitting every
/// rank (see [`fwsvm::dist::plan`]), the grid's points × folds are dealt to the ranks whole,
/// P points at a time (every rank gets all rows once); otherwise each fold of each point is
/// trained over all ranks by rows. Points are recorded in grid order as their batch finishes;
/// a point's seconds are its batch's wall time shared among the batch's points.
#[cfg(feature = "mpi")]
fn run_distributed(a: GridArgs) -> Result<()> {
    use fwsvm::dist::comm::{Comm, agree};
    let comm = fwsvm::dist::mpi::MpiComm::init()?;
    let o = &a.opts;
    let root = comm.rank() == 0;
    o.refuse_train_only("grid")?;
    let mut search = shared_search(&comm, &a)?;
    o.apply_threads(o.quiet() || !root);
    let (local, slice) = fwsvm::dist::slice::read_libsvm_slice(&a.train, &comm)?;
    let classes = fwsvm::dist::train::class_order(&comm, &local)?;
    if classes.len() < 2 {
        return Err(Error::param(format!(
            "{}: the training data have one class ({}); at least two are needed",
            a.train.display(),
            classes.first().copied().unwrap_or(f64::NAN)
        )));
    }
    let base = o.params(o.open_rank_device(a.backend, &comm, &local)?);
    let linear = matches!(base.kernel, fwsvm::train::KernelKind::Linear);
    let started = search.start(&a, &base, linear, slice.total, root);
    agree(&comm, started)?;
    let pending = search.pending();
    let quiet = o.quiet() || !root;
    let (ranks, rows, count) = (comm.size(), slice.total, pending.len());
    let mut on_plan = |why: &str| {
        if !quiet {
            eprintln!("fwsvm: {ranks} ranks; {rows} rows; {count} points to evaluate; {why}");
        }
    };
    let point = |b: &TrainParams, i: usize| {
        let (_, lc, lg) = pending[i];
        point_params(b, lc, lg)
    };
    let job = fwsvm::dist::run::GridJob {
        base: &base,
        point: &point,
        count,
        folds: a.folds,
        seed: o.seed(),
        distribute: a.distribute,
    };
    let mut record = |i: usize, acc: f64, secs: f64| search.record(pending[i], acc, secs);
    fwsvm::dist::run::grid_run(&comm, (local, slice), job, &mut on_plan, &mut record)?;
    let finished = search.finish(&a);
    agree(&comm, finished)
}

/// Rank 0 opens the search (its files and the points a resumed search finished); the other
/// ranks get the finished points from it. Collective.
#[cfg(feature = "mpi")]
fn shared_search(comm: &fwsvm::dist::mpi::MpiComm, a: &GridArgs) -> Result<Search> {
    use fwsvm::dist::comm::{Comm, agree};
    let root = comm.rank() == 0;
    // Rank 0's files and finished points; the others learn the points from it.
    let opened = if root {
        Search::open(a).map(Some)
    } else {
        Ok(None)
    };
    let opened = agree(comm, opened)?;
    let mut v: Vec<f64> = Vec::new();
    if let Some(s) = &opened {
        for p in &s.done {
            v.extend([p.log2c, p.log2g.unwrap_or(f64::NAN), p.accuracy, p.seconds]);
        }
    }
    fwsvm::dist::comm::broadcast_words(comm, 0, &mut v)?;
    Ok(match opened {
        Some(s) => s,
        None => {
            let mut s = Search {
                log2c: parse_range(&a.log2c, "--log2c")?,
                log2g: Vec::new(),
                csv: PathBuf::new(),
                svg: PathBuf::new(),
                done: Vec::new(),
                done_settings: None,
                file: None,
                t0: Instant::now(),
            };
            s.done = v
                .chunks_exact(4)
                .map(|p| Point {
                    log2c: p[0],
                    log2g: (!p[1].is_nan()).then_some(p[1]),
                    accuracy: p[2],
                    seconds: p[3],
                })
                .collect();
            s
        }
    })
}

/// The points of `done` on the current grid (a resumed file may hold others).
fn in_grid(done: &[Point], log2c: &[f64], log2g: &[Option<f64>]) -> Vec<Point> {
    done.iter()
        .filter(|p| {
            log2c
                .iter()
                .any(|&lc| log2g.iter().any(|&lg| same_point(p, lc, lg)))
        })
        .copied()
        .collect()
}

fn describe(p: &Point) -> String {
    match p.log2g {
        Some(g) => format!("log2c {} log2g {g}", p.log2c),
        None => format!("log2c {}", p.log2c),
    }
}

/// Highest accuracy; ties go to the smaller C, then the smaller γ (the cheaper model).
fn best_point(points: &[Point]) -> Option<Point> {
    points.iter().copied().reduce(|b, p| {
        let key = |q: &Point| (q.accuracy, -q.log2c, -q.log2g.unwrap_or(0.0));
        if key(&p) > key(&b) { p } else { b }
    })
}

fn write_point<W: Write>(w: &mut W, p: &Point) -> std::io::Result<()> {
    writeln!(
        w,
        "{},{},{},{},{},{:.3}",
        p.log2c,
        p.log2g.map_or("-".to_string(), |g| g.to_string()),
        p.log2c.exp2(),
        p.log2g.map_or("-".to_string(), |g| g.exp2().to_string()),
        p.accuracy,
        p.seconds
    )
}

fn write_svg(
    path: &Path,
    train: &Path,
    log2c: &[f64],
    log2g: &[Option<f64>],
    done: &[Point],
    best: &Point,
    folds: usize,
) -> Result<()> {
    let find = |lc: f64, lg: Option<f64>| {
        done.iter()
            .find(|p| same_point(p, lc, lg))
            .map(|p| p.accuracy)
    };
    let values: Vec<Vec<Option<f64>>> = log2g
        .iter()
        .map(|&lg| log2c.iter().map(|&lc| find(lc, lg)).collect())
        .collect();
    let bpos = log2g.iter().enumerate().find_map(|(r, &lg)| {
        let c = log2c.iter().position(|&lc| same(lc, best.log2c))?;
        same_point(best, best.log2c, lg).then_some((r, c))
    });
    let title = format!(
        "{}: {folds}-fold cross-validation accuracy (%)",
        train
            .file_name()
            .map(|n| n.to_string_lossy())
            .unwrap_or_default()
    );
    let map = crate::experiment::charts::HeatMap {
        title: &title,
        x_name: "log2 C",
        y_name: "log2 γ",
        value_name: "accuracy %",
        x_labels: log2c.iter().map(|v| v.to_string()).collect(),
        y_labels: log2g
            .iter()
            .map(|v| v.map_or("-".to_string(), |g| g.to_string()))
            .collect(),
        values,
        best: bpos,
    };
    let text = map.render()?;
    write_output(path, |w| w.write_all(text.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_follow_grid_py() {
        assert_eq!(parse_range("-5,15,2", "c").unwrap().len(), 11);
        assert_eq!(
            parse_range("3,-15,-2", "g").unwrap(),
            vec![3.0, 1.0, -1.0, -3.0, -5.0, -7.0, -9.0, -11.0, -13.0, -15.0]
        );
        assert_eq!(parse_range("1,4,2", "c").unwrap(), vec![1.0, 3.0]);
        assert_eq!(parse_range("2,2,1", "c").unwrap(), vec![2.0]);
        for bad in ["1,2", "1,5,-1", "1,5,0", "a,b,c", "0,1e9,1"] {
            assert!(parse_range(bad, "--log2c").is_err(), "{bad}");
        }
    }

    #[test]
    fn best_prefers_accuracy_then_smaller_c() {
        let p = |c: f64, acc: f64| Point {
            log2c: c,
            log2g: Some(0.0),
            accuracy: acc,
            seconds: 0.0,
        };
        let b = best_point(&[p(3.0, 80.0), p(1.0, 80.0), p(5.0, 79.0)]).unwrap();
        assert_eq!(b.log2c, 1.0);
    }
}
