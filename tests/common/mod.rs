//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

pub mod problems;

/// `../shared/datasets/<name>`, or None (with a loud message) when the shared data are absent
/// outside CI. In CI (`CI=true`) a missing dataset is a failure, never a skip.
pub fn dataset(name: &str) -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/datasets")
        .join(name);
    if p.exists() {
        return Some(p);
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("dataset {} is missing in CI", p.display());
    }
    eprintln!("SKIPPED: dataset {} not found", p.display());
    None
}

/// A scratch directory removed at the end of the test.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("temporary directory")
}

/// The dataset without its first feature (breast-cancer's sample id), the others shifted down.
pub fn drop_first_feature(ds: &fwsvm::data::Dataset) -> fwsvm::data::Dataset {
    let (mut ip, mut ix, mut vs) = (vec![0usize], Vec::new(), Vec::new());
    let mut row = vec![0f64; ds.n_features()];
    for i in 0..ds.len() {
        row.iter_mut().for_each(|v| *v = 0.0);
        ds.row(i).scatter_f64(&mut row);
        for (j, &x) in row.iter().enumerate().skip(1) {
            if x != 0.0 {
                ix.push(j as u32 - 1);
                vs.push(x as f32);
            }
        }
        ip.push(ix.len());
    }
    fwsvm::data::Dataset::from_csr(ds.n_features() - 1, ip, ix, vs, ds.labels.clone())
}
