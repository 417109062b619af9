//! `fwsvm._native`: the Rust half of the Python package. It turns Python buffers into the
//! library's [`Dataset`] (one copy into its f32 storage), trains with the GIL released, and
//! keeps the trained [`Model`]; the scikit-learn estimator lives in `fwsvm/__init__.py`.

use fwsvm::backend::cpu::Precision;
use fwsvm::backend::{BackendChoice, DeviceRequest};
use fwsvm::data::{Dataset, Features};
use fwsvm::error::ParamError;
use fwsvm::model::Model;
use fwsvm::solver::{Observer, Progress, SolverParams};
use fwsvm::train::{Gamma, KernelKind, PairInfo, TrainParams};
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{
    PyFileNotFoundError, PyIsADirectoryError, PyKeyboardInterrupt, PyOSError, PyPermissionError,
    PyRuntimeError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A library error as the Python exception a scikit-learn user expects: a stop request as
/// KeyboardInterrupt, a file that cannot be opened or read as OSError (FileNotFoundError,
/// PermissionError, IsADirectoryError), anything else as ValueError.
fn to_py(e: fwsvm::error::Error) -> PyErr {
    use std::io::ErrorKind;
    match e {
        fwsvm::error::Error::Interrupted(m) => PyKeyboardInterrupt::new_err(m),
        fwsvm::error::Error::Io { ref source, .. } => {
            let msg = e.to_string();
            match source.kind() {
                ErrorKind::NotFound => PyFileNotFoundError::new_err(msg),
                ErrorKind::PermissionDenied => PyPermissionError::new_err(msg),
                ErrorKind::IsADirectory => PyIsADirectoryError::new_err(msg),
                _ => PyOSError::new_err(msg),
            }
        }
        e => PyValueError::new_err(e.to_string()),
    }
}

/// Rows of a C-contiguous 2-D float32 buffer as a dense dataset.
fn dense(py: Python<'_>, x: &PyBuffer<f32>, labels: Vec<f64>) -> PyResult<Dataset> {
    let shape = x.shape();
    if shape.len() != 2 {
        return Err(PyValueError::new_err(format!(
            "expected a 2-D array, got {} dimensions",
            shape.len()
        )));
    }
    let (m, d) = (shape[0], shape[1]);
    if labels.len() != m {
        return Err(PyValueError::new_err(format!(
            "{} labels for {m} rows",
            labels.len()
        )));
    }
    let values = x.to_vec(py)?;
    Ok(Dataset {
        features: Features::Dense {
            n_features: d,
            values,
        },
        labels,
    })
}

/// CSR parts (int64 offsets, int32 column indices, float32 values) as a dataset.
fn csr(
    py: Python<'_>,
    indptr: &PyBuffer<i64>,
    indices: &PyBuffer<i32>,
    data: &PyBuffer<f32>,
    n_features: usize,
    labels: Vec<f64>,
) -> PyResult<Dataset> {
    let ip: Vec<usize> = indptr
        .to_vec(py)?
        .into_iter()
        .map(|v| usize::try_from(v).map_err(|_| PyValueError::new_err("negative CSR offset")))
        .collect::<PyResult<_>>()?;
    let ix: Vec<u32> = indices
        .to_vec(py)?
        .into_iter()
        .map(|v| {
            u32::try_from(v)
                .ok()
                .filter(|&c| (c as usize) < n_features)
                .ok_or_else(|| PyValueError::new_err(format!("CSR column index {v} out of range")))
        })
        .collect::<PyResult<_>>()?;
    let vs = data.to_vec(py)?;
    if ip.len() != labels.len() + 1 || ip.last().copied() != Some(vs.len()) || ix.len() != vs.len()
    {
        return Err(PyValueError::new_err("inconsistent CSR arrays"));
    }
    if ip.windows(2).any(|w| w[0] > w[1]) {
        return Err(PyValueError::new_err("CSR offsets must not decrease"));
    }
    Ok(Dataset::from_csr(n_features, ip, ix, vs, labels))
}

/// Reads one optional entry of the options dict.
fn opt<'py, T>(opts: &Bound<'py, PyDict>, key: &str) -> PyResult<Option<T>>
where
    T: for<'a> FromPyObject<'a, 'py>,
    PyErr: for<'a> From<<T as FromPyObject<'a, 'py>>::Error>,
{
    match opts.get_item(key)? {
        Some(v) if !v.is_none() => Ok(Some(v.extract()?)),
        _ => Ok(None),
    }
}

