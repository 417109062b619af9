//! The MPI layer across real processes (`cargo test --features mpi --test mpi`; needs `mpirun`
//! on the PATH): the collectives and each rank's slice of a LIBSVM file, under `mpirun
//! --oversubscribe -np 2` and `-np 4`, against what one process computes; a malformed line in
//! one rank's slice ends every rank with exit code 2 and the file's line.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `target/<profile>/examples/mpi_check`, built by `cargo test --features mpi`.
fn check_bin() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent()
        .and_then(Path::parent)
        .unwrap()
        .join("examples")
        .join("mpi_check")
}

/// True when `mpirun` runs; without it the tests skip loudly, except under CI, which must have it.
fn have_mpirun() -> bool {
    if Command::new("mpirun").arg("--version").output().is_ok() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "CI runs the MPI tests: install Open MPI"
    );
    common::skip("mpirun not found");
    false
}

fn mpirun(np: usize, file: &Path, logs: &Path) -> Option<Output> {
    if !have_mpirun() {
        return None;
    }
    Some(
        Command::new("mpirun")
            .args(["--oversubscribe", "--output-filename"])
            .arg(logs)
            .args(["-np", &np.to_string()])
            .arg(check_bin())
            .arg(file)
            // Containers and CI run as root; Open MPI refuses that unless told.
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .output()
            .unwrap(),
    )
}

/// What rank `r` wrote on stderr, from `mpirun --output-filename DIR` (Open MPI keeps each
/// rank's streams apart there; on the terminal they may interleave anywhere).
fn rank_stderr(dir: &Path, r: usize) -> String {
    rank_stream(dir, r, "stderr")
}

/// What rank `r` wrote on `stream` ("stdout" or "stderr") under `--output-filename dir`.
fn rank_stream(dir: &Path, r: usize, stream: &str) -> String {
    let mut text = String::new();
    for job in std::fs::read_dir(dir).unwrap().flatten() {
        let f = job.path().join(format!("rank.{r}")).join(stream);
        if let Ok(t) = std::fs::read_to_string(&f) {
            text.push_str(&t);
        }
    }
    text
}

/// What one process reads: rows, features and the checksum `mpi_check` prints.
fn one_process(file: &Path) -> (usize, usize, f64) {
    let ds = fwsvm::data::read_libsvm(file).unwrap();
    let mut sum = 0.0;
    let mut dense = vec![0.0; ds.n_features()];
    for i in 0..ds.len() {
        sum += ds.labels[i] * (i + 1) as f64;
        dense.iter_mut().for_each(|x| *x = 0.0);
        ds.row(i).scatter_f64(&mut dense);
        sum += dense.iter().sum::<f64>();
    }
    (ds.len(), ds.n_features(), sum)
}

fn field<'a>(line: &'a str, name: &str) -> &'a str {
    let i = line
        .find(&format!(" {name} "))
        .unwrap_or_else(|| panic!("{name} in {line}"));
    line[i + name.len() + 2..].split(' ').next().unwrap()
}

fn check(np: usize, file: &Path) {
    let dir = common::tempdir();
    let logs = dir.path().join("logs");
    let Some(out) = mpirun(np, file, &logs) else {
        return;
    };
    assert!(
        out.status.success(),
        "{np} ranks: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let (rows, features, checksum) = one_process(file);
    // Each rank's line from its own stdout file (on the terminal the ranks may interleave).
    let texts: Vec<String> = (0..np).map(|r| rank_stream(&logs, r, "stdout")).collect();
    let lines: Vec<&str> = texts
        .iter()
        .map(|t| {
            t.lines()
                .find(|l| l.starts_with("rank "))
                .unwrap_or_default()
        })
        .collect();
    let mut next = 0;
    for (r, l) in lines.iter().enumerate() {
        assert!(l.starts_with(&format!("rank {r} of {np}:")), "{l}");
        let p = np as f64;
        assert!(
            l.contains(&format!("sum {} {} ", p * (p - 1.0) / 2.0, p)),
            "{l}"
        );
        assert_eq!(field(l, "min"), "2@10", "{l}");
        assert_eq!(field(l, "max"), format!("5@{}", 10 - (np - 1)), "{l}");
        assert_eq!(field(l, "bcast"), "row", "{l}");
        let gather: Vec<String> = (0..np).map(|k| (10 * k).to_string()).collect();
        assert!(
            l.contains(&format!("gather [{}]", gather.join(", "))),
            "{l}"
        );
        let part = field(l, "rows");
        let (first, n) = part.split_once('+').unwrap();
        assert_eq!(first.parse::<usize>().unwrap(), next, "{l}");
        next += n.parse::<usize>().unwrap();
        assert!(
            l.contains(&format!(" of {rows} features {features} ")),
            "{l}"
        );
        let c: f64 = field(l, "checksum").parse().unwrap();
        assert!(
            (c - checksum).abs() <= 1e-9 * checksum.abs().max(1.0),
            "{c} vs {checksum}"
        );
    }
    assert_eq!(next, rows);
}

#[test]
fn collectives_and_slices_across_processes() {
    let heart = common::repo_root().join("data/heart_scale.xz");
    let dir = common::tempdir();
    let plain = dir.path().join("heart.txt");
    let ds = fwsvm::data::read_libsvm(&heart).unwrap();
    let mut f = std::fs::File::create(&plain).unwrap();
    fwsvm::data::write_libsvm(&mut f, &ds).unwrap();
    drop(f);
    for np in [2, 4] {
        check(np, &heart);
        check(np, &plain);
    }
}

/// `fwsvm check` compares two backends in one process, with one process's defaults: under
/// mpirun every rank says so and exits 2.
#[test]
fn check_refuses_to_run_under_mpirun() {
    let heart = common::repo_root().join("data/heart_scale.xz");
    let Some(out) = fwsvm_under_mpirun(2, &["check".as_ref(), heart.as_os_str()]) else {
        return;
    };
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("run it without mpirun"),
        "{out:?}"
    );
}

