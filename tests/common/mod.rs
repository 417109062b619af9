//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

pub mod problems;

/// The repository's root (where `data/`, `python/` and `.venv` are), from the library's tests
/// and from the command line's (`cli/tests`) alike.
pub fn repo_root() -> PathBuf {
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .find(|p| p.join("data/heart_scale.xz").is_file())
        .unwrap_or(manifest)
        .to_path_buf()
}

/// `data/<name>` (shipped in the repository: heart_scale, a9a, a9a.t), else the folder named by
/// `FWSVM_DATASETS` (default: the workspace's shared datasets folder beside the clone, where
/// the larger sets are), or None (with a loud message) when neither has it outside CI. In CI (`CI=true`) a missing dataset is a failure,
/// never a skip.
pub fn dataset(name: &str) -> Option<PathBuf> {
    let root = repo_root();
    let shipped = root.join("data").join(name);
    if shipped.exists() {
        return Some(shipped);
    }
    let folder = std::env::var_os("FWSVM_DATASETS")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("../shared/datasets"));
    let p = folder.join(name);
    if p.exists() {
        return Some(p);
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("dataset {} is missing in CI", p.display());
    }
    skip(&format!("dataset {} not found", p.display()));
    None
}

/// Reports a skipped check where the test summary shows it: written to the process's stderr
/// directly, which the test harness does not capture (its capture covers only `eprintln!`), so
/// `cargo test` prints it even for a test that passes.
pub fn skip(what: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "SKIPPED: {what}");
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

/// The main of a test binary whose tests need something found at run time (a GPU adapter, a
/// dataset, a Python with LIBSVM): with `missing` None every test runs; with `missing` Some
/// (what is missing) every test is reported ignored. See [`run_tests_each`].
pub fn run_tests(
    tests: Vec<(&'static str, fn())>,
    missing: Option<String>,
) -> std::process::ExitCode {
    run_tests_each(
        tests
            .into_iter()
            .map(|(name, f)| (name, f, missing.clone()))
            .collect(),
    )
}

/// A test for [`run_tests_each`]: its name, its function, and what it misses (None: nothing).
pub type Requiring = (&'static str, fn(), Option<String>);

/// [`run_tests`] with what each test misses, if anything: a test whose requirement is missing
/// is reported ignored, even under `--include-ignored` (the reason printed once), and never
/// counted as passed; the others run. (No test of these binaries is ignored for another
/// reason, so `--ignored` lists the ones that cannot run, and `--include-ignored` runs the
/// rest.) In CI (`CI=true`) a missing requirement is a failure. A panicking test fails, as
/// under the built-in harness.
pub fn run_tests_each(tests: Vec<Requiring>) -> std::process::ExitCode {
    let mut args = libtest_mimic::Arguments::from_args();
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let mut reported = std::collections::HashSet::new();
    let mut trials: Vec<libtest_mimic::Trial> = tests
        .into_iter()
        .map(|(name, f, missing)| {
            if let Some(what) = &missing {
                assert!(!ci, "{name}: {what} (required in CI)");
                if reported.insert(what.clone()) {
                    skip(&format!("{what}: the tests that need it are ignored"));
                }
            }
            libtest_mimic::Trial::test(name, move || {
                f();
                Ok(())
            })
            .with_ignored_flag(missing.is_some())
        })
        .collect();
    if args.ignored {
        trials.retain(|t| t.has_ignored_flag());
    }
    args.ignored = false;
    args.include_ignored = false;
    libtest_mimic::run(&args, trials).exit_code()
}

/// `(name, function)` pairs for [`run_tests`].
#[macro_export]
macro_rules! trials {
    ($($f:ident),* $(,)?) => {
        vec![$((stringify!($f), $f as fn())),*]
    };
}

/// What [`dataset`] would not find among `names`, said for [`run_tests_each`]; None when every
/// one is there. Prints nothing.
pub fn missing_datasets(names: &[&str]) -> Option<String> {
    let root = repo_root();
    let folder = std::env::var_os("FWSVM_DATASETS")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("../shared/datasets"));
    let absent: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| !root.join("data").join(n).exists() && !folder.join(n).exists())
        .collect();
    (!absent.is_empty()).then(|| {
        format!(
            "dataset(s) {} not in data/ nor in {} (FWSVM_DATASETS)",
            absent.join(", "),
            folder.display()
        )
    })
}

/// A small separable-ish training file (two features, 60 rows, a comment and a blank line
/// first) in `dir`, for the command-line tests.
pub fn write_train(dir: &std::path::Path) -> PathBuf {
    let p = dir.join("train.txt");
    let mut s = String::from("# a comment\n\n");
    for i in 0..60 {
        let y = if i % 2 == 0 { 1 } else { -1 };
        let x1 = y as f64 * 0.8 + (i as f64 * 0.037).sin() * 0.3;
        let x2 = (i as f64 * 0.11).cos();
        s.push_str(&format!("{y} 1:{x1:.4} 2:{x2:.4}\n"));
    }
    std::fs::write(&p, s).unwrap();
    p
}