/// The library's training settings from the estimator's options (names as in `SVC`).
fn params(opts: &Bound<'_, PyDict>) -> PyResult<TrainParams> {
    let mut p = TrainParams::default();
    if let Some(c) = opt::<f64>(opts, "C")? {
        p.c = c;
    }
    if let Some(k) = opt::<String>(opts, "kernel")? {
        p.kernel = match k.as_str() {
            "rbf" => KernelKind::Rbf,
            "linear" => KernelKind::Linear,
            "poly" => KernelKind::Poly,
            "sigmoid" => KernelKind::Sigmoid,
            other => {
                return Err(PyValueError::new_err(format!(
                    "kernel must be 'rbf', 'linear', 'poly' or 'sigmoid', got {other:?}"
                )));
            }
        };
    }
    if let Some(g) = opt::<f64>(opts, "gamma")? {
        p.gamma = Gamma::Value(g);
    }
    if let Some(d) = opt::<u32>(opts, "degree")? {
        p.degree = d;
    }
    if let Some(r) = opt::<f64>(opts, "coef0")? {
        p.coef0 = r;
    }
    if let Some(e) = opt::<f64>(opts, "tol")? {
        p.solver.eps = e;
    }
    // Checked a whole number ≥ −1 by the estimator (`_base.whole`); −1 and 0: no limit.
    if let Some(n) = opt::<i64>(opts, "max_iter")?
        && n > 0
    {
        p.solver.max_iter = n as u64;
    }
    if let Some(s) = opt::<u64>(opts, "random_state")? {
        p.solver.seed = s;
    }
    if let Some(t) = opt::<f64>(opts, "time_limit")? {
        p.solver.time_limit =
            Some(SolverParams::time_limit_secs("time_limit", t).map_err(|e| to_py(e.into()))?);
    }
    if let Some(s) = opt::<usize>(opts, "sample")? {
        p.sample = s;
    }
    // None (and rel_tol's, precision's): the library's default for the run
    // (`TrainParams::resolved`).
    p.solver.algorithm = match opt::<String>(opts, "algorithm")? {
        Some(a) => Some(a.parse().map_err(PyValueError::new_err)?),
        None => None,
    };
    p.solver.rel_eps = opt::<f64>(opts, "rel_tol")?;
    if let Some(mb) = opt::<f64>(opts, "cache_size")? {
        ParamError::positive("cache_size", mb).map_err(|e| to_py(e.into()))?;
        p.cpu.cache_bytes = (mb.max(1.0) * (1 << 20) as f64) as usize;
    }
    if let Some(w) = opt::<Vec<(f64, f64)>>(opts, "class_weight")? {
        p.class_weights = w;
    }
    if let Some(o) = opt::<bool>(opts, "one_class")? {
        p.one_class = o;
    }
    p.merge_duplicates = match opt::<String>(opts, "duplicates")?.as_deref() {
        None => None,
        Some("merge") => Some(true),
        Some("keep") => Some(false),
        Some(other) => {
            return Err(PyValueError::new_err(format!(
                "duplicates must be 'merge', 'keep' or None, got {other:?}"
            )));
        }
    };
    if let Some(w) = opts.get_item("sample_weight")?
        && !w.is_none()
    {
        let w = PyBuffer::<f64>::get(&w)?;
        p.sample_weights = Some(w.to_vec(opts.py())?.into());
    }
    p.cpu.precision = precision(opts)?;
    Ok(p)
}

