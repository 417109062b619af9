#!/usr/bin/env python3
"""fwsvm.SVC against scikit-learn's SVC, and the Python layer against the command line.

    .venv/bin/python benches/python_vs_sklearn.py [--sets ijcnn1,a9a] [--repeats 3]
        [--no-sklearn] [--out bench-python]

Per set (the performance table's C and RBF γ; ijcnn1's files from the workspace's shared
datasets folder, a9a's from data/), on the same machine in one run:

* ``fwsvm.SVC(C, gamma).fit(X, y)`` on data already in memory (``fwsvm.load_svmlight``),
  wall seconds around ``fit`` (median of --repeats), every core (n_jobs=None), and inside
  it the library's own training time (``_native.seconds``: device, solve, certification),
  so that the Python layer's cost (validation, the copy into the library, the fitted
  attributes) is ``fit − library``;
* ``sklearn.svm.SVC(C, gamma, tol=1e-3, cache_size=1024).fit(X, y)`` on the same arrays:
  scikit-learn's LIBSVM has no threads, so it uses one core whatever the machine has;
* ``fwsvm train`` (the CLI, same C and γ) on the same file as a whole process, wall
  seconds (median of --repeats), and its own solver + certification seconds.

Test accuracy of each from its test file. Writes ``python.md`` in --out and prints it.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

import fwsvm

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
FWSVM = os.environ.get("FWSVM", os.path.join(ROOT, "target", "release", "fwsvm"))
SHARED = os.environ.get("FWSVM_DATASETS") or os.path.join(ROOT, "..", "shared", "datasets")

SETS = {
    "ijcnn1": (10.0, 0.386059, "ijcnn1.trn.bz2", "ijcnn1.tst.bz2"),
    "a9a": (1.0, 0.064882, "a9a.xz", "a9a.t.xz"),
}


def find(name):
    for base in (os.path.join(ROOT, "data"), SHARED):
        p = os.path.join(base, name)
        if os.path.exists(p):
            return p
    sys.exit(f"{name} is in neither data/ nor {SHARED}")


def median(xs):
    return sorted(xs)[len(xs) // 2]


def time_fwsvm(X, y, Xt, yt, c, gamma, repeats):
    walls, inside, clf = [], [], None
    for _ in range(repeats):
        clf = fwsvm.SVC(C=c, gamma=gamma)
        t0 = time.perf_counter()
        clf.fit(X, y)
        walls.append(time.perf_counter() - t0)
        inside.append(clf._native.seconds)
    i = walls.index(median(walls))
    return {"wall": walls[i], "library": inside[i], "acc": 100 * clf.score(Xt, yt),
            "svs": int(clf.n_support_.sum()), "device": clf.device_}


def time_sklearn(X, y, Xt, yt, c, gamma):
    from sklearn.svm import SVC

    clf = SVC(C=c, gamma=gamma, tol=1e-3, cache_size=1024)
    t0 = time.perf_counter()
    clf.fit(X, y)
    secs = time.perf_counter() - t0
    return {"secs": secs, "acc": 100 * clf.score(Xt, yt), "svs": int(clf.n_support_.sum())}


def time_cli(path, c, gamma, repeats):
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "m.model")
        for _ in range(repeats):
            t0 = time.perf_counter()
            p = subprocess.run([FWSVM, "train", "-c", str(c), "-g", str(gamma), path, model],
                               capture_output=True, text=True)
            wall = time.perf_counter() - t0
            if p.returncode != 0:
                sys.exit(p.stderr)
            m = re.search(r", ([0-9.]+)s \(\+([0-9.]+)s certify\)", p.stderr)
            runs.append((wall, float(m.group(1)) + float(m.group(2))))
    wall, solve = sorted(runs)[len(runs) // 2]
    return {"wall": wall, "solve": solve}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default="ijcnn1,a9a")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-sklearn", action="store_true")
    ap.add_argument("--out", default="bench-python")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    log = lambda *s: print(*s, file=sys.stderr, flush=True)
    rows = []
    for name in a.sets.split(","):
        c, gamma, tr, te = SETS[name]
        X, y = fwsvm.load_svmlight(find(tr))
        Xt, yt = fwsvm.load_svmlight(find(te), n_features=X.shape[1])
        f = time_fwsvm(X, y, Xt, yt, c, gamma, a.repeats)
        log(f"{name}: fwsvm.SVC.fit {f['wall']:.2f} s (library {f['library']:.2f} s), "
            f"{f['acc']:.2f} %")
        cli = time_cli(find(tr), c, gamma, a.repeats)
        log(f"{name}: fwsvm train {cli['wall']:.2f} s (solve + certify {cli['solve']:.2f} s)")
        s = None if a.no_sklearn else time_sklearn(X, y, Xt, yt, c, gamma)
        if s:
            log(f"{name}: sklearn SVC.fit {s['secs']:.2f} s, {s['acc']:.2f} %")
        rows.append((name, c, gamma, f, cli, s))
    md = [
        f"fwsvm.SVC.fit on every core ({os.cpu_count()} threads, {rows[0][3]['device']}); "
        "scikit-learn's SVC (LIBSVM, one thread: it has no others); the CLI as a whole "
        f"process. fwsvm {fwsvm.__version__}, median of {a.repeats}.",
        "",
        "| set (C, γ) | fwsvm.SVC.fit s | of which the library | Python layer | CLI `fwsvm train` s (solve + certify) | sklearn SVC.fit s | ratio | accuracy fwsvm / sklearn | SVs fwsvm / sklearn |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, c, gamma, f, cli, s in rows:
        layer = f["wall"] - f["library"]
        md.append("| " + " | ".join([
            f"{name} ({c:g}, {gamma:g})",
            f"{f['wall']:.2f}",
            f"{f['library']:.2f}",
            f"{layer:.3f} s ({100 * layer / f['library']:.1f} %)",
            f"{cli['wall']:.2f} ({cli['solve']:.2f})",
            f"{s['secs']:.2f}" if s else "–",
            f"{s['secs'] / f['wall']:.1f}×" if s else "–",
            f"{f['acc']:.2f} / {s['acc']:.2f}" if s else f"{f['acc']:.2f} / –",
            f"{f['svs']:,} / {s['svs']:,}" if s else f"{f['svs']:,} / –",
        ]) + " |")
    text = "\n".join(md) + "\n"
    with open(os.path.join(a.out, "python.md"), "w") as fmd:
        fmd.write(text)
    print(text)


if __name__ == "__main__":
    main()
