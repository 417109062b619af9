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