#[test]
fn a_bad_line_ends_every_rank() {
    let dir = common::tempdir();
    let bad = dir.path().join("bad.txt");
    let mut text = String::new();
    for i in 0..40 {
        text.push_str(&format!("{} 1:{}\n", if i % 2 == 0 { 1 } else { -1 }, i));
    }
    text.push_str("1 2:oops\n");
    std::fs::write(&bad, text).unwrap();
    if !have_mpirun() {
        return;
    }
    let logs = dir.path().join("logs");
    let out = Command::new("mpirun")
        .args(["--oversubscribe", "--output-filename"])
        .arg(&logs)
        .args(["-np", "4"])
        .arg(check_bin())
        .arg(&bad)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    for r in 0..4 {
        let e = rank_stderr(&logs, r);
        assert!(
            e.contains(&format!("rank {r}: ")) && e.contains("bad.txt:41:"),
            "rank {r}: {e}"
        );
    }
}

fn fwsvm_under_mpirun(np: usize, args: &[&std::ffi::OsStr]) -> Option<Output> {
    fwsvm_under_mpirun_logged(np, args, None)
}

/// [`fwsvm_under_mpirun`], each rank's streams also kept in `logs` (see [`rank_stderr`]).
fn fwsvm_under_mpirun_logged(
    np: usize,
    args: &[&std::ffi::OsStr],
    logs: Option<&Path>,
) -> Option<Output> {
    if !have_mpirun() {
        return None;
    }
    Some(
        Command::new("mpirun")
            .arg("--oversubscribe")
            .args(
                logs.map(|l| vec!["--output-filename".as_ref(), l.as_os_str()])
                    .unwrap_or_default(),
            )
            .args(["-np", &np.to_string()])
            .arg(env!("CARGO_BIN_EXE_fwsvm"))
            .args(args)
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .output()
            .unwrap(),
    )
}

