#!/usr/bin/env python3
"""fwsvm against LIBSVM and oneDAL on generated sets of the kinds `peers.py` measures but whose
files it does not name: a check that a speed or accuracy figure holds for a kind of problem,
not for one file.

    .venv/bin/python benches/heldout.py [--sets letter,digits,noisy8,noisy100,text]
        [--repeats 3] [--out bench-heldout] [--work target/heldout-data] [--no-libsvm]
        [--no-onedal]

Every set is made once from a fixed seed with scikit-learn (written as LIBSVM text files in
--work, then reused), and timed as `peers.py` times its sets: fwsvm's whole `fwsvm train`
process (the median of --repeats runs), LIBSVM's `svm_train` and oneDAL's `SVC.fit` alone, the
same C and γ for all three (γ scikit-learn's `scale`, computed once from the training file):

| set | kind | rows (train / test) × features, classes | C |
|---|---|---|---|
| letter | many classes, low-dimensional (as pendigits) | 15,000 / 5,000 × 16, 26; values on a 0..15 grid | 10 |
| digits | scikit-learn's 8 × 8 digit images, ten classes (as usps, but tiny) | 1,300 / 497 × 64, 10 | 10 |
| noisy8 | binary, 5 % flipped labels: most points support vectors (as covtype) | 60,000 / 20,000 × 8 | 1 |
| noisy100 | binary, dense, 10 % flipped labels (as covtype, wider rows) | 40,000 / 20,000 × 100 | 1 |
| text | binary, sparse (60 non-zeros of 20,000 features, rows of unit length; as w8a) | 20,000 / 10,000 | 10 |

Writes `heldout.md` and `heldout.csv` in --out and prints the table. The ratio is the faster
of LIBSVM and oneDAL over fwsvm's whole process.
"""

import argparse
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers  # noqa: E402  (beside this script: the timing and accuracy of each tool)

SETS = {"letter": 10.0, "digits": 10.0, "noisy8": 1.0, "noisy100": 1.0, "text": 10.0}


def make(name, work):
    """(training file, test file) of set `name`, generated into work/name once."""
    import numpy as np
    import scipy.sparse as sp
    from sklearn.datasets import dump_svmlight_file, load_digits, make_classification

    d = os.path.join(work, name)
    train, test = os.path.join(d, "train"), os.path.join(d, "test")
    if os.path.exists(train) and os.path.exists(test):
        return train, test
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(7)
    if name == "letter":
        X, y = make_classification(20000, 16, n_informative=12, n_redundant=2, n_classes=26,
                                   n_clusters_per_class=2, class_sep=2.0, random_state=3)
        X = np.round((X - X.min(0)) / (X.max(0) - X.min(0)) * 15)
        n = 15000
    elif name == "digits":
        dg = load_digits()
        p = rng.permutation(len(dg.target))
        X, y, n = dg.data[p] / 16.0, dg.target[p], 1300
    elif name == "noisy8":
        X, y = make_classification(80000, 8, n_informative=6, n_redundant=1, flip_y=0.05,
                                   class_sep=1.2, random_state=11)
        X, y, n = (X - X.min(0)) / (X.max(0) - X.min(0)) * 2 - 1, y * 2 - 1, 60000
    elif name == "noisy100":
        X, y = make_classification(60000, 100, n_informative=20, n_redundant=10, flip_y=0.1,
                                   class_sep=1.0, random_state=5)
        X, y, n = (X - X.min(0)) / (X.max(0) - X.min(0)), y * 2 - 1, 40000
    elif name == "text":
        rows, dim, nnz = 30000, 20000, 60
        r = np.repeat(np.arange(rows), nnz)
        c = rng.zipf(1.3, rows * nnz) % dim
        X = sp.csr_matrix((rng.random(rows * nnz), (r, c)), shape=(rows, dim))
        X.sum_duplicates()
        X = (sp.diags(1 / np.sqrt(X.multiply(X).sum(1).A1)) @ X).tocsr()
        s = X @ rng.standard_normal(dim)
        y = np.where(s + 0.3 * rng.standard_normal(rows) * s.std() > np.median(s), 1, -1)
        n = 20000
    else:
        sys.exit(f"unknown set {name}")
    for path, part in ((train, slice(0, n)), (test, slice(n, None))):
        dump_svmlight_file(X[part], y[part], path + ".part", zero_based=False)
        os.replace(path + ".part", path)
    return train, test


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default=",".join(SETS))
    ap.add_argument("--repeats", type=int, default=3, help="fwsvm runs per set (the median is kept)")
    ap.add_argument("--out", default="bench-heldout")
    ap.add_argument("--work", default=os.path.join(peers.ROOT, "target", "heldout-data"))
    ap.add_argument("--no-libsvm", action="store_true")
    ap.add_argument("--no-onedal", action="store_true")
    a = ap.parse_args()
    names = a.sets.split(",")
    unknown = [n for n in names if n not in SETS]
    if unknown:
        sys.exit(f"unknown set(s) {', '.join(unknown)}: choose from {', '.join(SETS)}")
    os.makedirs(a.out, exist_ok=True)
    log = lambda *s: print(*s, file=sys.stderr, flush=True)
    version = peers.run([peers.FWSVM, "--version"]).stdout.strip()
    md = [f"{version}: fwsvm train, whole process (median of {a.repeats}); LIBSVM svm_train and oneDAL SVC.fit alone.", "",
          "| set (C, γ) | fwsvm s (solver + certify), acc %, SVs | LIBSVM: s, acc %, SVs | oneDAL: s, acc %, SVs | fastest other / fwsvm |",
          "|---|---|---|---|---|"]
    with open(os.path.join(a.out, "heldout.csv"), "w", newline="") as fcsv:
        w = csv.writer(fcsv)
        w.writerow(["set", "C", "gamma", "fwsvm_wall_s", "fwsvm_solver_s", "fwsvm_certify_s", "fwsvm_svs", "fwsvm_acc",
                    "libsvm_s", "libsvm_svs", "libsvm_acc", "onedal_s", "onedal_svs", "onedal_acc", "ratio"])
        for name in names:
            c = SETS[name]
            train, test = make(name, a.work)
            gamma = peers.scale_gamma(train)
            f = peers.fwsvm_median(train, test, c, gamma, [], a.repeats)
            log(f"{name}: fwsvm {f['wall']:.3f} s, {f['acc']:.2f} %")
            l = None if a.no_libsvm else peers.libsvm(train, test, c, gamma)
            o = None if a.no_onedal else peers.onedal(train, test, c, gamma)
            others = [t["secs"] for t in (l, o) if t]
            ratio = min(others) / f["wall"] if others else None
            tool = lambda t: f"{peers.seconds(t['secs'])}, {t['acc']:.2f}, {t['svs']:,}" if t else "–"
            md.append(f"| {name} ({c:g}, {gamma:g}) | {peers.seconds(f['wall'])} ({f['solver']:.2f} + {f['certify']:.2f}), "
                      f"{f['acc']:.2f}, {f['svs']:,} | {tool(l)} | {tool(o)} | {f'{ratio:.2f}×' if ratio else '–'} |")
            cell = lambda t, k: t[k] if t else ""
            w.writerow([name, c, gamma, f"{f['wall']:.3f}", f["solver"], f["certify"], f["svs"], f["acc"],
                        cell(l, "secs"), cell(l, "svs"), cell(l, "acc"), cell(o, "secs"), cell(o, "svs"), cell(o, "acc"),
                        f"{ratio:.3f}" if ratio else ""])
    with open(os.path.join(a.out, "heldout.md"), "w") as fmd:
        fmd.write("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
