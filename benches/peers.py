#!/usr/bin/env python3
"""fwsvm against LIBSVM and Intel's oneDAL SVC on the four sets of README's performance table (and,
on request, covtype and two ten-class sets), side by side, in one run.

    .venv/bin/python benches/peers.py [--sets ijcnn1,w8a,a9a,kdd99] [--repeats 1]
        [--fwsvm-args "..."] [--out bench-peers] [--no-libsvm] [--no-onedal] [--no-reference]
        [--dry-run]

Every tool gets the same RBF γ and C per set (the table's), on the same training and test
files:

| set | C | γ | training / test |
|---|---|---|---|
| ijcnn1 | 10 | 0.386059 | ijcnn1.trn / ijcnn1.tst |
| w8a | 10 | 0.0459 | w8a, seeded 70/30 split (Python's random.Random(1)) |
| a9a | 1 | 0.064882 | a9a / a9a.t (data/ in the repository) |
| kdd99 | 100 | 0.232 | KDD Cup 99 10 %, `fwsvm convert kdd99` (80/20) then `fwsvm scale -l 0 -u 1` fitted on the training part |
| covtype | 1 | scale | covtype.train (464,810 rows) / covtype.test (116,202), from the shared folder's `covtype_split.py` |
| covtype50k | 1 | scale | covtype50k.train (the first 50,000 rows of covtype.train) / covtype.test |
| usps | 10 | scale | usps_esl.train / usps_esl.test (ten classes, [-1, 1] already) |
| pendigits | 10 | scale | pendigits / pendigits.t (ten classes), `fwsvm scale -l 0 -u 1` fitted on the training file |
| usps784 | 10 | scale | usps's images upsampled bilinearly to 28 × 28, mapped to [0, 1], pixels below the training file's 81st percentile set to 0 (784 features, 19 % non-zero, as MNIST's digits; ten classes) |

Only the first four run by default (`--sets covtype,covtype50k,usps,pendigits,usps784` for the others:
covtype's oneDAL fit takes tens of minutes). γ "scale" is scikit-learn's `gamma='scale'`,
1 / (n_features · X.var()) over the dense training matrix (zeros included; n_features = the
training file's largest feature index), computed here once from the training file, rounded to 6
significant digits, and that one number is passed to all three tools (fwsvm's `-g auto` samples
pairs inside fwsvm and could not be handed to the others). usps and pendigits are multi-class:
fwsvm and LIBSVM train one-versus-one natively, oneDAL's SVC too; every tool's accuracy is the
share of test rows whose predicted label equals the file's label.

* fwsvm: the whole `fwsvm train` process, parse to model file, timed from outside (wall
  seconds; the median of --repeats runs); its own summary gives solver and certification
  seconds. The binary is $FWSVM, else target/release/fwsvm; the table's first line gives its
  `fwsvm --version`, which names the build's features. README's table is the default build
  (`cargo build --release -p fwsvm-cli`, what `cargo install --path cli` installs): one built
  with `--features mpi` loads Open MPI's libraries at every start, about 1 ms a process. Test
  accuracy from `fwsvm predict` afterwards, untimed (LIBSVM's prediction is untimed too).
* LIBSVM: libsvm-official (`svm_train`, `-s 0 -t 2 -m 1024 -e 0.001`), the problem read and
  converted before the clock starts, the clock around `svm_train` alone. libsvm-official is
  built with OpenMP: its kernel loops use every core unless OMP_NUM_THREADS says otherwise; the
  table records the thread counts both tools used.
* oneDAL: `sklearnex.svm.SVC` (`pip install scikit-learn-intelex`; tol 1e-3, cache 1024 MB,
  its default threads: every core), the clock around `fit` alone, on dense arrays (all the
  sets are narrow enough: on w8a's CSR matrix oneDAL reached 97.19 % against 98.89 % dense). A row
  whose fit does not log "running accelerated version" is refused (scikit-learn's own SVC
  would have run instead).
* The reference: fwsvm's test accuracy at `--rel-eps 0.01` (the converged model), untimed.
* The ratio is the fastest other tool's training time over fwsvm's whole process.

Writes `peers.md` and `peers.csv` in --out and prints the Markdown table. The data files it
derives (w8a split, KDD99 conversion, covtype split, pendigits scaling) are cached in --work
(default: target/peers-data). --dry-run prepares the files and prints each set's C and γ, and
trains nothing.
"""

import argparse
import csv
import os
import random
import re
import subprocess
import sys
import time