/// `mpirun -np P fwsvm train --precision f64` writes the model `fwsvm train` writes in one
/// process, byte for byte, for a compressed and a plain dense file and a sparse one (γ auto),
/// with full gradients and with sampled iterations.
#[test]
fn train_under_mpirun_writes_the_single_process_model() {
    let dir = common::tempdir();
    let heart = common::repo_root().join("data/heart_scale.xz");
    let plain = dir.path().join("heart.txt");
    let ds = fwsvm::data::read_libsvm(&heart).unwrap();
    let mut f = std::fs::File::create(&plain).unwrap();
    fwsvm::data::write_libsvm(&mut f, &ds).unwrap();
    drop(f);
    // Sparse data: a9a's first 1,200 rows (123 features, about 14 non-zero).
    let a9a = fwsvm::data::read_libsvm(&common::repo_root().join("data/a9a.xz")).unwrap();
    let rows: Vec<usize> = (0..1200).collect();
    let sparse = a9a.subset(&rows);
    assert!(!sparse.is_dense());
    let sparse_path = dir.path().join("a9a-1200.txt");
    let mut f = std::fs::File::create(&sparse_path).unwrap();
    fwsvm::data::write_libsvm(&mut f, &sparse).unwrap();
    drop(f);
    // A leading comment as long as the rows: under 4 ranks the byte ranges of ranks 0 and 1
    // hold no line start, so they own no row (rank 0 still writes the model).
    let commented = dir.path().join("heart-commented.txt");
    let rows_text = std::fs::read_to_string(&plain).unwrap();
    let comment = format!("# {}\n", "x".repeat(rows_text.len()));
    std::fs::write(&commented, comment + &rows_text).unwrap();
    for data in [&heart, &plain, &sparse_path, &commented] {
        for run in [
            &[][..],
            &["-a", "partan"][..],
            &["-a", "swap"][..],
            &["-a", "cvm"][..],
            &["-a", "sparse-fw"][..],
            &["-s", "2"][..],
            &["-a", "swap2", "--sample", "60"][..],
            &["-a", "simplesvm", "--violator", "queue"][..],
        ] {
            let tag: String = run.concat();
            let one = dir.path().join(format!("one{tag}.model"));
            let st = Command::new(env!("CARGO_BIN_EXE_fwsvm"))
                .args(["train", "-q", "--precision", "f64"])
                .args(run)
                .arg(data)
                .arg(&one)
                .status()
                .unwrap();
            assert!(st.success());
            for np in [2, 4] {
                let many = dir.path().join(format!("{np}{tag}.model"));
                let mut args: Vec<&std::ffi::OsStr> = vec![
                    "train".as_ref(),
                    "-q".as_ref(),
                    "--precision".as_ref(),
                    "f64".as_ref(),
                ];
                args.extend(run.iter().map(std::ffi::OsStr::new));
                args.extend([data.as_os_str(), many.as_os_str()]);
                let Some(out) = fwsvm_under_mpirun(np, &args) else {
                    return;
                };
                assert!(out.status.success(), "{out:?}");
                assert_eq!(
                    std::fs::read(&many).unwrap(),
                    std::fs::read(&one).unwrap(),
                    "{tag} on {np} ranks, {}",
                    data.display()
                );
            }
        }
    }
}

/// A malformed line in one rank's slice ends the whole job: exit 2, the file and line on every
/// rank, no model written.
#[test]
fn train_under_mpirun_stops_on_a_bad_line() {
    let dir = common::tempdir();
    let bad = dir.path().join("bad.txt");
    let mut text = String::new();
    for i in 0..60 {
        text.push_str(&format!(
            "{} 1:{} 2:{}\n",
            if i % 2 == 0 { 1 } else { -1 },
            i,
            60 - i
        ));
    }
    text.push_str("+1 1:0.5 2:x\n");
    std::fs::write(&bad, text).unwrap();
    let model = dir.path().join("bad.model");
    let args: Vec<&std::ffi::OsStr> = vec!["train".as_ref(), bad.as_os_str(), model.as_os_str()];
    let logs = dir.path().join("logs");
    let Some(out) = fwsvm_under_mpirun_logged(2, &args, Some(&logs)) else {
        return;
    };
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    for r in 0..2 {
        let e = rank_stderr(&logs, r);
        assert!(e.contains("bad.txt:61:"), "rank {r}: {e}");
    }
    assert!(!model.exists());
}

/// `mpirun -np P fwsvm train -v 5` prints the cross-validation accuracy one process prints.
#[test]
fn cross_validation_under_mpirun() {
    let heart = common::repo_root().join("data/heart_scale.xz");
    let one = Command::new(env!("CARGO_BIN_EXE_fwsvm"))
        .args(["train", "-q", "-v", "5", "--precision", "f64"])
        .arg(&heart)
        .output()
        .unwrap();
    assert!(one.status.success());
    let expected = String::from_utf8_lossy(&one.stdout).to_string();
    assert!(
        expected.starts_with("Cross Validation Accuracy = "),
        "{expected}"
    );
    // auto: the folds go to the ranks whole (heart fits, 5 folds ≥ the ranks).
    for (np, how) in [(2, "auto"), (2, "rows"), (4, "auto"), (4, "rows")] {
        let args: Vec<&std::ffi::OsStr> = vec![
            "train".as_ref(),
            "-q".as_ref(),
            "-v".as_ref(),
            "5".as_ref(),
            "--precision".as_ref(),
            "f64".as_ref(),
            "--distribute".as_ref(),
            how.as_ref(),
            heart.as_os_str(),
        ];
        let Some(out) = fwsvm_under_mpirun(np, &args) else {
            return;
        };
        assert!(out.status.success(), "{out:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            expected,
            "{np} ranks, --distribute {how}"
        );
    }
}