/// `precision`: None, 'f32' or 'f64'.
fn precision(opts: &Bound<'_, PyDict>) -> PyResult<Option<Precision>> {
    match opt::<String>(opts, "precision")?.as_deref() {
        None => Ok(None),
        Some("f32") => Ok(Some(Precision::F32)),
        Some("f64") => Ok(Some(Precision::F64)),
        Some(other) => Err(PyValueError::new_err(format!(
            "precision must be None, 'f32' or 'f64', got {other:?}"
        ))),
    }
}

/// The device the estimator asks for (`backend`, `device`, `precision`, `cache_size`): the
/// library's own [`DeviceRequest`], as the command line builds it.
fn device_request(opts: &Bound<'_, PyDict>, p: &TrainParams) -> PyResult<DeviceRequest> {
    let backend = match opt::<String>(opts, "backend")? {
        Some(b) => b.parse::<BackendChoice>().map_err(PyValueError::new_err)?,
        None => BackendChoice::Auto,
    };
    let device = match opts.get_item("device")? {
        Some(v) if !v.is_none() => Some(v.str()?.to_string()),
        _ => None,
    };
    Ok(DeviceRequest {
        backend,
        device,
        precision: precision(opts)?,
        default_precision: p.resolved().cpu.precision(),
        cache_bytes: Some(p.cpu.cache_bytes),
        local_rank: None,
        loop_place: Default::default(),
    })
}

/// `n_jobs` as scikit-learn reads it: None or −1 all cores, k > 0 k threads (at most the
/// cores), −2 all but one…
fn threads(n_jobs: Option<i64>) -> PyResult<usize> {
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get()) as i64;
    match n_jobs {
        None | Some(-1) => Ok(cores as usize),
        Some(0) => Err(PyValueError::new_err(
            "n_jobs must be None, a positive number or a negative one (-1: all cores), not 0",
        )),
        Some(n) if n > 0 => Ok(n.min(cores) as usize),
        Some(n) => Ok((cores + 1 + n).max(1) as usize),
    }
}

/// A thread pool of `n` threads, built once per size and kept. Training runs inside it
/// (`install`), so the solver's thread is one of the pool's, as the CLI's main thread is one
/// of its pool's: a training thread outside the pool would hand every parallel pass of every
/// iteration to the pool and wait to be woken, which makes training markedly slower than the
/// CLI's.
fn pool(n: usize) -> PyResult<Arc<rayon::ThreadPool>> {
    static POOLS: Mutex<Vec<(usize, Arc<rayon::ThreadPool>)>> = Mutex::new(Vec::new());
    let mut pools = POOLS.lock().map_err(|_| poisoned())?;
    if let Some((_, p)) = pools.iter().find(|(k, _)| *k == n) {
        return Ok(p.clone());
    }
    let p = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .thread_name(|i| format!("fwsvm-{i}"))
            .build()
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))?,
    );
    pools.push((n, p.clone()));
    Ok(p)
}

/// One solved problem's summary: (class a, class b, iterations, certified gap, stop reason).
type PairSummary = (f64, f64, u64, Option<f64>, String);

/// Lines the training thread leaves for the interpreter's thread to print (`verbose`).
type Messages = Vec<String>;

/// Writes the pending lines to Python's `sys.stderr` (so a notebook shows them).
fn flush_messages(py: Python<'_>, msgs: &Mutex<Messages>) -> PyResult<()> {
    let lines = std::mem::take(&mut *msgs.lock().map_err(|_| poisoned())?);
    if lines.is_empty() {
        return Ok(());
    }
    let err = py.import("sys")?.getattr("stderr")?;
    for l in lines {
        err.call_method1("write", (format!("fwsvm: {l}\n"),))?;
    }
    err.call_method0("flush")?;
    Ok(())
}

fn poisoned() -> PyErr {
    PyRuntimeError::new_err("fwsvm: a training thread panicked")
}