from libsvm_compare import open_text  # beside this script: plain, gzip, bzip2 or xz

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
FWSVM = os.environ.get("FWSVM", os.path.join(ROOT, "target", "release", "fwsvm"))
SHARED = os.environ.get("FWSVM_DATASETS") or os.path.join(ROOT, "..", "shared", "datasets")

SETS = {
    "ijcnn1": (10.0, 0.386059),
    "w8a": (10.0, 0.0459),
    "a9a": (1.0, 0.064882),
    "kdd99": (100.0, 0.232),
    # γ "scale": scikit-learn's gamma='scale' on the training file (scale_gamma), one number for all.
    "covtype": (1.0, "scale"),
    "covtype50k": (1.0, "scale"),
    "usps": (10.0, "scale"),
    "pendigits": (10.0, "scale"),
    "usps784": (10.0, "scale"),
}


def find(*names):
    for base in (os.path.join(ROOT, "data"), SHARED):
        for n in names:
            p = os.path.join(base, n)
            if os.path.exists(p):
                return p
    sys.exit(f"none of {names} in data/ or {SHARED}")


def plain(src, dst):
    """A decompressed copy (LIBSVM's reader takes plain text)."""
    if not os.path.exists(dst):
        with open_text(src) as f, open(dst + ".part", "w") as o:
            for line in f:
                if line.strip() and not line.lstrip().startswith("#"):
                    o.write(line)
        os.replace(dst + ".part", dst)
    return dst


def scale_gamma(path):
    """scikit-learn's gamma='scale', 1 / (n_features · X.var()), for the dense matrix of a LIBSVM
    text file (absent entries are zeros; n_features = the largest feature index, as
    load_svmlight_file gives it), rounded to 6 significant digits so that the number printed in
    the table is the one every tool gets."""
    n = d = 0
    s = ss = 0.0
    with open_text(path) as f:
        for line in f:
            t = line.split()
            if not t or t[0].startswith("#"):
                continue
            n += 1
            for p in t[1:]:
                if p.startswith("#"):
                    break
                k, v = p.split(":", 1)
                k, v = int(k), float(v)
                d = max(d, k)
                s += v
                ss += v * v
    if n == 0 or d == 0:
        sys.exit(f"{path}: no features to compute γ from")
    cells = n * d
    var = ss / cells - (s / cells) ** 2
    if not var > 0:
        sys.exit(f"{path}: zero variance, no γ 'scale'")
    return float(f"{1.0 / (d * var):.6g}")


def covtype(work):
    """covtype.train, covtype.test and covtype50k.train, made once by the shared folder's
    covtype_split.py into work/covtype (written beside, then moved in: no half-written files)."""
    d = os.path.join(work, "covtype")
    names = ("covtype.train", "covtype.test", "covtype50k.train")
    if not all(os.path.exists(os.path.join(d, n)) for n in names):
        part = os.path.join(d, "split.part")
        os.makedirs(part, exist_ok=True)
        print(f"covtype: running covtype_split.py into {d} (a few minutes)", file=sys.stderr, flush=True)
        run([sys.executable, find("covtype_split.py"), find("covtype.libsvm.binary.xz"), part])
        for n in names:
            os.replace(os.path.join(part, n), os.path.join(d, n))
        os.rmdir(part)
    return d