/// `mpirun -np 2 fwsvm grid` (points × folds dealt to the ranks, and split by rows) writes
/// the accuracies one process writes; a resumed search under mpirun finishes the same file.
#[test]
fn grid_under_mpirun() {
    let dir = common::tempdir();
    let heart = common::repo_root().join("data/heart_scale.xz");
    let grid = |out: &Path| -> Vec<String> {
        vec![
            "grid".into(),
            "-q".into(),
            "-v".into(),
            "3".into(),
            "--precision".into(),
            "f64".into(),
            "--log2c".into(),
            "0,2,2".into(),
            "--log2g".into(),
            "-2,-1,1".into(),
            "--out".into(),
            out.display().to_string(),
            "--svg".into(),
            out.with_extension("svg").display().to_string(),
            heart.display().to_string(),
        ]
    };
    // Everything but the seconds.
    let points = |p: &Path| -> Vec<String> {
        std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .map(|l| l.rsplit_once(',').map_or(l, |(a, _)| a).to_string())
            .collect()
    };
    let one = dir.path().join("one.csv");
    let st = Command::new(env!("CARGO_BIN_EXE_fwsvm"))
        .args(grid(&one))
        .output()
        .unwrap();
    assert!(st.status.success(), "{st:?}");
    let expected = points(&one);
    assert_eq!(expected.len(), 2 + 4, "{expected:?}");
    for how in ["auto", "rows"] {
        let out = dir.path().join(format!("{how}.csv"));
        let mut args = grid(&out);
        args.extend(["--distribute".to_string(), how.to_string()]);
        let args: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
        let Some(run) = fwsvm_under_mpirun(2, &args) else {
            return;
        };
        assert!(run.status.success(), "{run:?}");
        assert_eq!(points(&out), expected, "--distribute {how}");
    }
    // Two points done, two left: --resume under mpirun.
    let part = dir.path().join("part.csv");
    let text = std::fs::read_to_string(&one).unwrap();
    let head: Vec<&str> = text.lines().take(4).collect();
    std::fs::write(&part, head.join("\n") + "\n").unwrap();
    let mut args = grid(&part);
    args.push("--resume".into());
    let args: Vec<&std::ffi::OsStr> = args.iter().map(std::ffi::OsStr::new).collect();
    let Some(run) = fwsvm_under_mpirun(2, &args) else {
        return;
    };
    assert!(run.status.success(), "{run:?}");
    assert_eq!(points(&part), expected, "resumed");
}

/// `mpirun -np 2 fwsvm train --backend gpu`: each rank opens its own adapter (`local rank`
/// unless `--device` names one; here adapter 0 on both, the software one in CI), computes its
/// rows' columns there and the columns of the other rank's vertices as guests; the model
/// predicts the training rows as well as the single-process GPU model, within a row.
#[cfg(feature = "gpu")]
#[test]
fn a_gpu_per_rank_under_mpirun() {
    let info = Command::new(env!("CARGO_BIN_EXE_fwsvm"))
        .arg("info")
        .output()
        .unwrap();
    let info = String::from_utf8_lossy(&info.stdout).to_string();
    if !info.contains("] ") {
        assert!(
            std::env::var("CI").is_err(),
            "no GPU adapter in CI:\n{info}"
        );
        common::skip("GPU under mpirun: no GPU adapter");
        return;
    }
    let dir = common::tempdir();
    let heart = common::repo_root().join("data/heart_scale.xz");
    let ds = fwsvm::data::read_libsvm(&heart).unwrap();
    let rows: Vec<usize> = (0..90).collect();
    let small = dir.path().join("heart-90.txt");
    let mut f = std::fs::File::create(&small).unwrap();
    fwsvm::data::write_libsvm(&mut f, &ds.subset(&rows)).unwrap();
    drop(f);
    let accuracy = |model: &Path| -> usize {
        let m = fwsvm::model::Model::load(model).unwrap();
        let part = ds.subset(&rows);
        m.predict(&part)
            .iter()
            .zip(&part.labels)
            .filter(|(p, y)| p == y)
            .count()
    };
    let one = dir.path().join("one.model");
    let st = Command::new(env!("CARGO_BIN_EXE_fwsvm"))
        .args([
            "train",
            "-q",
            "--backend",
            "gpu",
            "--device",
            "0",
            "-e",
            "0.01",
        ])
        .arg(&small)
        .arg(&one)
        .output()
        .unwrap();
    assert!(st.status.success(), "{st:?}");
    let many = dir.path().join("two.model");
    let logs = dir.path().join("logs");
    let args: Vec<&std::ffi::OsStr> = vec![
        "train".as_ref(),
        "--backend".as_ref(),
        "gpu".as_ref(),
        "--device".as_ref(),
        "0".as_ref(),
        "-e".as_ref(),
        "0.01".as_ref(),
        small.as_os_str(),
        many.as_os_str(),
    ];
    let Some(out) = fwsvm_under_mpirun_logged(2, &args, Some(&logs)) else {
        return;
    };
    assert!(out.status.success(), "{out:?}");
    for r in 0..2 {
        let err = rank_stderr(&logs, r);
        assert!(
            err.contains(&format!("fwsvm: rank {r}: gpu: ")),
            "rank {r}: {err}"
        );
    }
    let (a, b) = (accuracy(&one), accuracy(&many));
    assert!(a.abs_diff(b) <= 1, "{a} vs {b} of 90 right");
}

