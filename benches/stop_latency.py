#!/usr/bin/env python3
"""How promptly `fwsvm train` stops with a usable model: under `--time-limit`, and after SIGTERM
or SIGINT at chosen moments of the same run.

    .venv/bin/python benches/stop_latency.py [--set covtype] [--time-limit 60]
        [--signals 5,20,40,55] [--default-runs] [-c 1] [-g auto] [--out DIR]
        [--work target/peers-data]

The data are the sets of `benches/peers.py` (covtype: the shared folder's split, 464,810
training and 116,202 test rows), made once in --work. Three kinds of run, one after the other:

* `fwsvm train --time-limit T`: its wall time (reading, training, writing the model) against
  T, what its summary says of certification, and the model's test accuracy (`fwsvm predict`);
* for each moment t of --signals: the same run (with `--default-runs`, a run without the time
  limit), SIGTERM at t seconds (SIGINT for every second moment); the seconds from the signal to
  the process's exit, its exit code, whether the model was written and what the summary says
  of certification;
* the accuracy of the model the last signalled run wrote.

Prints a Markdown table and writes it, with each run's stderr, to --out (default
target/stop-latency-<set>). Exits 1 if a run did not write a model or exited with an
unexpected code, so that the numbers printed are those of runs that worked.
"""

import argparse
import os
import re
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from peers import FWSVM, ROOT, SETS, accuracy, labels, prepare, run  # noqa: E402


def certification(stderr):
    """What the summary says: 'certified <gap>' or 'not certified (...)'."""
    for line in stderr.splitlines():
        if "certified gap " in line:
            rest = line.split("certified gap ", 1)[1]
            token = rest.split()[0].rstrip(",")
            if token.startswith("none"):
                why = re.search(r"NOT CERTIFIED, (last (?:gap )?estimate [0-9.e+-]+(?: \([0-9.]+ % of 2f\))?"
                                r"|no gap estimate[^,]*)", rest)
                return f"not certified ({why.group(1)})" if why else "not certified"
            return f"certified, gap {token}"
    return "no summary"


def test_accuracy(model, test):
    pred = model + ".pred"
    run([FWSVM, "predict", "-q", test, model, pred])
    return accuracy(labels(pred), labels(test))


def timed_run(args, train, model, log):
    """The time-limited run: (wall seconds, stderr)."""
    cmd = [FWSVM, "train", "-c", str(args.c), "-g", str(args.g),
           "--time-limit", str(args.time_limit), train, model]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    with open(log, "w") as f:
        f.write(p.stderr)
    if p.returncode != 0 or not os.path.exists(model):
        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}, model written: {os.path.exists(model)}\n{p.stderr}")
    return wall, p.stderr


def signalled_run(args, train, model, at, sig, log):
    """A run signalled `at` seconds after its start (time-limited as the first, or a default
    run): (seconds from the signal to the exit, exit code, stderr)."""
    if os.path.exists(model):
        os.remove(model)
    cmd = [FWSVM, "train", "-c", str(args.c), "-g", str(args.g)]
    if not args.default_runs:
        cmd += ["--time-limit", str(args.time_limit)]
    cmd += [train, model]
    with open(log, "w") as err:
        child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        try:
            child.wait(timeout=at)
            sys.exit(f"the run ended {at} s in, before its signal: choose earlier moments")
        except subprocess.TimeoutExpired:
            pass
        t0 = time.perf_counter()
        child.send_signal(sig)
        code = child.wait()
        after = time.perf_counter() - t0
    with open(log) as f:
        text = f.read()
    return after, code, text


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", default="covtype", choices=sorted(SETS))
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--signals", default="5,20,40,55", help="seconds after the start of each signalled run")
    ap.add_argument("--default-runs", action="store_true",
                    help="signal runs without the time limit instead of time-limited ones")
    ap.add_argument("-c", type=float, default=1.0)
    ap.add_argument("-g", default="auto", help="RBF γ (fwsvm's -g; default auto)")
    ap.add_argument("--work", default=os.path.join(ROOT, "target", "peers-data"))
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    out = args.out or os.path.join(ROOT, "target", f"stop-latency-{args.set}")
    os.makedirs(out, exist_ok=True)
    train, test = prepare(args.set, args.work)
    moments = [float(t) for t in args.signals.split(",") if t.strip()]

    rows = []
    model = os.path.join(out, "limit.model")
    wall, err = timed_run(args, train, model, os.path.join(out, "limit.stderr"))
    acc = test_accuracy(model, test)
    rows.append((f"`--time-limit {args.time_limit:g}`", f"{wall:.1f} s wall ({wall - args.time_limit:+.1f} s past T)",
                 "0", certification(err), f"{acc:.2f} %"))
    print(rows[-1], file=sys.stderr, flush=True)

    failed = False
    last_model = None
    for k, at in enumerate(moments):
        sig = signal.SIGINT if k % 2 else signal.SIGTERM
        name = "SIGINT" if sig == signal.SIGINT else "SIGTERM"
        model = os.path.join(out, f"signal{k}.model")
        after, code, err = signalled_run(args, train, model, at, sig,
                                         os.path.join(out, f"signal{k}.stderr"))
        written = os.path.exists(model)
        want = 130 if sig == signal.SIGINT else 143
        failed |= not written or code != want
        rows.append((f"{name} at {at:g} s", f"exit {after:.2f} s after the signal",
                     str(code), certification(err) if written else "NO MODEL WRITTEN", ""))
        print(rows[-1], file=sys.stderr, flush=True)
        if written:
            last_model = (k, model)
    if last_model:
        k, model = last_model
        acc = test_accuracy(model, test)
        r = rows[1 + k]
        rows[1 + k] = r[:4] + (f"{acc:.2f} %",)

    signalled = "default runs" if args.default_runs else f"runs with --time-limit {args.time_limit:g}"
    table = [f"fwsvm train on {args.set} ({os.path.basename(train)}), C = {args.c:g}, γ {args.g}; "
             f"{os.cpu_count()} CPUs; signals sent to {signalled}",
             "",
             "| run | when it ended | exit code | the summary says | test accuracy |",
             "|---|---|---|---|---|"]
    table += ["| " + " | ".join(r) + " |" for r in rows]
    text = "\n".join(table) + "\n"
    with open(os.path.join(out, "stop-latency.md"), "w") as f:
        f.write(text)
    print(text)
    if failed:
        sys.exit("a signalled run did not write its model or exited with another code")


if __name__ == "__main__":
    main()
