#!/usr/bin/env python3
"""Every algorithm on a9a, w8a (seeded 70/30), ijcnn1 and KDD99-binary: seconds, iterations,
SVs, certified gap and test accuracy, deterministic and sampled (`--sample 194`).

    python3 benches/algorithms.py [--work DIR] [--backend cpu] [--threads 1] \
        [--datasets a9a,w8a,ijcnn1,kdd99] [--algorithms fw,...] [--cap 300] [--sample-cap 120]

Data (made once in --work, default ./algorithms-work):
- a9a and ijcnn1: the training and test files of the workspace's shared datasets folder as
  they are;
- w8a: a seeded 70/30 split of w8a.xz (Python's random.Random(1) shuffle of the lines);
- KDD99-binary: `fwsvm convert kdd99` of the 10 % file (its own 80/20 split), then
  `fwsvm scale -l 0 -u 1` fitted on the training part.

Settings: ε = 1e-4, `--rel-eps 1`, γ auto, seed 1, C = 1 (a9a), 10 (w8a, KDD99), 100 (ijcnn1);
for simplesvm the same number is LIBSVM's C (a different problem; its ε bounds the KKT
violation). Every run gets `--time-limit` (--cap; --sample-cap for sampled runs) and the table
says where a run was stopped by it. Results are appended to DIR/results.jsonl as they come (a
second invocation skips what is there) and the Markdown table is printed at the end.
"""

import argparse
import json
import os
import random
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FWSVM = os.environ.get("FWSVM", os.path.join(HERE, "..", "target", "release", "fwsvm"))
SHARED = os.path.join(HERE, "..", "..", "shared", "datasets")

ALGORITHMS = ["fw", "mfw", "swap", "swap2", "partan", "cvm", "sparse-fw", "simplesvm"]
SAMPLED = {"fw", "mfw", "swap", "swap2", "partan", "cvm"}
C = {"a9a": 1, "w8a": 10, "ijcnn1": 100, "kdd99": 10}
NAMES = {"a9a": "a9a", "w8a": "w8a", "ijcnn1": "ijcnn1", "kdd99": "KDD99-binary"}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def fwsvm(*args):
    p = subprocess.run([FWSVM, *args], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"fwsvm {' '.join(args)} failed:\n{p.stderr}")
    return p


def prepare(name, work):
    """(train, test) paths of a dataset, made in `work` where needed."""
    if name == "a9a":
        return os.path.join(SHARED, "a9a.xz"), os.path.join(SHARED, "a9a.t.xz")
    if name == "ijcnn1":
        return os.path.join(SHARED, "ijcnn1.trn.bz2"), os.path.join(SHARED, "ijcnn1.tst.bz2")
    if name == "w8a":
        train, test = os.path.join(work, "w8a.train"), os.path.join(work, "w8a.test")
        if not os.path.exists(test):
            import lzma

            with lzma.open(os.path.join(SHARED, "w8a.xz"), "rt") as f:
                lines = [l for l in f if l.strip()]
            random.Random(1).shuffle(lines)
            cut = int(round(0.7 * len(lines)))
            with open(train, "w") as f:
                f.writelines(lines[:cut])
            with open(test + ".part", "w") as f:
                f.writelines(lines[cut:])
            os.replace(test + ".part", test)
        return train, test
    if name == "kdd99":
        train, test = os.path.join(work, "kdd99s.train"), os.path.join(work, "kdd99s.test")
        if not os.path.exists(test):
            raw = os.path.join(work, "kdd99")
            fwsvm("convert", "kdd99", os.path.join(SHARED, "kddcup.data_10_percent.gz"), raw)
            rng = os.path.join(work, "kdd99.range")
            fwsvm("scale", "-l", "0", "-u", "1", "-s", rng, raw + ".train", train)
            fwsvm("scale", "-r", rng, raw + ".test", test + ".part")
            os.replace(test + ".part", test)
        return train, test
    sys.exit(f"unknown dataset {name}")