/// The default solver (ws) under `mpirun -np 2` and `-np 4` writes the single-process model
/// byte for byte on data generated in the test (a noisy checkerboard from `fwsvm gen`) and on
/// the shared sets: ijcnn1's first 6,000 rows (the ws problem below the warm start's size) and
/// pendigits' ten classes with every class pair split over the ranks by rows.
#[test]
fn the_default_solver_under_mpirun_on_generated_and_shared_sets() {
    let dir = common::tempdir();
    let board = dir.path().join("board.txt");
    let st = Command::new(env!("CARGO_BIN_EXE_fwsvm"))
        .args([
            "gen",
            "checkerboard",
            "--rows",
            "4000",
            "--noise",
            "0.1",
            "--seed",
            "5",
        ])
        .arg(&board)
        .status()
        .unwrap();
    assert!(st.success());
    // (file, options, options of the ranks only)
    type Set = (PathBuf, Vec<&'static str>, Vec<&'static str>);
    let mut sets: Vec<Set> = vec![(board, vec!["-c", "10", "-g", "2"], vec![])];
    if let Some(ijcnn1) = common::dataset("ijcnn1.trn.bz2") {
        let ds = fwsvm::data::read_libsvm(&ijcnn1).unwrap();
        let rows: Vec<usize> = (0..6000).collect();
        let part = dir.path().join("ijcnn1-6000.txt");
        let mut f = std::fs::File::create(&part).unwrap();
        fwsvm::data::write_libsvm(&mut f, &ds.subset(&rows)).unwrap();
        drop(f);
        sets.push((part, vec!["-c", "10", "-g", "0.386059"], vec![]));
    }
    if let Some(pendigits) = common::dataset("pendigits.xz") {
        sets.push((pendigits, vec!["-c", "10"], vec!["--distribute", "rows"]));
    }
    for (data, opts, rank_opts) in &sets {
        let one = dir.path().join("one.model");
        let st = Command::new(env!("CARGO_BIN_EXE_fwsvm"))
            .args(["train", "-q", "--precision", "f64"])
            .args(opts)
            .arg(data)
            .arg(&one)
            .status()
            .unwrap();
        assert!(st.success());
        for np in [2, 4] {
            let many = dir.path().join(format!("{np}.model"));
            let mut args: Vec<&std::ffi::OsStr> = vec![
                "train".as_ref(),
                "-q".as_ref(),
                "--precision".as_ref(),
                "f64".as_ref(),
            ];
            args.extend(opts.iter().chain(rank_opts).map(std::ffi::OsStr::new));
            args.extend([data.as_os_str(), many.as_os_str()]);
            let Some(out) = fwsvm_under_mpirun(np, &args) else {
                return;
            };
            assert!(out.status.success(), "{out:?}");
            assert!(
                std::fs::read(&many).unwrap() == std::fs::read(&one).unwrap(),
                "{} on {np} ranks: the model file differs",
                data.display()
            );
        }
    }
}

/// `mpirun -np 2|4 fwsvm train --backend gpu --precision f64` with no `--device` on a machine
/// with one adapter (lavapipe in CI, listed under Vulkan and GL): every rank takes the Vulkan
/// one (the GL one has no f64) and says so. With the default solver (ws) the model file is the
/// single-process one byte for byte; with PARTAN every number is within 1e-9 relative (the
/// device's αᵀg partial sums are added in another order across ranks, so the last digits may
/// differ; docs/GUIDE.md, MPI).
#[cfg(feature = "gpu")]
#[test]
fn ranks_share_one_gpu_without_device() {
    let info = Command::new(env!("CARGO_BIN_EXE_fwsvm"))
        .arg("info")
        .output()
        .unwrap();
    let info = String::from_utf8_lossy(&info.stdout).to_string();
    if !info.contains("f64 yes") {
        assert!(
            std::env::var("CI").is_err(),
            "no f64 GPU adapter in CI:\n{info}"
        );
        common::skip("ranks sharing a GPU: no adapter with f64");
        return;
    }
    let dir = common::tempdir();
    let heart = common::repo_root().join("data/heart_scale.xz");
    for partan in [false, true] {
        let mut opts = vec!["--backend", "gpu", "--precision", "f64", "-c", "10"];
        if partan {
            opts.extend(["-a", "partan"]);
        }
        same_model_on_shared_gpu(&dir, &heart, &opts, partan);
    }
}

