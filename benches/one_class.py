#!/usr/bin/env python3
"""One-class novelty detection on KDD99-binary: fwsvm -s 2 against LIBSVM's one-class SVM.

Both train on the normal (+1) rows of the training split only (labels ignored) at the same RBF
gamma, and are scored on the test split: detection rate = attacks (-1) flagged -1, false-alarm
rate = normal rows flagged -1. fwsvm's model is the smallest ball (C sets how many training
points may fall outside); LIBSVM's is Schölkopf's one-class SVM, whose nu bounds that fraction:
"matching settings" here means nu = the fraction of training rows fwsvm's model leaves outside.
Both run on all cores; fwsvm is timed as the whole `fwsvm train` process, LIBSVM as svm_train
alone (problem built before the clock).

usage: benches/one_class.py [--work target/peers-data/kdd99] [--c 1] [--gamma 0.232]
The work directory must hold train.scaled and test.scaled (benches/peers.py makes them).
"""
import argparse
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read(path):
    ys, xs = [], []
    with open(path) as f:
        for line in f:
            t = line.split()
            if not t:
                continue
            ys.append(float(t[0]))
            xs.append({int(k): float(v) for k, v in (p.split(":") for p in t[1:])})
    return ys, xs


def rates(truth, pred):
    normal = [p for t, p in zip(truth, pred) if t > 0]
    attack = [p for t, p in zip(truth, pred) if t <= 0]
    fa = sum(1 for p in normal if p < 0) / len(normal)
    det = sum(1 for p in attack if p < 0) / len(attack)
    return det, fa


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", default=os.path.join(ROOT, "target", "peers-data", "kdd99"))
    ap.add_argument("--c", default="1")
    ap.add_argument("--gamma", default="0.232")
    ap.add_argument("--fwsvm", default=os.path.join(ROOT, "target", "release", "fwsvm"))
    a = ap.parse_args()
    train, test = os.path.join(a.work, "train.scaled"), os.path.join(a.work, "test.scaled")
    normal = os.path.join(a.work, "normal.train")
    with open(train) as f, open(normal, "w") as out:
        for line in f:
            if line.split(" ", 1)[0] in ("1", "+1"):
                out.write(line)
    model = os.path.join(a.work, "normal.fwsvm.model")
    t0 = time.perf_counter()
    subprocess.run([a.fwsvm, "train", "-s", "2", "-c", a.c, "-g", a.gamma, "-q", normal, model],
                   check=True)
    fw_s = time.perf_counter() - t0
    out_tr, out_te = model + ".train.pred", model + ".test.pred"
    for data, out in ((normal, out_tr), (test, out_te)):
        subprocess.run([a.fwsvm, "predict", "-q", data, model, out], check=True,
                       stdout=subprocess.DEVNULL)
    ny, nx = read(normal)
    ty, tx = read(test)
    fw_tr = [float(l) for l in open(out_tr)]
    fw_te = [float(l) for l in open(out_te)]
    outside = sum(1 for p in fw_tr if p < 0) / len(fw_tr)
    fw_det, fw_fa = rates(ty, fw_te)
    fw_sv = int(next(l.split()[1] for l in open(model) if l.startswith("total_sv")))

    from libsvm.svmutil import svm_predict, svm_problem, svm_parameter, svm_train
    nu = max(outside, 1e-4)
    prob = svm_problem(ny, nx)
    param = svm_parameter(f"-s 2 -t 2 -n {nu:.6g} -g {a.gamma} -m 1024 -e 0.001 -q")
    t0 = time.perf_counter()
    lm = svm_train(prob, param)
    lib_s = time.perf_counter() - t0
    lib_tr, _, _ = svm_predict(ny, nx, lm, "-q")
    lib_te, _, _ = svm_predict(ty, tx, lm, "-q")
    lib_outside = sum(1 for p in lib_tr if p < 0) / len(lib_tr)
    lib_det, lib_fa = rates(ty, lib_te)
    threads = os.cpu_count()
    print(f"KDD99-binary one-class: {len(ny)} normal training rows, {len(ty)} test rows "
          f"({sum(1 for y in ty if y > 0)} normal, {sum(1 for y in ty if y <= 0)} attacks), "
          f"gamma {a.gamma}, {threads} cores")
    print()
    print("| tool (setting) | train s | SVs | training rows outside | detection | false alarms |")
    print("|---|---|---|---|---|---|")
    print(f"| fwsvm -s 2 (C = {a.c}) | {fw_s:.2f} | {fw_sv} | {100 * outside:.2f} % | "
          f"{100 * fw_det:.2f} % | {100 * fw_fa:.2f} % |")
    print(f"| LIBSVM -s 2 (nu = {nu:.4g}) | {lib_s:.2f} | {lm.get_nr_sv()} | "
          f"{100 * lib_outside:.2f} % | {100 * lib_det:.2f} % | {100 * lib_fa:.2f} % |")


if __name__ == "__main__":
    sys.exit(main())