/// Progress of one class pair every half second (`verbose`).
struct ProgressNote {
    msgs: Arc<Mutex<Messages>>,
    pair: String,
    next: f64,
}

impl Observer for ProgressNote {
    fn observe(&mut self, p: &Progress) {
        if p.seconds >= self.next {
            self.next = p.seconds + 0.5;
            if let Ok(mut m) = self.msgs.lock() {
                m.push(format!(
                    "{}iteration {}, {:.1} s, f {:.6e}, gap {:.3e}, |A| {}",
                    self.pair, p.iter, p.seconds, p.f, p.gap, p.active
                ));
            }
        }
    }
}

/// The observers `train` asks for per class pair: with `verbose`, one [`ProgressNote`].
fn progress_observers(
    verbose: bool,
    msgs: &Arc<Mutex<Messages>>,
) -> impl FnMut(&PairInfo) -> Vec<Box<dyn Observer>> + '_ {
    move |info: &PairInfo| -> Vec<Box<dyn Observer>> {
        if !verbose {
            return Vec::new();
        }
        let pair = if info.count > 1 {
            let (a, b) = info.classes;
            format!("pair {}/{} ({a} vs {b}): ", info.index + 1, info.count)
        } else {
            String::new()
        };
        vec![Box::new(ProgressNote {
            msgs: msgs.clone(),
            pair,
            next: 0.5,
        })]
    }
}

/// Runs `work` on a thread of its own with the GIL released while the interpreter's thread
/// wakes every 50 ms to print what `msgs` holds and to run Python's signal handlers: Ctrl-C
/// (KeyboardInterrupt from the handler) asks the solvers to stop ([`fwsvm::interrupt::abandon`]:
/// the result is discarded, so nothing is certified after it), the thread ends at its current
/// iterate, and the KeyboardInterrupt is raised. A panic in the
/// library becomes a RuntimeError instead of ending the interpreter.
fn run_interruptible<T: Send>(
    py: Python<'_>,
    msgs: &Mutex<Messages>,
    work: impl FnOnce() -> fwsvm::error::Result<T> + Send,
) -> PyResult<T> {
    fwsvm::interrupt::clear();
    let (joined, interrupt) = py.detach(|| {
        std::thread::scope(|s| {
            // The worker says when it is done, so the wait ends then and not at the next
            // 50 ms tick.
            let (done, finished) = std::sync::mpsc::channel::<()>();
            let h = s.spawn(move || {
                let r = work();
                let _ = done.send(());
                r
            });
            let mut interrupt: Option<PyErr> = None;
            let mut printed: PyResult<()> = Ok(());
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                finished.recv_timeout(Duration::from_millis(50))
            {
                Python::attach(|py| {
                    if printed.is_ok()
                        && let Err(e) = flush_messages(py, msgs)
                    {
                        // Ctrl-C whose handler ran inside the printing raised there: it is the
                        // interrupt, not a failure to print.
                        if e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) {
                            if interrupt.is_none() {
                                fwsvm::interrupt::abandon();
                                interrupt = Some(e);
                            }
                        } else {
                            printed = Err(e);
                        }
                    }
                    if interrupt.is_none()
                        && let Err(e) = py.check_signals()
                    {
                        fwsvm::interrupt::abandon();
                        interrupt = Some(e);
                    }
                });
            }
            (h.join(), interrupt)
        })
    });
    fwsvm::interrupt::clear();
    flush_messages(py, msgs)?;
    if let Some(e) = interrupt {
        return Err(e);
    }
    match joined {
        Ok(r) => r.map_err(to_py),
        Err(_) => Err(poisoned()),
    }
}