LINE = re.compile(
    r": (?P<alg>[a-z0-9-]+): iterations (?P<it>\d+), SVs (?P<sv>\d+), certified "
    r"(?:gap|KKT violation) (?P<gap>\S+), objective (?P<f>\S+), (?P<s>[0-9.]+)s"
    r"(?: \(\+(?P<cs>[0-9.]+)s certify\))?, stop: (?P<stop>[^;]+)"
)


def run(dataset, alg, sample, args, work):
    train, test = prepare(dataset, work)
    model = os.path.join(work, "run.model")
    cap = args.sample_cap if sample else args.cap
    cmd = ["train", "--backend", args.backend, "--threads", str(args.threads), "-a", alg,
           "-c", str(C[dataset]), "--time-limit", str(cap), "--test", test]
    if sample:
        cmd += ["--sample", str(sample)]
    cmd += [train, model]
    t0 = time.perf_counter()
    p = fwsvm(*cmd)
    wall = time.perf_counter() - t0
    out = p.stdout + p.stderr
    m = LINE.search(out)
    if not m:
        sys.exit(f"cannot read the summary of fwsvm {' '.join(cmd)}:\n{out}")
    acc = re.search(r"Accuracy = ([0-9.]+)%", out)
    return {
        "dataset": dataset,
        "algorithm": alg,
        "sample": sample,
        "backend": args.backend,
        "threads": args.threads,
        "iterations": int(m["it"]),
        "svs": int(m["sv"]),
        "gap": float(m["gap"]),
        "seconds": float(m["s"]),
        "certify": float(m["cs"] or 0.0),
        "stop": m["stop"].strip(),
        "accuracy": float(acc.group(1)) if acc else None,
        "wall": wall,
        "command": "fwsvm " + " ".join(cmd).replace(work + "/", "").replace(SHARED, "../shared/datasets"),
    }


def key(r):
    return (r["dataset"], r["algorithm"], r["sample"], r["backend"], r["threads"])


def table(rows):
    out = [
        "| dataset | algorithm | mode | seconds (+certify) | iterations | SVs | certified gap | test acc. |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        mode = f"sampled {r['sample']}" if r["sample"] else "deterministic"
        secs = f"{r['seconds']:.1f} (+{r['certify']:.1f})"
        if "time limit" in r["stop"]:
            secs += " capped"
        out.append(
            f"| {NAMES[r['dataset']]} | {r['algorithm']} | {mode} | {secs} | {r['iterations']:,} | "
            f"{r['svs']:,} | {r['gap']:.2e} | {r['accuracy']:.2f} % |"
        )
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", default="algorithms-work")
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--datasets", default="w8a,ijcnn1,a9a,kdd99")
    ap.add_argument("--algorithms", default=",".join(ALGORITHMS))
    ap.add_argument("--sample", type=int, default=194)
    ap.add_argument("--cap", type=float, default=300)
    ap.add_argument("--sample-cap", type=float, default=120)
    ap.add_argument("--no-sampled", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    args.work = os.path.abspath(args.work)
    results = os.path.join(args.work, "results.jsonl")
    done = {}
    if os.path.exists(results):
        for l in open(results):
            r = json.loads(l)
            done[key(r)] = r
    rows = []
    for ds in args.datasets.split(","):
        for sample in [0] if args.no_sampled else [0, args.sample]:
            for alg in args.algorithms.split(","):
                if sample and alg not in SAMPLED:
                    continue
                k = (ds, alg, sample, args.backend, args.threads)
                if k not in done:
                    log(f"{ds} {alg} sample={sample} ...")
                    r = run(ds, alg, sample, args, args.work)
                    log(f"  {r['seconds']:.1f}s (+{r['certify']:.1f}) it {r['iterations']} SVs {r['svs']} "
                        f"gap {r['gap']:.2e} acc {r['accuracy']} [{r['stop']}]")
                    with open(results, "a") as f:
                        f.write(json.dumps(r) + "\n")
                    done[k] = r
                rows.append(done[k])
    print(table(rows))


if __name__ == "__main__":
    main()
