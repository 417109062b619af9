#!/usr/bin/env python3
"""Load a model with LIBSVM (libsvm-official) and predict a data file with it.

usage: libsvm_predict.py MODEL DATA OUT [-b 1]
DATA may be plain, .gz, .bz2 or .xz LIBSVM text. Writes one predicted label per line to OUT;
with -b 1, svm-predict's probability output: a `labels …` line, then each label with one
probability per class (repr precision).
"""
import bz2
import gzip
import lzma
import sys

from libsvm.svmutil import svm_load_model, svm_predict


def open_any(path):
    with open(path, "rb") as f:
        head = f.read(6)
    if head[:2] == b"\x1f\x8b":
        return gzip.open(path, "rt")
    if head[:3] == b"BZh":
        return bz2.open(path, "rt")
    if head == b"\xfd7zXZ\x00":
        return lzma.open(path, "rt")
    return open(path, "rt")


def read_problem(path):
    ys, xs = [], []
    with open_any(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            ys.append(float(parts[0]))
            xs.append({int(k): float(v) for k, v in (t.split(":") for t in parts[1:])})
    return ys, xs


def main():
    model_path, data_path, out_path = sys.argv[1:4]
    proba = sys.argv[4:6] == ["-b", "1"]
    model = svm_load_model(model_path)
    if model is None:
        sys.exit(f"LIBSVM could not load {model_path}")
    ys, xs = read_problem(data_path)
    labels, _, probs = svm_predict(ys, xs, model, "-b 1 -q" if proba else "-q")
    with open(out_path, "w") as f:
        if proba:
            f.write("labels " + " ".join(f"{l:g}" for l in model.get_labels()) + "\n")
            for v, p in zip(labels, probs):
                f.write(f"{v:g} " + " ".join(repr(x) for x in p) + "\n")
            return
        for v in labels:
            f.write(f"{v:g}\n")


if __name__ == "__main__":
    main()