/// Trains on `ds` with the GIL released; Ctrl-C in the interpreter ends the run.
fn fit(py: Python<'_>, ds: Dataset, opts: &Bound<'_, PyDict>) -> PyResult<NativeModel> {
    let mut p = params(opts)?;
    let req = device_request(opts, &p)?;
    let probability = opt::<bool>(opts, "probability")?.unwrap_or(false);
    let verbose = opt::<bool>(opts, "verbose")?.unwrap_or(false);
    let pool = pool(threads(opt::<i64>(opts, "n_jobs")?)?)?;
    let msgs = Arc::new(Mutex::new(Messages::default()));
    let m2 = msgs.clone();
    let work = move || -> fwsvm::error::Result<_> {
        pool.install(|| {
            let start = std::time::Instant::now();
            let mut note = |s: &str| {
                if verbose && let Ok(mut m) = m2.lock() {
                    m.push(s.to_string());
                }
            };
            p.device = req.open_for(&ds, &mut note)?;
            let device = p.device.describe();
            note(&format!("training on {device}"));
            let mut observers = progress_observers(verbose, &m2);
            let (mut model, reports) = fwsvm::train::train(&ds, &p, &mut observers)?;
            if probability {
                fwsvm::train::add_probabilities(&ds, &p, &mut model)?;
            }
            Ok((model, reports, device, start.elapsed().as_secs_f64()))
        })
    };
    let (model, reports, device, seconds) = run_interruptible(py, &msgs, work)?;
    let pairs = reports
        .iter()
        .map(|r| {
            (
                r.classes.0,
                r.classes.1,
                r.result.iterations,
                r.result.certified_gap,
                r.result.stop.to_string(),
            )
        })
        .collect();
    Ok(NativeModel {
        model,
        pairs,
        device,
        seconds,
    })
}

/// Trains on a dense float32 matrix.
#[pyfunction]
fn fit_dense(
    py: Python<'_>,
    x: PyBuffer<f32>,
    y: PyBuffer<f64>,
    opts: Bound<'_, PyDict>,
) -> PyResult<NativeModel> {
    let ds = dense(py, &x, y.to_vec(py)?)?;
    fit(py, ds, &opts)
}

/// Trains on CSR parts.
#[pyfunction]
fn fit_csr(
    py: Python<'_>,
    indptr: PyBuffer<i64>,
    indices: PyBuffer<i32>,
    data: PyBuffer<f32>,
    n_features: usize,
    y: PyBuffer<f64>,
    opts: Bound<'_, PyDict>,
) -> PyResult<NativeModel> {
    let ds = csr(py, &indptr, &indices, &data, n_features, y.to_vec(py)?)?;
    fit(py, ds, &opts)
}

/// A trained model (LIBSVM's layout) and what training reported per class pair.
#[pyclass(module = "fwsvm._native")]
struct NativeModel {
    model: Model,
    pairs: Vec<PairSummary>,
    /// Where it was trained (`Device::describe`); empty for a model read from text.
    device: String,
    /// Seconds inside the library (device, training, probabilities); 0 for a model read.
    seconds: f64,
}

impl NativeModel {
    /// Labels and decision values (rows × pairs, flattened), as f64 bytes, of `ds`; with
    /// `labels_only` no decision values (the labels through the screened prediction).
    fn decide<'py>(
        &self,
        py: Python<'py>,
        ds: Dataset,
        labels_only: bool,
    ) -> (Bound<'py, PyBytes>, Bound<'py, PyBytes>) {
        let (labels, dec) = py.detach(|| {
            if labels_only {
                return (self.model.predict(&ds), Vec::new());
            }
            let (labels, dec) = self.model.predict_with_decisions(&ds);
            (labels, dec.into_iter().flatten().collect::<Vec<f64>>())
        });
        (bytes(py, &labels), bytes(py, &dec))
    }
}

#[pymethods]
impl NativeModel {
    /// Class labels in model order.
    #[getter]
    fn labels(&self) -> Vec<f64> {
        self.model.labels.clone()
    }

    /// Support vectors per class.
    #[getter]
    fn nr_sv(&self) -> Vec<usize> {
        self.model.nr_sv.clone()
    }

