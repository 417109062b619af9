//! `fwsvm._native`: the Rust half of the Python package. It turns Python buffers into the
//! library's [`Dataset`] (one copy into its f32 storage), trains with the GIL released, and
//! keeps the trained [`Model`]; the scikit-learn estimator lives in `fwsvm/__init__.py`.

use fwsvm::data::{Dataset, Features};
use fwsvm::model::Model;
use fwsvm::train::{Gamma, KernelKind, TrainParams};
use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyKeyboardInterrupt, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::Path;

/// A library error as the Python exception a scikit-learn user expects.
fn to_py(e: fwsvm::error::Error) -> PyErr {
    match e {
        fwsvm::error::Error::Interrupted(m) => PyKeyboardInterrupt::new_err(m),
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
    if let Some(e) = opt::<f64>(opts, "rel_tol")? {
        p.solver.rel_eps = e;
    }
    if let Some(n) = opt::<i64>(opts, "max_iter")?
        && n > 0
    {
        p.solver.max_iter = n as u64;
    }
    if let Some(s) = opt::<u64>(opts, "random_state")? {
        p.solver.seed = s;
    }
    if let Some(t) = opt::<f64>(opts, "time_limit")? {
        p.solver.time_limit = Some(std::time::Duration::from_secs_f64(t));
    }
    if let Some(a) = opt::<String>(opts, "algorithm")? {
        p.solver.algorithm = a.parse().map_err(PyValueError::new_err)?;
    }
    if let Some(s) = opt::<usize>(opts, "sample")? {
        p.sample = s;
    }
    if let Some(mb) = opt::<f64>(opts, "cache_size")? {
        p.cpu.cache_bytes = (mb.max(1.0) * (1 << 20) as f64) as usize;
    }
    if let Some(w) = opt::<Vec<(f64, f64)>>(opts, "class_weight")? {
        p.class_weights = w;
    }
    if let Some(o) = opt::<bool>(opts, "one_class")? {
        p.one_class = o;
    }
    if p.solver.algorithm == fwsvm::solver::Algorithm::SimpleSvm {
        p.cpu.precision = fwsvm::backend::cpu::Precision::F64;
    }
    Ok(p)
}

/// One solved problem's summary: (class a, class b, iterations, certified gap, stop reason).
type PairSummary = (f64, f64, u64, Option<f64>, String);

/// Trains on `ds` with the GIL released; Ctrl-C in the interpreter ends the run.
fn fit(py: Python<'_>, ds: Dataset, opts: &Bound<'_, PyDict>) -> PyResult<NativeModel> {
    let p = params(opts)?;
    let probability = opt::<bool>(opts, "probability")?.unwrap_or(false);
    fwsvm::interrupt::clear();
    let (model, reports) = py
        .detach(|| -> fwsvm::error::Result<_> {
            let (mut model, reports) = fwsvm::train::train(&ds, &p, &mut |_| Vec::new())?;
            if probability {
                fwsvm::train::add_probabilities(&ds, &p, &mut model)?;
            }
            Ok((model, reports))
        })
        .map_err(to_py)?;
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
    Ok(NativeModel { model, pairs })
}

/// Trains on a dense float32 matrix.
#[pyfunction]
fn fit_dense(
    py: Python<'_>,
    x: PyBuffer<f32>,
    y: Vec<f64>,
    opts: Bound<'_, PyDict>,
) -> PyResult<NativeModel> {
    let ds = dense(py, &x, y)?;
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
    y: Vec<f64>,
    opts: Bound<'_, PyDict>,
) -> PyResult<NativeModel> {
    let ds = csr(py, &indptr, &indices, &data, n_features, y)?;
    fit(py, ds, &opts)
}

/// A trained model (LIBSVM's layout) and what training reported per class pair.
#[pyclass(module = "fwsvm._native")]
struct NativeModel {
    model: Model,
    pairs: Vec<PairSummary>,
}

impl NativeModel {
    /// Labels and decision values (rows × pairs, flattened) of `ds`.
    fn decide(&self, py: Python<'_>, ds: Dataset) -> (Vec<f64>, Vec<f64>) {
        let (labels, dec) = py.detach(|| self.model.predict_with_decisions(&ds));
        (labels, dec.into_iter().flatten().collect())
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

    /// Per class pair: (a, b, iterations, certified gap, stop reason).
    #[getter]
    fn pairs(&self) -> Vec<PairSummary> {
        self.pairs.clone()
    }

    /// The support vectors as a dense row-major list of `width` columns.
    fn support_vectors(&self, width: usize) -> Vec<f64> {
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
        out
    }

    /// Labels and flattened decision values of a dense float32 matrix.
    fn decide_dense(&self, py: Python<'_>, x: PyBuffer<f32>) -> PyResult<(Vec<f64>, Vec<f64>)> {
        let m = x.shape().first().copied().unwrap_or(0);
        let ds = dense(py, &x, vec![0.0; m])?;
        Ok(self.decide(py, ds))
    }

    /// Labels and flattened decision values of CSR parts.
    fn decide_csr(
        &self,
        py: Python<'_>,
        indptr: PyBuffer<i64>,
        indices: PyBuffer<i32>,
        data: PyBuffer<f32>,
        n_features: usize,
    ) -> PyResult<(Vec<f64>, Vec<f64>)> {
        let m = indptr.item_count().saturating_sub(1);
        let ds = csr(py, &indptr, &indices, &data, n_features, vec![0.0; m])?;
        Ok(self.decide(py, ds))
    }

    /// Class probabilities (rows × classes, flattened) from flattened decision values.
    fn probabilities(&self, dec: Vec<f64>) -> PyResult<Vec<f64>> {
        if !self.model.has_probabilities() {
            return Err(PyValueError::new_err(
                "the model was trained without probability=True",
            ));
        }
        let k = self.model.n_classes();
        let pairs = (k * (k - 1) / 2).max(1);
        let rows: Vec<Vec<f64>> = dec.chunks(pairs).map(|c| c.to_vec()).collect();
        let (_, probs) = self.model.probabilities_from_decisions(&rows);
        Ok(probs.into_iter().flatten().collect())
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
        })
    }
}

/// The native module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fit_dense, m)?)?;
    m.add_function(wrap_pyfunction!(fit_csr, m)?)?;
    m.add_class::<NativeModel>()?;
    Ok(())
}
