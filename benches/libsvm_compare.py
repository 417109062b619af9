#!/usr/bin/env python3
"""fwsvm against LIBSVM (libsvm-official, C-SVC) on the same files, γ and validation split.

    .venv/bin/python benches/libsvm_compare.py --name a9a \
        --train ../shared/datasets/a9a.xz --test ../shared/datasets/a9a.t.xz \
        --fwsvm-c 0.1,1,10,100 --libsvm-c 0.1,1,10,100 [--fwsvm-args "-a partan"] [--libsvm-cap 600]

What it does, in order:
1. γ: fwsvm's `--gamma auto` on the full training file (read back from the model), then used
   by both tools everywhere (so the comparison is at the same kernel).
2. C for each tool: a seeded 70/30 split of the training file (Python's random.Random(seed)
   shuffle of the lines); each candidate C is trained on the 70 % and scored on the 30 %; the
   best validation accuracy wins (ties: the smaller C, the cheaper model).
3. Both tools trained on the full training file at their chosen C and scored on the test file.
   LIBSVM time = svm_train alone (data already in memory), `-m 1024` like fwsvm's default
   cache, its default eps 1e-3. fwsvm time = the solver seconds it reports plus the exact
   certification it always runs (parsing excluded on both sides); its wall time is shown too.
4. One Markdown row per tool, and the ratios, on stdout.

--libsvm-cap S stops a LIBSVM run after S seconds (it runs in a child process) and reports
the cap instead of a figure.
"""

import argparse
import bz2
import gzip
import lzma
import multiprocessing as mp
import os
import random
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FWSVM = os.environ.get("FWSVM", os.path.join(HERE, "..", "target", "release", "fwsvm"))


def open_text(path):
    with open(path, "rb") as f:
        magic = f.read(6)
    if magic.startswith(b"\x1f\x8b"):
        return gzip.open(path, "rt")
    if magic.startswith(b"BZh"):
        return bz2.open(path, "rt")
    if magic.startswith(b"\xfd7zXZ"):
        return lzma.open(path, "rt")
    return open(path)


def read_lines(path):
    with open_text(path) as f:
        return [l for l in f if l.strip() and not l.lstrip().startswith("#")]


def write_lines(path, lines):
    with open(path, "w") as f:
        f.writelines(lines)


def run_fwsvm(train, test, c, gamma, extra, workdir):
    model = os.path.join(workdir, "fw.model")
    cmd = [FWSVM, "train", "-c", str(c), "-g", str(gamma), "--test", test] + extra + [train, model]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"fwsvm failed ({' '.join(cmd)}):\n{p.stderr}")
    out = p.stdout + p.stderr
    acc = float(re.search(r"Accuracy = ([0-9.]+)%", out).group(1))
    m = re.search(r"SVs (\d+),.*?, ([0-9.]+)s(?: \(\+([0-9.]+)s certify\))?, stop", out)
    svs, secs = int(m.group(1)), float(m.group(2)) + float(m.group(3) or 0.0)
    return {"acc": acc, "svs": svs, "secs": secs, "wall": wall}


def _libsvm_child(train, test, c, gamma, q):
    from libsvm.svmutil import svm_read_problem, svm_train, svm_predict

    y, x = svm_read_problem(train)
    yt, xt = svm_read_problem(test)
    t0 = time.perf_counter()
    model = svm_train(y, x, f"-s 0 -t 2 -c {c} -g {gamma} -m 1024 -q")
    secs = time.perf_counter() - t0
    _, (acc, _, _), _ = svm_predict(yt, xt, model, "-q")
    q.put({"acc": acc, "svs": model.get_nr_sv(), "secs": secs, "wall": secs})


def run_libsvm(train, test, c, gamma, cap):
    q = mp.Queue()
    p = mp.Process(target=_libsvm_child, args=(train, test, c, gamma, q))
    p.start()
    p.join(cap)
    if p.is_alive():
        p.kill()
        p.join()
        return None
    return q.get()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--name", required=True)
    ap.add_argument("--train", required=True)
    ap.add_argument("--test", required=True)
    ap.add_argument("--fwsvm-c", default="0.1,1,10,100")
    ap.add_argument("--libsvm-c", default="0.1,1,10,100")
    ap.add_argument("--fwsvm-args", default="", help="extra fwsvm train flags, e.g. '-a swap'")
    ap.add_argument("--gamma", help="γ for both tools (default: fwsvm's auto)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--libsvm-cap", type=float, default=1800.0, help="seconds per LIBSVM run")
    a = ap.parse_args()
    extra = a.fwsvm_args.split()
    work = tempfile.mkdtemp(prefix="fwsvm-cmp-")
    log = lambda *s: print(*s, file=sys.stderr, flush=True)

    lines = read_lines(a.train)
    full_train = os.path.join(work, "train")
    write_lines(full_train, lines)
    test = os.path.join(work, "test")
    write_lines(test, read_lines(a.test))
    if a.gamma is None:
        model = os.path.join(work, "gamma.model")
        subprocess.run([FWSVM, "train", "-q", "--max-iter", "1", "--no-certify", full_train, model], check=True)
        gamma = next(l.split()[1] for l in open(model) if l.startswith("gamma "))
    else:
        gamma = a.gamma
    log(f"{a.name}: {len(lines)} training rows, gamma {gamma}")

    shuffled = lines[:]
    random.Random(a.seed).shuffle(shuffled)
    cut = int(round(0.7 * len(shuffled)))
    fit, val = os.path.join(work, "fit"), os.path.join(work, "val")
    write_lines(fit, shuffled[:cut])
    write_lines(val, shuffled[cut:])

    chosen = {}
    for tool, grid in (("fwsvm", a.fwsvm_c), ("libsvm", a.libsvm_c)):
        best = None
        for c in [float(v) for v in grid.split(",")]:
            r = run_fwsvm(fit, val, c, gamma, extra, work) if tool == "fwsvm" else run_libsvm(fit, val, c, gamma, a.libsvm_cap)
            if r is None:
                log(f"  {tool} C={c:g}: over the {a.libsvm_cap:g} s cap on the 70 % split")
                continue
            log(f"  {tool} C={c:g}: validation {r['acc']:.3f}% ({r['secs']:.1f} s, {r['svs']} SVs)")
            if best is None or r["acc"] > best[1]:
                best = (c, r["acc"])
        chosen[tool] = best[0]

    rf = run_fwsvm(full_train, test, chosen["fwsvm"], gamma, extra, work)
    rl = run_libsvm(full_train, test, chosen["libsvm"], gamma, a.libsvm_cap)
    print(f"| dataset | tool | C (validated) | seconds | SVs | test accuracy |")
    print(f"|---|---|---|---|---|---|")
    flags = (" " + a.fwsvm_args) if a.fwsvm_args else ""
    print(f"| {a.name} | fwsvm{flags} | {chosen['fwsvm']:g} | {rf['secs']:.2f} (wall {rf['wall']:.2f}) | {rf['svs']} | {rf['acc']:.3f}% |")
    if rl is None:
        print(f"| {a.name} | LIBSVM | {chosen['libsvm']:g} | > {a.libsvm_cap:g} (capped) | – | – |")
    else:
        print(f"| {a.name} | LIBSVM | {chosen['libsvm']:g} | {rl['secs']:.2f} | {rl['svs']} | {rl['acc']:.3f}% |")
        print(f"\nspeed-up {rl['secs'] / rf['secs']:.2f}x, accuracy difference {rf['acc'] - rl['acc']:+.3f} pt, gamma {gamma}")


if __name__ == "__main__":
    main()