def prepare(name, work):
    """(train, test) plain-text paths for a set."""
    if name in ("covtype", "covtype50k"):  # one split makes both sets' files
        c = covtype(work)
        return os.path.join(c, f"{name}.train"), os.path.join(c, "covtype.test")
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    if name == "ijcnn1":
        return plain(find("ijcnn1.trn.bz2"), f"{d}/train"), plain(find("ijcnn1.tst.bz2"), f"{d}/test")
    if name == "a9a":
        return plain(find("a9a.xz"), f"{d}/train"), plain(find("a9a.t.xz"), f"{d}/test")
    if name == "w8a":
        tr, te = f"{d}/train", f"{d}/test"
        if not (os.path.exists(tr) and os.path.exists(te)):
            with open_text(find("w8a.xz")) as f:
                lines = [l for l in f if l.strip() and not l.lstrip().startswith("#")]
            random.Random(1).shuffle(lines)
            cut = int(round(0.7 * len(lines)))
            with open(tr, "w") as o:
                o.writelines(lines[:cut])
            with open(te, "w") as o:
                o.writelines(lines[cut:])
        return tr, te
    if name == "kdd99":
        tr, te = f"{d}/train.scaled", f"{d}/test.scaled"
        if not (os.path.exists(tr) and os.path.exists(te)):
            raw = find("kddcup.data_10_percent.gz")
            run([FWSVM, "convert", "kdd99", raw, f"{d}/kdd99"])
            run([FWSVM, "scale", "-l", "0", "-u", "1", "-s", f"{d}/range", f"{d}/kdd99.train", tr])
            run([FWSVM, "scale", "-r", f"{d}/range", f"{d}/kdd99.test", te])
        return tr, te
    if name == "usps":
        return plain(find("usps_esl.train.xz"), f"{d}/train"), plain(find("usps_esl.test.xz"), f"{d}/test")
    if name == "pendigits":
        # Ten classes, features 0–100: scaled to [0, 1] by the training file's range.
        tr, te = f"{d}/train.scaled", f"{d}/test.scaled"
        if not (os.path.exists(tr) and os.path.exists(te)):
            raw_tr, raw_te = plain(find("pendigits.xz"), f"{d}/train"), plain(find("pendigits.t.xz"), f"{d}/test")
            run([FWSVM, "scale", "-l", "0", "-u", "1", "-s", f"{d}/range", raw_tr, tr])
            run([FWSVM, "scale", "-r", f"{d}/range", raw_te, te])
        return tr, te
    if name == "usps784":
        tr, te = f"{d}/train", f"{d}/test"
        if not (os.path.exists(tr) and os.path.exists(te)):
            usps784(find("usps_esl.train.xz"), find("usps_esl.test.xz"), tr, te)
        return tr, te
    sys.exit(f"unknown set {name}")


def usps784(src_tr, src_te, tr, te):
    """usps's 16 × 16 images in [-1, 1] upsampled bilinearly to 28 × 28, mapped to [0, 1], and
    every pixel below the training images' 81st percentile set to 0: a wide digit set with
    MNIST's share of non-zeros (19 %), written as LIBSVM text."""
    import numpy as np

    def load(path):
        xs, ys = [], []
        with open_text(path) as f:
            for line in f:
                t = line.split()
                if not t:
                    continue
                v = np.zeros(256)
                for p in t[1:]:
                    k, x = p.split(":")
                    v[int(k) - 1] = float(x)
                xs.append(v)
                ys.append(t[0])
        return np.array(xs), ys

    src = np.linspace(0, 15, 28)
    i0 = np.floor(src).astype(int)
    i1 = np.minimum(i0 + 1, 15)
    w = src - i0

    def up(x):
        img = x.reshape(-1, 16, 16)
        a = img[:, i0, :] * (1 - w)[None, :, None] + img[:, i1, :] * w[None, :, None]
        b = a[:, :, i0] * (1 - w)[None, None, :] + a[:, :, i1] * w[None, None, :]
        return np.clip((b.reshape(-1, 784) + 1) / 2, 0, 1)

    (xtr, ytr), (xte, yte) = load(src_tr), load(src_te)
    xtr, xte = up(xtr), up(xte)
    cut = np.quantile(xtr, 0.81)
    for x, ys, dst in ((xtr, ytr, tr), (xte, yte, te)):
        x[x < cut] = 0
        with open(dst + ".part", "w") as o:
            for y, row in zip(ys, x):
                nz = np.nonzero(row)[0]
                o.write(y + "".join(f" {k + 1}:{row[k]:.6g}" for k in nz) + "\n")
        os.replace(dst + ".part", dst)


def seconds(s):
    """Seconds as the table prints them: three decimals below one second (pendigits' whole
    process is about 30 ms), two above."""
    return f"{s:.3f}" if s < 1 else f"{s:.2f}"


def labels(path):
    """The first column of a LIBSVM text file (or of a prediction file), as numbers."""
    with open_text(path) as f:
        return [float(l.split()[0]) for l in f if l.strip() and not l.lstrip().startswith("#")]


def accuracy(predicted, truth):
    """Per cent of rows whose predicted label is the true one (labels compared as numbers, so
    "1", "1.0" and "+1" agree; any labels, any number of classes)."""
    predicted, truth = list(predicted), list(truth)
    if len(predicted) != len(truth) or not truth:
        sys.exit(f"{len(predicted)} predictions for {len(truth)} test rows")
    return 100.0 * sum(float(p) == float(t) for p, t in zip(predicted, truth)) / len(truth)


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stderr}")
    return p


