#!/usr/bin/env python3
"""One prepared measurement of fwsvm on a GPU machine: the body of benches/gpu-device.sh.

Runs, in order of importance, within a time budget (steps that no longer fit are recorded as
skipped, never silently dropped):

  1. `fwsvm info`;
  2. `fwsvm bench kernels --backend both`: dense d = 38 and CSR d = 123 at 11 % non-zeros, single
     and batched columns, the cached-column iteration and the submit-and-read-back round trip,
     against the device-to-device copy bandwidth measured by the tool;
  3. training with `--backend gpu` and `--backend cpu` (all cores) on KDD99-binary, a9a, covtype
     (the shared folder's covtype_split.py: 464,810 training rows scaled to [0, 1], gamma
     scikit-learn's 'scale') and the generated checkerboard (10^6 and 4*10^6 rows), with the
     working-set solver (on the GPU both with its outer iterations on the device,
     `--gpu-loop device`, and driven by the host, `--gpu-loop host`) and PARTAN: seconds,
     iterations, round trips per iteration, test accuracy, GPU/CPU label agreement;
  4. `fwsvm check` on KDD99 in f32 and f64;
  5. ThunderSVM's CUDA build (built in the background from the start of the run) and
     scikit-learn's SVC at the same C and gamma.

Writes table.md, results.json and log.txt to $OUT (default target/gpu-device) and prints the
table last. Standard library only; scikit-learn is used when importable.

    benches/gpu-device.sh [--quick] [--budget SECONDS] [--steps kernels-gpu,train,...]
                          [--train-limit SECONDS] [--sets kdd99,a9a,...] [--baseline BIN]
                          [--ws-sizes 256,1024]

`--steps` picks a subset (a second run on the same day that measures one change, say) and
`--sets` the training sets. `--baseline BIN` also trains every set's working-set run on the GPU
with another fwsvm binary (the build before a change, carried beside the new one), so the two
are compared on the same machine; `--ws-sizes` adds GPU runs with those `--ws-size`.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (C, gamma) per set: the values of README's peers table and the KDD section; the checkerboard
# at C = 1000, gamma = 1 (few support vectors per row, so the large sets finish).
STEPS = ("kernels-gpu", "kernels-cpu", "train", "partan", "check", "peers", "mpi")

PARAMS = {
    "kdd99": (100.0, 0.232),
    "a9a": (1.0, 0.064882),
    "covtype": (1.0, "scale"),
    "cb1m": (1000.0, 1.0),
    "cb4m": (1000.0, 1.0),
}


class Run:
    def __init__(self, out, budget):
        self.out = out
        self.t0 = time.monotonic()
        self.budget = budget
        self.log = open(os.path.join(out, "log.txt"), "w")
        self.results = {"steps": [], "skipped": []}

    def left(self):
        return self.budget - (time.monotonic() - self.t0)

    def sh(self, cmd, timeout=None, env=None):
        """Runs cmd (a list); returns (rc, combined output, seconds). Logs everything."""
        t = time.monotonic()
        self.log.write(f"\n$ {' '.join(cmd)}\n")
        self.log.flush()
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, timeout=timeout, env=env)
            rc, text = p.returncode, p.stdout
        except subprocess.TimeoutExpired as e:
            rc = 124
            text = (e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or ""))
            text += f"\n[killed after {timeout} s]"
        except FileNotFoundError as e:
            rc, text = 127, str(e)
        dt = time.monotonic() - t
        self.log.write(text)
        self.log.write(f"[rc {rc}, {dt:.2f} s]\n")
        self.log.flush()
        return rc, text, dt

    def fits(self, name, need):
        if self.left() < need:
            self.results["skipped"].append(f"{name}: {need:.0f} s needed, {self.left():.0f} s left")
            print(f"[skip] {name}", flush=True)
            return False
        print(f"[{time.monotonic() - self.t0:6.1f} s] {name}", flush=True)
        return True


def find_data(name):
    for d in [os.environ.get("FWSVM_DATASETS", ""), os.path.join(ROOT, ".devcarry"),
              os.path.join(ROOT, "data"), os.path.join(ROOT, "..", "shared", "datasets")]:
        if d and os.path.exists(os.path.join(d, name)):
            return os.path.join(d, name)
    return None


def parse_train(text):
    r = {}
    m = re.search(r": (\w[\w-]*): iterations (\d+), SVs (\d+), certified gap ([\d.e+-]+|n/a)"
                  r".*?, objective ([\d.e+-]+), ([\d.]+)s.*?stop: ([^;(]+)", text)
    if m:
        r.update(algorithm=m.group(1), iterations=int(m.group(2)), svs=int(m.group(3)),
                 gap=m.group(4), objective=float(m.group(5)), solver_s=float(m.group(6)),
                 stop=m.group(7).strip())
    m = re.search(r"device traffic per iteration: ([\d.]+) round trips, ([\d.]+) submits, "
                  r"([\d.]+) dispatches, (\d+) B up, (\d+) B down", text)
    if m:
        r.update(round_trips_per_iter=float(m.group(1)), submits_per_iter=float(m.group(2)),
                 dispatches_per_iter=float(m.group(3)), up_bytes_per_iter=int(m.group(4)),
                 down_bytes_per_iter=int(m.group(5)))
    m = re.search(r"time in backend calls: ([^\n]*)", text)
    if m:
        r["calls"] = m.group(1).strip()
    m = re.search(r"; ([\d.]+)s in round trips", text)
    if m:
        r["round_trip_s"] = float(m.group(1))
    m = re.search(r"read in ([\d.]+)s", text)
    if m:
        r["read_s"] = float(m.group(1))
    m = re.search(r"Accuracy = ([\d.]+)%", text)
    if m:
        r["accuracy"] = float(m.group(1))
    m = re.search(r"; (gpu: [^\n]*|cpu[^\n]*)$", text.split("\n")[0] if text else "")
    if m:
        r["device"] = m.group(1)
    return r


def scale_gamma(path):
    """scikit-learn's gamma='scale', 1 / (n_features * X.var()), over the dense matrix of a
    LIBSVM text file (absent entries zero), to 6 significant digits (benches/peers.py's rule)."""
    n = d = 0
    s = ss = 0.0
    with open(path) as f:
        for line in f:
            t = line.split()
            if not t:
                continue
            n += 1
            for p in t[1:]:
                k, v = p.split(":", 1)
                k, v = int(k), float(v)
                d = max(d, k)
                s += v
                ss += v * v
    cells = n * d
    var = ss / cells - (s / cells) ** 2
    return float(f"{1.0 / (d * var):.6g}")


def quick_covtype(src, train, test, n_train, n_test):
    """The first n_train + n_test rows of covtype.libsvm.binary.xz, each feature min-max scaled
    to [0, 1] over them (absent features count as 0), labels 1 -> +1 and 2 -> -1."""
    import lzma
    rows = []
    with lzma.open(src, "rt") as f:
        for line in f:
            t = line.split()
            if t:
                rows.append((t[0], {int(k): float(v) for k, v in (p.split(":") for p in t[1:])}))
            if len(rows) == n_train + n_test:
                break
    keys = sorted({k for _, x in rows for k in x})
    lo = {k: min(x.get(k, 0.0) for _, x in rows) for k in keys}
    hi = {k: max(x.get(k, 0.0) for _, x in rows) for k in keys}
    def line(y, x):
        feats = []
        for k in sorted(x):
            v = (x[k] - lo[k]) / (hi[k] - lo[k]) if hi[k] > lo[k] else 0.0
            if v != 0.0:
                feats.append(f"{k}:{v:.6g}")
        return ("+1" if y == "1" else "-1") + " " + " ".join(feats) + "\n"
    for path, part in ((train, rows[:n_train]), (test, rows[n_train:])):
        with open(path + ".part", "w") as g:
            g.writelines(line(y, x) for y, x in part)
        os.replace(path + ".part", path)


def gamma_of(run, name):
    """(C, gamma) of a set, gamma 'scale' resolved on its training file."""
    c, g = PARAMS[name]
    return c, run.results["covtype_gamma"] if g == "scale" else g


def labels(path):
    with open(path) as f:
        return [ln.split()[0] for ln in f if ln.strip() and not ln.startswith("labels")]


def prepare(run, fw, quick, work, wanted=tuple(PARAMS)):
    """Training and test files per set in `wanted`: {name: (train, test)}."""
    sets = {}
    raw = find_data("kddcup.data_10_percent.gz")
    if raw and "kdd99" in wanted:
        pre = os.path.join(work, "kdd99")
        tr, te = pre + ".train.scaled", pre + ".test.scaled"
        if not os.path.exists(te):
            run.sh([fw, "convert", "kdd99", raw, pre])
            run.sh([fw, "scale", "-l", "0", "-u", "1", "-s", pre + ".range", pre + ".train", tr])
            run.sh([fw, "scale", "-r", pre + ".range", pre + ".test", te])
        if quick:  # every 40th row: the same steps at lavapipe's pace
            for src in (tr, te):
                with open(src) as f, open(src + ".quick", "w") as g:
                    g.writelines(ln for k, ln in enumerate(f) if k % 40 == 0)
            tr, te = tr + ".quick", te + ".quick"
        sets["kdd99"] = (tr, te)
    else:
        run.results["skipped"].append("kdd99: kddcup.data_10_percent.gz not found")
    a9a, a9at = find_data("a9a.xz"), find_data("a9a.t.xz")
    if a9a and a9at:
        if quick:  # every 4th row
            out = []
            for src in (a9a, a9at):
                dst = os.path.join(work, os.path.basename(src) + ".quick")
                with open(plain(run, src, work)) as f, open(dst, "w") as g:
                    g.writelines(ln for k, ln in enumerate(f) if k % 4 == 0)
                out.append(dst)
            a9a, a9at = out
        sets["a9a"] = (a9a, a9at)
    cov = find_data("covtype.libsvm.binary.xz")
    split = find_data("covtype_split.py")
    if "covtype" in wanted and cov and quick:
        # The file's first 6,000 rows scaled to [0, 1] among themselves (the benchmark's split
        # takes minutes to make): 5,000 to train, 1,000 to test.
        tr, te = os.path.join(work, "covtype.quick.train"), os.path.join(work, "covtype.quick.test")
        if not os.path.exists(te):
            quick_covtype(cov, tr, te, 5000, 1000)
        sets["covtype"] = (tr, te)
        run.results["covtype_gamma"] = scale_gamma(tr)
    elif "covtype" in wanted and ((cov and split) or find_data("covtype.test.xz")):
        d = os.path.join(work, "covtype")
        tr, te = os.path.join(d, "covtype.train"), os.path.join(d, "covtype.test")
        packed = find_data("covtype.train.xz"), find_data("covtype.test.xz")
        if not os.path.exists(te) and all(packed):
            # The split made where the run was packed (gpu-device-pack.sh): minutes saved.
            os.makedirs(d, exist_ok=True)
            for src, dst in zip(packed, (tr, te)):
                shutil.copyfile(plain(run, src, work), dst)
        if not os.path.exists(te):
            run.sh([sys.executable, split, cov, d], timeout=900)
        if os.path.exists(te):
            sets["covtype"] = (tr, te)
            run.results["covtype_gamma"] = scale_gamma(tr)
    elif "covtype" in wanted:
        run.results["skipped"].append("covtype: covtype.libsvm.binary.xz or covtype_split.py not found")
    test = os.path.join(work, "cb.test")
    if not {"cb1m", "cb4m"} & set(wanted):
        return sets
    rows = {"cb1m": 20000 if quick else 1000000, "cb4m": 40000 if quick else 4000000}
    run.sh([fw, "gen", "checkerboard", "--rows", "10000" if quick else "100000",
            "--seed", "99", test])
    for name, n in rows.items():
        if name not in wanted:
            continue
        p = os.path.join(work, f"{name}.txt")
        if not os.path.exists(p):
            run.sh([fw, "gen", "checkerboard", "--rows", str(n), "--seed", "1", p])
        sets[name] = (p, test)
    return sets


def start_thundersvm(run, work):
    """Starts ThunderSVM's CUDA build in the background; returns (Popen or None, bin dir)."""
    tar = find_data("thundersvm-5c6a056.tar.xz") or os.path.join(
        ROOT, "..", "shared", "peers", "thundersvm-5c6a056.tar.xz")
    if not shutil.which("nvcc") and not os.path.exists("/usr/local/cuda/bin/nvcc"):
        run.results["thundersvm"] = {"built": False, "why": "nvcc not found (no CUDA here)"}
        return None, None
    if not os.path.exists(tar) or not shutil.which("cmake"):
        run.results["thundersvm"] = {"built": False, "why": "source tarball or cmake missing"}
        return None, None
    src = os.path.join(work, "thundersvm-5c6a056")
    with tarfile.open(tar) as t:
        t.extractall(work)
    # CUDA 12+'s Thrust/CUB need C++17 (the tree asks for C++11/14); build for this card only.
    cm = os.path.join(src, "CMakeLists.txt")
    s = open(cm).read().replace("-std=c++14", "-std=c++17").replace(
        "set(CMAKE_CXX_STANDARD 11)", "set(CMAKE_CXX_STANDARD 17)")
    open(cm, "w").write(s)
    b = os.path.join(src, "build")
    os.makedirs(b, exist_ok=True)
    env = dict(os.environ)
    env["PATH"] = env.get("PATH", "") + ":/usr/local/cuda/bin"
    script = (f"cd {b} && cmake .. -DCMAKE_BUILD_TYPE=Release -DUSE_CUDA=ON "
              f"-DCMAKE_POLICY_VERSION_MINIMUM=3.5 "
              f"'-DCUDA_NVCC_FLAGS=-gencode=arch=compute_90,code=sm_90' "
              f"&& make -j{os.cpu_count() or 4} thundersvm-train thundersvm-predict")
    log = open(os.path.join(run.out, "thundersvm-build.log"), "w")
    p = subprocess.Popen(["bash", "-c", script], stdout=log, stderr=subprocess.STDOUT, env=env)
    return p, os.path.join(b, "bin")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="small sizes, for a software GPU (lavapipe) on a CI-sized machine")
    ap.add_argument("--budget", type=float, default=None,
                    help="seconds for the whole run (default 450; 600 with --quick)")
    ap.add_argument("--steps", default=",".join(STEPS),
                    help=f"comma-separated steps to run, of {','.join(STEPS)} (default: all)")
    ap.add_argument("--train-limit", type=float, default=None,
                    help="--time-limit of the generated checkerboards' training runs "
                         "(default 30 s; 25 s with --quick)")
    ap.add_argument("--gpu-cache-mb", type=int, default=None,
                    help="also train the 4*10^6-row checkerboard on the GPU with -m this")
    ap.add_argument("--sets", default=",".join(PARAMS),
                    help=f"comma-separated training sets, of {','.join(PARAMS)} (default: all)")
    ap.add_argument("--baseline", default=None,
                    help="another fwsvm binary: also train each set's ws run on the GPU with it")
    ap.add_argument("--skip-sklearn", action="store_true",
                    help="leave scikit-learn's SVC out of the peers step")
    ap.add_argument("--ws-sizes", default="",
                    help="comma-separated --ws-size values for extra GPU ws runs")
    args = ap.parse_args()
    steps = set(args.steps.split(","))
    if steps - set(STEPS):
        ap.error(f"unknown steps: {','.join(sorted(steps - set(STEPS)))}")
    quick = args.quick
    out = os.environ.get("OUT") or os.path.join(ROOT, "target", "gpu-device")
    os.makedirs(out, exist_ok=True)
    work = os.environ.get("GPU_DEVICE_WORK") or os.path.join(ROOT, "target", "gpu-device-work")
    os.makedirs(work, exist_ok=True)
    fw = os.environ.get("FWSVM") or next(
        p for p in [os.path.join(ROOT, ".devcarry", "fwsvm"),
                    os.path.join(ROOT, "target", "release", "fwsvm"), "fwsvm"]
        if os.path.exists(p) or p == "fwsvm")
    run = Run(out, args.budget or (600.0 if quick else 450.0))
    res = run.results
    res["quick"] = quick
    res["date"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    carried = os.path.join(ROOT, ".devcarry", "commit")
    res["commit"] = os.environ.get("FWSVM_COMMIT") or (
        open(carried).read().strip() if os.path.exists(carried) else None) or subprocess.run(
        ["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
        text=True).stdout.strip()
    res["cpus"] = os.cpu_count()

    res["steps"] = sorted(steps)
    tsvm, tsvm_bin = start_thundersvm(run, work) if "peers" in steps else (None, None)
    run.results["cuda_copy_gbs"] = copy_bandwidth(run)

    print(f"[{0:6.1f} s] fwsvm info", flush=True)
    _, text, _ = run.sh([fw, "info"], timeout=60)
    res["info"] = text.strip()
    _, smi, _ = run.sh(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm",
                        "--format=csv,noheader"], timeout=30)
    res["nvidia_smi"] = smi.strip()

    # The GPU steps run while ThunderSVM compiles (they use one host thread); the CPU steps
    # wait for the build to end, so that it does not take their cores.
    res["kernels"] = []
    res["training"] = []
    kern_md = []
    sets = None
    preds = {}
    for phase in ("gpu", "cpu"):
        if phase == "cpu" and tsvm is not None:
            print(f"[{time.monotonic() - run.t0:6.1f} s] waiting for the ThunderSVM build",
                  flush=True)
            try:
                tsvm.wait(timeout=max(1.0, min(run.left() - 150, 240)))
            except subprocess.TimeoutExpired:
                tsvm.kill()
                tsvm.wait()
                run.results["thundersvm_killed"] = True
        if f"kernels-{phase}" in steps:
            kernels(run, fw, quick, work, phase, kern_md)
        if sets is None:
            wanted = set(args.sets.split(","))
            sets = {k: v for k, v in prepare(run, fw, quick, work, wanted).items()
                    if k in wanted}
        extra = {"baseline": args.baseline,
                 "ws_sizes": [q for q in args.ws_sizes.split(",") if q]}
        train_all(run, fw, quick, work, sets, phase, preds, steps, args.train_limit,
                  args.gpu_cache_mb, extra)
    for r in res["training"]:
        key = (r["set"], r["algorithm"])
        p = preds.get(key, {})
        if len(p) == 2 and len(p["gpu"]) == len(p["cpu"]):
            r["gpu_cpu_agreement"] = sum(a == b for a, b in zip(p["gpu"], p["cpu"])) / len(p["cpu"])

    # 5. Peers: ThunderSVM (CUDA) and scikit-learn's SVC.
    res["peers"] = []
    if tsvm is not None:
        ok = tsvm.returncode == 0 and os.path.exists(os.path.join(tsvm_bin, "thundersvm-train"))
        tail = open(os.path.join(out, "thundersvm-build.log")).read().strip().split("\n")[-15:]
        res["thundersvm"] = {"built": ok, "rc": tsvm.returncode, "log_tail": tail}
        if ok:
            for name in ("kdd99", "a9a", "cb1m"):
                if name not in sets or not run.fits(f"thundersvm {name}", 60):
                    continue
                tr, te = sets[name]
                c, g = PARAMS[name]
                tr_plain, te_plain = plain(run, tr, work), plain(run, te, work)
                model = os.path.join(work, f"{name}.thunder.model")
                rc, text, wall = run.sh([os.path.join(tsvm_bin, "thundersvm-train"), "-c", str(c),
                                         "-g", str(g), tr_plain, model], timeout=120)
                r = {"set": name, "tool": "thundersvm-cuda", "C": c, "gamma": g, "rc": rc,
                     "wall_s": round(wall, 3)}
                m = re.search(r"all training time = ([\d.e+-]+)", text)
                if m:
                    r["train_s"] = float(m.group(1))
                m = re.search(r"#total sv = (\d+)|#sv = (\d+)", text)
                if m:
                    r["svs"] = int(m.group(1) or m.group(2))
                if rc == 0:
                    prc, ptext, _ = run.sh([os.path.join(tsvm_bin, "thundersvm-predict"),
                                            te_plain, model, model + ".pred"], timeout=120)
                    m = re.search(r"Accuracy = ([\d.]+)", ptext)
                    if m:
                        r["accuracy"] = float(m.group(1)) * (100 if float(m.group(1)) <= 1 else 1)
                res["peers"].append(r)
    # 4. fwsvm check on KDD99.
    res["check"] = []
    if "kdd99" in sets and "check" in steps:
        tr, te = sets["kdd99"]
        for prec in ("f32", "f64"):
            if not run.fits(f"check kdd99 {prec}", 30 if quick else 45):
                continue
            rc, text, wall = run.sh([fw, "check", "--precision", prec, "-c", "100", "-g", "0.232",
                                     "--time-limit", "30", "--test", te, tr], timeout=150)
            res["check"].append({"precision": prec, "rc": rc, "wall_s": round(wall, 2),
                                 "summary": "\n".join(text.strip().split("\n")[-10:])})

    sk_sets = ["a9a"] if "peers" in steps and not args.skip_sklearn else []
    for name in sk_sets:
        if name not in sets or not run.fits(f"sklearn SVC {name}", 70):
            continue
        tr, te = sets[name]
        c, g = PARAMS[name]
        code = (
            "import time,sys\n"
            "from sklearn.datasets import load_svmlight_files as L\n"
            "from sklearn.svm import SVC\n"
            f"X,y,Xt,yt=L([{plain(run, tr, work)!r},{plain(run, te, work)!r}])\n"
            "X,Xt=X.toarray(),Xt.toarray()\n"
            f"t=time.time();m=SVC(C={c},gamma={g},tol=1e-3,cache_size=1024).fit(X,y)\n"
            "s=time.time()-t;print('SK',s,len(m.support_),100*(m.predict(Xt)==yt).mean())\n")
        py = os.environ.get("PYTHON", sys.executable)
        rc, text, wall = run.sh([py, "-c", code], timeout=max(10, min(90, run.left() - 5)))
        m = re.search(r"SK ([\d.]+) (\d+) ([\d.]+)", text)
        r = {"set": name, "tool": "sklearn-SVC (LIBSVM, 1 thread)", "C": c, "gamma": g, "rc": rc}
        if m:
            r.update(train_s=float(m.group(1)), svs=int(m.group(2)), accuracy=float(m.group(3)))
        res["peers"].append(r)

    if "mpi" in steps:
        mpi_ranks(run, work, sets)
    res["elapsed_s"] = round(time.monotonic() - run.t0, 1)
    json.dump(res, open(os.path.join(out, "results.json"), "w"), indent=1)
    md = table(res, kern_md)
    open(os.path.join(out, "table.md"), "w").write(md)
    print(md)
    trained = [r for r in res["training"] if r.get("rc") == 0]
    return 0 if (trained or "train" not in steps) and (res["kernels"] or not any(
        s.startswith("kernels") for s in steps)) and not any("error" in k for k in res["kernels"]) else 1


def mpi_ranks(run, work, sets):
    """Two MPI ranks sharing the GPU against one process (seconds per iteration), where an
    MPI build of fwsvm (FWSVM_MPI, default .devcarry/fwsvm-mpi) and an `mpirun` that runs it
    are there; otherwise records what is missing."""
    fw = os.environ.get("FWSVM_MPI") or os.path.join(ROOT, ".devcarry", "fwsvm-mpi")
    mpirun = shutil.which("mpirun") or shutil.which("mpiexec")
    out = {"binary": os.path.exists(fw), "mpirun": mpirun}
    run.results["mpi"] = out
    if not (os.path.exists(fw) and mpirun and "a9a" in sets):
        return
    if not run.fits("two ranks sharing the GPU (a9a, PARTAN)", 40):
        return
    tr, _ = sets["a9a"]
    c, g = PARAMS["a9a"]
    args = ["train", "--backend", "gpu", "-a", "partan", "-c", str(c), "-g", str(g),
            "--time-limit", "15", tr]
    for np_ in (1, 2):
        model = os.path.join(work, f"a9a.mpi{np_}.model")
        cmd = ([fw] if np_ == 1 else
               [mpirun, "--allow-run-as-root", "--oversubscribe", "-np", str(np_), fw])
        rc, text, wall = run.sh(cmd + args + [model], timeout=60)
        r = parse_train(text)
        m = re.search(r"iterations (\d+).*?([\d.]+)s \(\+", text)
        if m:
            r.setdefault("iterations", int(m.group(1)))
            r.setdefault("solver_s", float(m.group(2)))
        r.update(rc=rc, wall_s=round(wall, 2))
        out[f"np{np_}"] = r


def copy_bandwidth(run):
    """Device-to-device copy bandwidth (bytes read + written per second) measured with CUDA
    through PyTorch where it is installed: the memory bandwidth the column pass is judged
    against. (wgpu's buffer copies go through the copy engine, which is slower than memory.)"""
    code = ("import torch\n"
            "a=torch.empty(1<<28,device='cuda');b=torch.empty_like(a);a.uniform_()\n"
            "for _ in range(3): b.copy_(a)\n"
            "s=torch.cuda.Event(enable_timing=True);e=torch.cuda.Event(enable_timing=True)\n"
            "torch.cuda.synchronize();s.record()\n"
            "for _ in range(50): b.copy_(a)\n"
            "e.record();torch.cuda.synchronize()\n"
            "print('BW',2*a.numel()*4*50/(s.elapsed_time(e)/1e3)/1e9)\n")
    rc, text, _ = run.sh([os.environ.get("PYTHON", sys.executable), "-c", code], timeout=60)
    m = re.search(r"BW ([\d.]+)", text)
    return float(m.group(1)) if rc == 0 and m else None


def kernels(run, fw, quick, work, backend, kern_md):
    """Column pass, batched columns, cached-column iteration and round trip on one backend."""
    rows = "20000" if quick else "1000000,4000000"
    peak = run.results.get("cuda_copy_gbs")
    extra = ["--gpu-peak", f"{peak:.1f}"] if peak and backend == "gpu" else []
    for layout, d in (("dense", "38"), ("csr", "123")):
        if not run.fits(f"bench kernels {backend} {layout} d={d}", 20 if quick else 45):
            continue
        j = os.path.join(work, f"kernels-{backend}-{layout}.json")
        rc, text, _ = run.sh([fw, "bench", "kernels", "--backend", backend, "--rows", rows,
                              "--dims", d, "--layouts", layout, "--min-time",
                              "0.2" if quick else "0.4", "--json", j] + extra, timeout=240)
        kern_md.append(text.strip())
        if rc == 0 and os.path.exists(j):
            run.results["kernels"] += json.load(open(j))
        else:
            run.results["kernels"].append({"error": f"rc {rc}", "layout": layout,
                                           "backend": backend})


def train_all(run, fw, quick, work, sets, backend, preds, steps, cb_limit, gpu_cache_mb,
              extra=None):
    """The training plan on one backend; predicted test labels go to preds[(set, alg)].
    `extra`: {"baseline": another binary for the GPU's ws runs, "ws_sizes": [--ws-size, ...]}."""
    extra = extra or {}
    cb = cb_limit or (25 if quick else 30)
    limit = {"kdd99": 30, "a9a": 20, "covtype": 60, "cb1m": cb, "cb4m": cb}
    names = [s for s in ("kdd99", "a9a", "covtype", "cb1m", "cb4m") if s in sets]
    # On the GPU, ws with its outer iterations on the device and driven by the host.
    loops = [["--gpu-loop", "device"], ["--gpu-loop", "host"]] if backend == "gpu" else [[]]
    plan = [(s, "ws", lp, fw) for s in names for lp in loops if "train" in steps] + \
           [(s, "partan", [], fw) for s in ("kdd99", "a9a") if "partan" in steps]
    if backend == "gpu" and "train" in steps:
        base = extra.get("baseline")
        if base:
            plan[1:1] = [(s, "ws", [], base) for s in names]
        plan += [(s, "ws", ["--ws-size", q], fw) for q in extra.get("ws_sizes", [])
                 for s in names if s != "cb1m"]
    if gpu_cache_mb and backend == "gpu" and "train" in steps:
        plan.append(("cb4m", "ws", ["-m", str(gpu_cache_mb)], fw))
    for name, alg, more, binary in plan:
        tag = " (base)" if binary != fw else ""
        if name not in sets:
            continue
        tr, te = sets[name]
        c, g = gamma_of(run, name)
        # --quick: the small sets' ws runs get a minute (they converge in 10-30 s on lavapipe,
        # whose speed varies with the machine), the rest their usual limits.
        quick_ws = 60 if name in ("kdd99", "a9a", "covtype") else min(25, limit[name])
        lim = (10 if alg == "partan" else quick_ws) if quick else (
            15 if alg == "partan" else limit[name])
        if not run.fits(f"train {name} {alg}{tag} {' '.join(more)} {backend}", lim + 10):
            continue
        tagm = "." + "-".join(x.lstrip("-") for x in more) if more else ""
        model = os.path.join(work, f"{name}.{alg}.{backend}{tagm}"
                                   f"{'.base' if tag else ''}.model")
        # The largest set starts cold: its warm start alone (a 400,000-point solve) outlasts
        # the time limit, and the comparison is of the backends' iterations.
        cold = ["--no-warm-start"] if name == "cb4m" else []
        rc, text, wall = run.sh([binary, "train", "--backend", backend, "-a", alg, "-c", str(c),
                                 "-g", str(g), "--time-limit", str(lim)] + cold + more +
                                [tr, model],
                                timeout=lim * 1.5 + 40)
        r = {"set": name, "algorithm": alg, "backend": backend, "C": c, "gamma": g,
             "time_limit_s": lim, "rc": rc, "wall_s": round(wall, 3),
             "options": " ".join(cold + more)}
        r.update(parse_train(text))
        # The device loop is the GPU's ws ("ws"); the host-driven loop is "ws (host loop)".
        shown = [x for x in more if x not in ("--gpu-loop", "device", "host")]
        parts = ["cold"] * bool(cold) + [" ".join(shown)] * bool(shown) + \
            ["host loop"] * ("host" in more)
        r["algorithm"] = alg + (f" ({', '.join(parts)})" if parts else "") + tag
        m = re.search(r"extended to (\d+) starting support vectors \(([\d.]+)s\)", text)
        if m:
            r["warm_support"], r["warm_s"] = int(m.group(1)), float(m.group(2))
        if rc == 0:
            pout = model + ".pred"
            prc, ptext, _ = run.sh([fw, "predict", "--backend", "cpu", te, model, pout],
                                   timeout=300)
            m = re.search(r"Accuracy = ([\d.]+)%", ptext)
            if m:
                r["accuracy"] = float(m.group(1))
            if prc == 0:
                preds.setdefault((name, r["algorithm"]), {})[backend] = labels(pout)
        else:
            r["error"] = text.strip().split("\n")[-1][:300]
        run.results["training"].append(r)


def plain(run, path, work):
    """A decompressed copy of path (peers read plain LIBSVM text only)."""
    if not path.endswith((".xz", ".gz", ".bz2")):
        return path
    dst = os.path.join(work, os.path.basename(path).rsplit(".", 1)[0] + ".plain")
    if not os.path.exists(dst):
        import bz2
        import gzip
        import lzma
        op = {"xz": lzma.open, "gz": gzip.open, "bz2": bz2.open}[path.rsplit(".", 1)[1]]
        with op(path, "rt") as f, open(dst, "w") as g:
            shutil.copyfileobj(f, g)
    return dst


def table(res, kern_md):
    L = [f"# fwsvm on {res.get('nvidia_smi') or 'this machine'}", "",
         f"{res['date']}, commit {res['commit']}, {res['cpus']} CPU threads"
         f"{' (--quick)' if res['quick'] else ''}; {res['elapsed_s']} s in all. "
         f"CUDA device-to-device copy (PyTorch, read + write): "
         f"{res.get('cuda_copy_gbs') and round(res['cuda_copy_gbs']) or 'not measured'} GB/s.", "",
         "```", res.get("info", ""), "```", "", "## Kernel columns (`fwsvm bench kernels`)", ""]
    L += kern_md
    L += ["", "## Training (whole process; accuracy on the test set)", "",
          "| set | solver | backend | C, γ | seconds | solver s | warm start: SVs, s | iterations "
          "| round trips/it | s in round trips | SVs | objective | stop | test acc % | GPU/CPU labels "
          "| time in backend calls |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    order = {"ws": 0, "ws (host loop)": 1, "ws (cold)": 1, "partan": 3}
    rows = sorted(res["training"], key=lambda r: (
        order.get(r["algorithm"], 2), list(PARAMS).index(r["set"]), r["backend"] != "gpu"))
    for r in rows:
        agree = r.get("gpu_cpu_agreement")
        L.append(f"| {r['set']} | {r['algorithm']} | {r['backend']} | {r['C']:g}, {r['gamma']:g} | "
                 f"{r['wall_s']} | {r.get('solver_s', '-')} | "
                 f"{str(r['warm_support']) + ', ' + str(r['warm_s']) if 'warm_support' in r else '-'} | "
                 f"{r.get('iterations', '-')} | "
                 f"{r.get('round_trips_per_iter', '-')} | {r.get('round_trip_s', '-')} | "
                 f"{r.get('svs', '-')} | "
                 f"{r.get('objective', '-')} | {r.get('stop', r.get('error', '-'))} | "
                 f"{r.get('accuracy', '-')} | "
                 f"{'-' if agree is None else f'{100 * agree:.3f} %'} | "
                 f"{r.get('calls', '-')} |")
    L += ["", "## `fwsvm check` on KDD99", ""]
    for c in res["check"]:
        L += [f"{c['precision']} (rc {c['rc']}, {c['wall_s']} s):", "```", c["summary"], "```"]
    L += ["", "## Peers", "", "| set | tool | C, γ | train s | wall s | SVs | test acc % |",
          "|---|---|---|---|---|---|---|"]
    for r in res["peers"]:
        L.append(f"| {r['set']} | {r['tool']} | {r['C']:g}, {r['gamma']:g} | "
                 f"{r.get('train_s', '-')} | {r.get('wall_s', '-')} | {r.get('svs', '-')} | "
                 f"{r.get('accuracy', '-')} |")
    mpi = res.get("mpi", {})
    L += ["", "## MPI ranks sharing the GPU", ""]
    if "np1" in mpi:
        for k in ("np1", "np2"):
            r = mpi.get(k, {})
            L.append(f"- {k}: rc {r.get('rc')}, {r.get('iterations', '-')} iterations in "
                     f"{r.get('solver_s', '-')} s")
    else:
        L.append(f"Not run: MPI binary {'found' if mpi.get('binary') else 'missing'}, "
                 f"mpirun {mpi.get('mpirun') or 'missing'}.")
    t = res.get("thundersvm", {})
    L += ["", f"ThunderSVM CUDA build: {'built' if t.get('built') else 'not built'}"
          f"{': ' + t['why'] if t.get('why') else ''}"]
    if t.get("log_tail") and not t.get("built"):
        L += ["```"] + t["log_tail"] + ["```"]
    if res["skipped"]:
        L += ["", "Skipped: " + "; ".join(res["skipped"])]
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    sys.exit(main())