    /// (nr_class − 1) × total_sv coefficients.
    #[getter]
    fn sv_coef(&self) -> Vec<Vec<f64>> {
        self.model.sv_coef.clone()
    }

    /// One bias per class pair.
    #[getter]
    fn rho(&self) -> Vec<f64> {
        self.model.rho.clone()
    }

    /// Platt's A per class pair (empty without probabilities).
    #[getter]
    fn prob_a(&self) -> Vec<f64> {
        self.model.prob_a.clone()
    }

    /// Platt's B per class pair.
    #[getter]
    fn prob_b(&self) -> Vec<f64> {
        self.model.prob_b.clone()
    }

    /// Whether the model carries probability sigmoids.
    #[getter]
    fn has_probabilities(&self) -> bool {
        self.model.has_probabilities()
    }

    /// Features the support vectors span.
    #[getter]
    fn n_features(&self) -> usize {
        self.model.n_features()
    }

    /// Each SV's row in the training data (empty for a model read from text).
    #[getter]
    fn sv_rows(&self) -> Vec<usize> {
        self.model.sv_rows.clone()
    }

    /// Whether this is a one-class (novelty detection) model.
    #[getter]
    fn one_class(&self) -> bool {
        self.model.one_class
    }

    /// Seconds the library spent training (opening the device, solving, certifying,
    /// probabilities), without the conversions of the Python layer.
    #[getter]
    fn seconds(&self) -> f64 {
        self.seconds
    }

    /// Where it was trained.
    #[getter]
    fn device(&self) -> String {
        self.device.clone()
    }

    /// Per class pair: (a, b, iterations, certified gap, stop reason).
    #[getter]
    fn pairs(&self) -> Vec<PairSummary> {
        self.pairs.clone()
    }

    /// The support vectors as dense row-major f64 bytes of `width` columns.
    fn support_vectors<'py>(&self, py: Python<'py>, width: usize) -> Bound<'py, PyBytes> {
        let sv = &self.model.sv;
        let mut out = vec![0.0; sv.len() * width];
        for i in 0..sv.len() {
            let row = &mut out[i * width..(i + 1) * width];
            match sv.row(i) {
                fwsvm::data::Row::Dense(v) => {
                    for (o, &x) in row.iter_mut().zip(v) {
                        *o = x as f64;
                    }
                }
                fwsvm::data::Row::Sparse(ix, v) => {
                    for (&f, &x) in ix.iter().zip(v) {
                        if (f as usize) < width {
                            row[f as usize] = x as f64;
                        }
                    }
                }
            }
        }
        bytes(py, &out)
    }

    /// Labels and flattened decision values of a dense float32 matrix (labels alone with
    /// `labels_only`).
    #[pyo3(signature = (x, labels_only=false))]
    fn decide_dense<'py>(
        &self,
        py: Python<'py>,
        x: PyBuffer<f32>,
        labels_only: bool,
    ) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
        let m = x.shape().first().copied().unwrap_or(0);
        let ds = dense(py, &x, vec![0.0; m])?;
        Ok(self.decide(py, ds, labels_only))
    }

    /// Labels and flattened decision values of CSR parts (labels alone with `labels_only`).
    #[pyo3(signature = (indptr, indices, data, n_features, labels_only=false))]
    fn decide_csr<'py>(
        &self,
        py: Python<'py>,
        indptr: PyBuffer<i64>,
        indices: PyBuffer<i32>,
        data: PyBuffer<f32>,
        n_features: usize,
        labels_only: bool,
    ) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
        let m = indptr.item_count().saturating_sub(1);
        let ds = csr(py, &indptr, &indices, &data, n_features, vec![0.0; m])?;
        Ok(self.decide(py, ds, labels_only))
    }

    /// Class probabilities (rows × classes, flattened) from flattened decision values.
    fn probabilities<'py>(
        &self,
        py: Python<'py>,
        dec: PyBuffer<f64>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        if !self.model.has_probabilities() {
            return Err(PyValueError::new_err(
                "the model was trained without probability=True",
            ));
        }
        let k = self.model.n_classes();
        let pairs = (k * (k - 1) / 2).max(1);
        let dec = dec.to_vec(py)?;
        let probs: Vec<f64> = py.detach(|| {
            let rows: Vec<Vec<f64>> = dec.chunks(pairs).map(|c| c.to_vec()).collect();
            let (_, probs) = self.model.probabilities_from_decisions(&rows);
            probs.into_iter().flatten().collect()
        });
        Ok(bytes(py, &probs))
    }

    /// The model in LIBSVM's text format.
    fn to_libsvm(&self) -> PyResult<String> {
        let mut out = Vec::new();
        self.model
            .write(&mut out)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        String::from_utf8(out).map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// A model from LIBSVM's text format (`name` appears in error messages).
    #[staticmethod]
    #[pyo3(signature = (text, name = "<model>"))]
    fn from_libsvm(text: &str, name: &str) -> PyResult<NativeModel> {
        let model =
            Model::read(std::io::Cursor::new(text.as_bytes()), Path::new(name)).map_err(to_py)?;
        Ok(NativeModel {
            model,
            pairs: Vec::new(),
            device: String::new(),
            seconds: 0.0,
        })
    }
}