/// Trains `data` with `opts` in one process and under `mpirun -np 2` and `-np 4` on the one
/// adapter, and compares the model files: byte for byte, or within 1e-9 relative where
/// `close` is set.
#[cfg(feature = "gpu")]
fn same_model_on_shared_gpu(dir: &tempfile::TempDir, data: &Path, opts: &[&str], close: bool) {
    let one = dir.path().join("one.model");
    let st = Command::new(env!("CARGO_BIN_EXE_fwsvm"))
        .args(["train", "-q"])
        .args(opts)
        .arg(data)
        .arg(&one)
        .output()
        .unwrap();
    assert!(st.status.success(), "{st:?}");
    let want = std::fs::read_to_string(&one).unwrap();
    for np in [2usize, 4] {
        let many = dir.path().join(format!("{np}.model"));
        let logs = dir.path().join(format!("logs{np}"));
        let mut args: Vec<&std::ffi::OsStr> = vec!["train".as_ref()];
        args.extend(opts.iter().map(|s| -> &std::ffi::OsStr { s.as_ref() }));
        args.push(data.as_os_str());
        args.push(many.as_os_str());
        let Some(out) = fwsvm_under_mpirun_logged(np, &args, Some(&logs)) else {
            return;
        };
        assert!(out.status.success(), "-np {np}: {out:?}");
        for r in 0..np {
            let err = rank_stderr(&logs, r);
            assert!(
                err.contains(&format!("fwsvm: rank {r}: gpu: ")) && err.contains("(Vulkan)"),
                "-np {np}, rank {r}: {err}"
            );
        }
        let got = std::fs::read_to_string(&many).unwrap();
        if !close {
            assert_eq!(got, want, "-np {np}, {opts:?}");
            continue;
        }
        assert_eq!(got.lines().count(), want.lines().count(), "-np {np}");
        for (g, w) in got.lines().zip(want.lines()) {
            let (gt, wt): (Vec<&str>, Vec<&str>) = (
                g.split_whitespace().collect(),
                w.split_whitespace().collect(),
            );
            assert_eq!(gt.len(), wt.len(), "-np {np}: {g} / {w}");
            for (a, b) in gt.iter().zip(&wt) {
                match (a.parse::<f64>(), b.parse::<f64>()) {
                    (Ok(x), Ok(y)) => assert!(
                        (x - y).abs() <= 1e-9 * y.abs().max(1e-6),
                        "-np {np}: {x} vs {y} in {g} / {w}"
                    ),
                    _ => assert_eq!(a, b, "-np {np}: {g} / {w}"),
                }
            }
        }
    }
}