def fwsvm(train, test, c, gamma, extra):
    model = train + ".fwsvm.model"
    cmd = [FWSVM, "train", "-c", str(c), "-g", str(gamma)] + extra + [train, model]
    t0 = time.perf_counter()
    p = run(cmd)
    wall = time.perf_counter() - t0
    out = p.stdout + p.stderr
    pred = run([FWSVM, "predict", "-q", test, model, model + ".pred"])
    acc = accuracy(labels(model + ".pred"), labels(test))
    said = re.search(r"Accuracy = ([0-9.]+)%", pred.stdout)
    if said and abs(float(said.group(1)) - acc) > 0.01:
        sys.exit(f"fwsvm predict says {said.group(1)} %, its predictions against {test}'s labels give {acc:.4f} %")
    m = re.search(r": iterations (\d+), SVs (\d+),.*?, ([0-9.]+)s \(\+([0-9.]+)s certify\)", out)
    threads = re.search(r"cpu \((\d+) threads", out)
    return {
        "wall": wall,
        "solver": float(m.group(3)),
        "certify": float(m.group(4)),
        "iterations": int(m.group(1)),
        "svs": int(m.group(2)),
        "acc": acc,
        "threads": int(threads.group(1)) if threads else os.cpu_count(),
    }


def fwsvm_median(train, test, c, gamma, extra, repeats):
    """fwsvm's run of median wall time among `repeats` runs."""
    runs = sorted((fwsvm(train, test, c, gamma, extra) for _ in range(repeats)), key=lambda r: r["wall"])
    return runs[len(runs) // 2]


def libsvm(train, test, c, gamma):
    from libsvm.svmutil import svm_predict, svm_read_problem, svm_train

    y, x = svm_read_problem(train)
    yt, xt = svm_read_problem(test)
    from libsvm.svm import svm_parameter, svm_problem

    prob = svm_problem(y, x)
    param = svm_parameter(f"-s 0 -t 2 -c {c} -g {gamma} -m 1024 -e 0.001 -q")
    t0 = time.perf_counter()
    model = svm_train(prob, param)
    secs = time.perf_counter() - t0
    p_labels, _, _ = svm_predict(yt, xt, model, "-q")
    return {"secs": secs, "svs": model.get_nr_sv(), "acc": accuracy(p_labels, yt)}


def onedal(train, test, c, gamma):
    """sklearnex's SVC: (seconds of fit, SVs, test accuracy); None with a message when the
    package is missing or the fit did not run accelerated."""
    import logging

    try:
        from sklearnex.svm import SVC
    except ImportError:
        print("oneDAL: scikit-learn-intelex is not installed (pip install scikit-learn-intelex)", file=sys.stderr)
        return None
    from sklearn.datasets import load_svmlight_files

    X, y, Xt, yt = load_svmlight_files([train, test])
    X, Xt = X.toarray(), Xt.toarray()
    lines = []

    class Keep(logging.Handler):
        def emit(self, record):
            lines.append(record.getMessage())

    logger = logging.getLogger("sklearnex")
    keep = Keep()
    logger.addHandler(keep)
    old = logger.level
    logger.setLevel(logging.INFO)
    try:
        model = SVC(C=c, gamma=gamma, kernel="rbf", tol=1e-3, cache_size=1024)
        t0 = time.perf_counter()
        model.fit(X, y)
        secs = time.perf_counter() - t0
    finally:
        logger.removeHandler(keep)
        logger.setLevel(old)
    fit_lines = [l for l in lines if "fit" in l]
    if not any("running accelerated version" in l for l in fit_lines):
        print(f"oneDAL: the fit did not run accelerated ({fit_lines}); row left out", file=sys.stderr)
        return None
    acc = accuracy(model.predict(Xt), yt)
    return {"secs": secs, "svs": int(model.support_.shape[0]), "acc": acc}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default="ijcnn1,w8a,a9a,kdd99")
    ap.add_argument("--repeats", type=int, default=3, help="fwsvm runs per set (the median is kept)")
    ap.add_argument("--fwsvm-args", default="", help="extra fwsvm train flags")
    ap.add_argument("--out", default="bench-peers")
    ap.add_argument("--work", default=os.path.join(ROOT, "target", "peers-data"))
    ap.add_argument("--no-libsvm", action="store_true", help="no LIBSVM column")
    ap.add_argument("--no-onedal", action="store_true", help="no oneDAL column")
    ap.add_argument("--no-reference", action="store_true", help="no --rel-eps 0.01 accuracy")
    ap.add_argument("--dry-run", action="store_true", help="prepare the files and print each set's C and γ; train nothing")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    log = lambda *s: print(*s, file=sys.stderr, flush=True)
    omp = os.environ.get("OMP_NUM_THREADS", f"all {os.cpu_count()} cores (OpenMP default)")
    rows = []
    names = a.sets.split(",")
    unknown = [n for n in names if n not in SETS]
    if unknown:
        sys.exit(f"unknown set(s) {', '.join(unknown)}: choose from {', '.join(SETS)}")
    for name in names:
        c, gamma = SETS[name]
        train, test = prepare(name, a.work)
        if gamma == "scale":
            gamma = scale_gamma(train)
            log(f"{name}: γ = {gamma:g} (scikit-learn's 'scale' on {train}), the same for every tool")
        if a.dry_run:
            print(f"{name}: C {c:g}, γ {gamma!r}, training {train}, test {test}")
            continue
        f = fwsvm_median(train, test, c, gamma, a.fwsvm_args.split(), a.repeats)
        log(f"{name}: fwsvm {f['wall']:.2f} s wall ({f['solver']:.2f} + {f['certify']:.2f} certify), {f['acc']:.2f} %")
        l = None if a.no_libsvm else libsvm(train, test, c, gamma)
        if l:
            log(f"{name}: LIBSVM {l['secs']:.2f} s, {l['acc']:.2f} %")
        o = None if a.no_onedal else onedal(train, test, c, gamma)
        if o:
            log(f"{name}: oneDAL {o['secs']:.2f} s, {o['acc']:.2f} %")
        ref = None
        if not a.no_reference:
            ref = fwsvm(train, test, c, gamma, a.fwsvm_args.split() + ["--rel-eps", "0.01"])["acc"]
            log(f"{name}: fwsvm at --rel-eps 0.01: {ref:.3f} %")
        rows.append((name, c, gamma, f, l, o, ref))
    if a.dry_run:
        return
    dash = "–"
    head = "| set (C, γ) | fwsvm wall s (solver + certify), acc % | fwsvm at --rel-eps 0.01: acc % | LIBSVM: train s, acc % | oneDAL: train s, acc % | fastest other / fwsvm | fwsvm iterations, SVs | LIBSVM / oneDAL SVs |"
    version = run([FWSVM, "--version"]).stdout.strip()
    md = [
        f"{version}: fwsvm {' '.join(['train'] + a.fwsvm_args.split())} ({rows[0][3]['threads'] if rows else '?'} threads), whole process; LIBSVM libsvm-official svm_train alone ({omp}); oneDAL sklearnex SVC.fit alone.",
        "",
        head,
        "|---|---|---|---|---|---|---|---|",
    ]
    with open(os.path.join(a.out, "peers.csv"), "w", newline="") as fcsv:
        w = csv.writer(fcsv)
        w.writerow(["set", "C", "gamma", "fwsvm_wall_s", "fwsvm_solver_s", "fwsvm_certify_s", "fwsvm_iterations", "fwsvm_svs", "fwsvm_acc", "fwsvm_ref_acc", "libsvm_s", "libsvm_svs", "libsvm_acc", "onedal_s", "onedal_svs", "onedal_acc", "ratio"])
        for name, c, gamma, f, l, o, ref in rows:
            others = [t["secs"] for t in (l, o) if t]
            ratio = min(others) / f["wall"] if others else None
            tool = lambda t: f"{t['secs']:.2f}, {t['acc']:.2f}" if t else dash
            cells = [
                f"{name} ({c:g}, {gamma:g})",
                f"{seconds(f['wall'])} ({f['solver']:.2f} + {f['certify']:.2f}), {f['acc']:.2f}",
                f"{ref:.2f}" if ref is not None else dash,
                tool(l),
                tool(o),
                f"{ratio:.2f}×" if ratio else dash,
                f"{f['iterations']:,}, {f['svs']:,}",
                f"{l['svs'] if l else dash} / {o['svs'] if o else dash}",
            ]
            md.append("| " + " | ".join(cells) + " |")
            cell = lambda t, k: t[k] if t else ""
            w.writerow([name, c, gamma, f"{f['wall']:.3f}", f["solver"], f["certify"], f["iterations"], f["svs"], f["acc"], ref if ref is not None else "", cell(l, "secs"), cell(l, "svs"), cell(l, "acc"), cell(o, "secs"), cell(o, "svs"), cell(o, "acc"), f"{ratio:.3f}" if ratio else ""])
    text = "\n".join(md) + "\n"
    with open(os.path.join(a.out, "peers.md"), "w") as fmd:
        fmd.write(text)
    print(text)


if __name__ == "__main__":
    main()