/// A slice's bytes as a Python `bytes` (numpy reads them with `frombuffer`, no per-item
/// conversion).
fn bytes<'py, T: bytemuck::Pod>(py: Python<'py>, v: &[T]) -> Bound<'py, PyBytes> {
    PyBytes::new(py, bytemuck::cast_slice(v))
}

/// Reads a LIBSVM (or CSV) file, plain or compressed, with the library's reader: CSR parts as
/// bytes (int64 offsets, int32 columns, float32 values), the feature count and f64 labels.
#[pyfunction]
#[pyo3(signature = (path, format = "libsvm", label_col = 0))]
#[allow(clippy::type_complexity)]
fn read_file<'py>(
    py: Python<'py>,
    path: std::path::PathBuf,
    format: &str,
    label_col: i64,
) -> PyResult<(
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    usize,
    Bound<'py, PyBytes>,
)> {
    let format = match format {
        "libsvm" | "svmlight" => fwsvm::data::Format::Libsvm,
        "csv" => fwsvm::data::Format::Csv,
        other => {
            return Err(PyValueError::new_err(format!(
                "format must be 'libsvm' or 'csv', got {other:?}"
            )));
        }
    };
    let opts = fwsvm::data::ReadOptions { format, label_col };
    let ds = py
        .detach(|| fwsvm::data::read_dataset(&path, &opts))
        .map_err(to_py)?;
    let (ip, ix, vs): (Vec<i64>, Vec<i32>, Vec<f32>) = py.detach(|| {
        let mut ip = Vec::with_capacity(ds.len() + 1);
        let (mut ix, mut vs) = (Vec::new(), Vec::new());
        ip.push(0i64);
        for i in 0..ds.len() {
            match ds.row(i) {
                fwsvm::data::Row::Dense(v) => {
                    for (j, &x) in v.iter().enumerate() {
                        if x != 0.0 {
                            ix.push(j as i32);
                            vs.push(x);
                        }
                    }
                }
                fwsvm::data::Row::Sparse(c, v) => {
                    ix.extend(c.iter().map(|&c| c as i32));
                    vs.extend_from_slice(v);
                }
            }
            ip.push(ix.len() as i64);
        }
        (ip, ix, vs)
    });
    Ok((
        bytes(py, &ip),
        bytes(py, &ix),
        bytes(py, &vs),
        ds.n_features(),
        bytes(py, &ds.labels),
    ))
}

/// The native module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fit_dense, m)?)?;
    m.add_function(wrap_pyfunction!(fit_csr, m)?)?;
    m.add_function(wrap_pyfunction!(read_file, m)?)?;
    m.add_class::<NativeModel>()?;
    Ok(())
}