/// One-versus-one under mpirun: three classes, the pairs dealt to the ranks (auto: three pairs
/// for two ranks) or split by rows; both write the single-process model file, and so does
/// `-b 1` (its sigmoids dealt to the ranks).
#[test]
fn one_versus_one_under_mpirun() {
    let dir = common::tempdir();
    let heart = common::repo_root().join("data/heart_scale.xz");
    let mut ds = fwsvm::data::read_libsvm(&heart).unwrap();
    // Three classes by the first feature's thirds.
    for i in 0..ds.len() {
        let mut x = vec![0.0; ds.n_features()];
        ds.row(i).scatter_f64(&mut x);
        ds.labels[i] = if x[0] < -0.3 {
            1.0
        } else if x[0] < 0.3 {
            2.0
        } else {
            3.0
        };
    }
    let three = dir.path().join("three.txt");
    let mut f = std::fs::File::create(&three).unwrap();
    fwsvm::data::write_libsvm(&mut f, &ds).unwrap();
    drop(f);
    let one = dir.path().join("one.model");
    let one_trace = dir.path().join("one.csv");
    let st = Command::new(env!("CARGO_BIN_EXE_fwsvm"))
        .args(["train", "-q", "--precision", "f64", "--trace"])
        .arg(&one_trace)
        .arg(&three)
        .arg(&one)
        .output()
        .unwrap();
    assert!(st.status.success(), "{st:?}");
    // A multi-class trace (pair, iteration, seconds, …) without its seconds.
    let without_seconds = |p: &Path| -> Vec<String> {
        std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .map(|l| {
                let mut f: Vec<&str> = l.split(',').collect();
                f.remove(2);
                f.join(",")
            })
            .collect()
    };
    let expected_trace = without_seconds(&one_trace);
    assert!(
        expected_trace.iter().any(|l| l.starts_with("2,")),
        "three pairs traced"
    );
    for how in ["auto", "rows"] {
        let many = dir.path().join(format!("{how}.model"));
        let trace = dir.path().join(format!("{how}.csv"));
        let args: Vec<&std::ffi::OsStr> = vec![
            "train".as_ref(),
            "--precision".as_ref(),
            "f64".as_ref(),
            "--distribute".as_ref(),
            how.as_ref(),
            "--trace".as_ref(),
            trace.as_os_str(),
            three.as_os_str(),
            many.as_os_str(),
        ];
        let Some(out) = fwsvm_under_mpirun(2, &args) else {
            return;
        };
        assert!(out.status.success(), "{out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        let dealt = err.contains("the 3 class pairs go to the ranks whole");
        assert_eq!(dealt, how == "auto", "{err}");
        assert_eq!(
            std::fs::read(&many).unwrap(),
            std::fs::read(&one).unwrap(),
            "--distribute {how}"
        );
        // The trace: every pair's iterations in pair order, as one process writes them.
        assert_eq!(
            without_seconds(&trace),
            expected_trace,
            "--distribute {how}"
        );
    }
    // -b 1: the pairs' sigmoids dealt to the ranks, the single-process probA/probB.
    let one_b = dir.path().join("one-b.model");
    let st = Command::new(env!("CARGO_BIN_EXE_fwsvm"))
        .args(["train", "-q", "-b", "1", "--precision", "f64"])
        .arg(&three)
        .arg(&one_b)
        .output()
        .unwrap();
    assert!(st.status.success(), "{st:?}");
    let many_b = dir.path().join("many-b.model");
    let args: Vec<&std::ffi::OsStr> = vec![
        "train".as_ref(),
        "-q".as_ref(),
        "-b".as_ref(),
        "1".as_ref(),
        "--precision".as_ref(),
        "f64".as_ref(),
        three.as_os_str(),
        many_b.as_os_str(),
    ];
    let Some(out) = fwsvm_under_mpirun(2, &args) else {
        return;
    };
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(&many_b).unwrap();
    assert!(text.contains("\nprobA "), "{text}");
    assert_eq!(text, std::fs::read_to_string(&one_b).unwrap(), "-b 1");
    // Options that do not go together are refused as in one process.
    let args: Vec<&std::ffi::OsStr> = vec![
        "train".as_ref(),
        "-s".as_ref(),
        "2".as_ref(),
        "-v".as_ref(),
        "3".as_ref(),
        three.as_os_str(),
    ];
    let Some(out) = fwsvm_under_mpirun(2, &args) else {
        return;
    };
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("-s 2 (one-class) does not take -v"));
}

/// `mpirun -np 2 fwsvm train --test FILE --trace CSV`: rank 0 predicts the test file with the
/// model and prints the accuracy line one process prints, and writes the trace one process
/// writes (all but the seconds).
#[test]
fn test_file_and_trace_under_mpirun() {
    let dir = common::tempdir();
    let heart = common::repo_root().join("data/heart_scale.xz");
    let (t1, t2) = (dir.path().join("one.csv"), dir.path().join("two.csv"));
    let one = Command::new(env!("CARGO_BIN_EXE_fwsvm"))
        .args(["train", "-q", "--precision", "f64", "--trace"])
        .arg(&t1)
        .arg("--test")
        .arg(&heart)
        .arg(&heart)
        .arg(dir.path().join("one.model"))
        .output()
        .unwrap();
    assert!(one.status.success(), "{one:?}");
    let expected = String::from_utf8_lossy(&one.stdout).to_string();
    assert!(expected.starts_with("Accuracy = "), "{expected}");
    let many = dir.path().join("two.model");
    let args: Vec<&std::ffi::OsStr> = vec![
        "train".as_ref(),
        "-q".as_ref(),
        "--precision".as_ref(),
        "f64".as_ref(),
        "--trace".as_ref(),
        t2.as_os_str(),
        "--test".as_ref(),
        heart.as_os_str(),
        heart.as_os_str(),
        many.as_os_str(),
    ];
    let Some(out) = fwsvm_under_mpirun(2, &args) else {
        return;
    };
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), expected);
    let without_seconds = |p: &Path| -> Vec<String> {
        std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .map(|l| {
                let mut f: Vec<&str> = l.split(',').collect();
                f.remove(1);
                f.join(",")
            })
            .collect()
    };
    let trace = without_seconds(&t1);
    assert!(trace.len() > 20, "{} lines", trace.len());
    assert_eq!(without_seconds(&t2), trace);
}

/// Data with many repeated rows (heart_scale's 270 rows 20 times over, shuffled): one process
/// groups the repeats, so every rank groups its own; with working-set rounds (`--shrink`) the
/// model file under `mpirun -np 2` and `-np 4` is the single-process one.
#[test]
fn repeated_rows_under_mpirun_write_the_single_process_model() {
    let dir = common::tempdir();
    let heart = common::repo_root().join("data/heart_scale.xz");
    let ds = fwsvm::data::read_libsvm(&heart).unwrap();
    let mut rows: Vec<usize> = (0..20 * ds.len()).map(|i| i % ds.len()).collect();
    let mut rng = fwsvm::rng::SplitMix64::new(3);
    for i in (1..rows.len()).rev() {
        rows.swap(i, rng.below(i + 1));
    }
    let repeated = ds.subset(&rows);
    let path = dir.path().join("repeated.txt");
    let mut f = std::fs::File::create(&path).unwrap();
    fwsvm::data::write_libsvm(&mut f, &repeated).unwrap();
    drop(f);
    // PARTAN: the working-set solver merges the repeats instead of grouping them.
    let common_args = [
        "train",
        "-q",
        "--precision",
        "f64",
        "--shrink",
        "-c",
        "4",
        "-a",
        "partan",
    ];
    let one = dir.path().join("one.model");
    let out = Command::new(env!("CARGO_BIN_EXE_fwsvm"))
        .args(common_args)
        .arg(&path)
        .arg(&one)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    for np in [2, 4] {
        let many = dir.path().join(format!("{np}.model"));
        let mut args: Vec<&std::ffi::OsStr> =
            common_args.iter().map(std::ffi::OsStr::new).collect();
        args.extend([path.as_os_str(), many.as_os_str()]);
        let Some(out) = fwsvm_under_mpirun(np, &args) else {
            return;
        };
        assert!(out.status.success(), "{out:?}");
        assert_eq!(
            std::fs::read(&many).unwrap(),
            std::fs::read(&one).unwrap(),
            "{np} ranks"
        );
    }
}

/// `--partial-sums`: refused in one process; under `mpirun -np 2` the run converges (the
/// certified gap within -e) and rank 0 reports far fewer bytes per iteration than with the
/// exact gathers (a9a's first 2,000 rows).
#[test]
fn partial_sums_under_mpirun() {
    let dir = common::tempdir();
    let a9a = fwsvm::data::read_libsvm(&common::repo_root().join("data/a9a.xz")).unwrap();
    let part = a9a.subset(&(0..2000).collect::<Vec<_>>());
    let path = dir.path().join("a9a-2000.txt");
    let mut f = std::fs::File::create(&path).unwrap();
    fwsvm::data::write_libsvm(&mut f, &part).unwrap();
    drop(f);
    let model = dir.path().join("m.model");
    let one = Command::new(env!("CARGO_BIN_EXE_fwsvm"))
        .args(["train", "-q", "--partial-sums"])
        .arg(&path)
        .arg(&model)
        .output()
        .unwrap();
    assert_eq!(one.status.code(), Some(2), "{one:?}");
    assert!(String::from_utf8_lossy(&one.stderr).contains("--partial-sums combines the sums"));
    assert!(!model.exists());
    let per_iteration = |extra: &[&str]| -> Option<(f64, f64)> {
        // PARTAN, whose traffic per iteration is the reduction the partial sums shrink.
        let mut args: Vec<&std::ffi::OsStr> = vec![
            "train".as_ref(),
            "--threads".as_ref(),
            "1".as_ref(),
            "-a".as_ref(),
            "partan".as_ref(),
        ];
        args.extend(extra.iter().map(std::ffi::OsStr::new));
        args.extend([path.as_os_str(), model.as_os_str()]);
        let out = fwsvm_under_mpirun(2, &args)?;
        assert!(out.status.success(), "{out:?}");
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        let gap: f64 = field(&err, "certified gap")
            .trim_end_matches(',')
            .parse()
            .unwrap();
        let bytes = err
            .split(" bytes per iteration")
            .next()
            .and_then(|s| s.rsplit(' ').next())
            .unwrap()
            .parse()
            .unwrap();
        Some((gap, bytes))
    };
    let Some((gap_exact, exact)) = per_iteration(&[]) else {
        return;
    };
    let (gap, partial) = per_iteration(&["--partial-sums"]).unwrap();
    assert!(gap_exact <= 1e-4 && gap <= 1e-4, "{gap_exact} {gap}");
    assert!(
        partial * 100.0 < exact,
        "{partial} vs {exact} bytes per iteration"
    );
}
