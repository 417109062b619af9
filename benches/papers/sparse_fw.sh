#!/usr/bin/env bash
# Sparse re-weighted FW (Alaíz, Suykens et al., 2017) against FW on ijcnn1: support vectors,
# objective and test accuracy at the default tolerance, at equal iterations, at a tighter
# tolerance, and against the converged SVM (docs/PAPERS.md). Deterministic: iteration caps, no
# time limits. About three minutes on two cores, and the sweep over C (the paper's stability
# claim) about as long again.
#   benches/papers/sparse_fw.sh [FWSVM_BINARY]
set -euo pipefail
cd "$(dirname "$0")/../.."
fw=${1:-target/release/fwsvm}
data=${FWSVM_DATASETS:-../shared/datasets}
tr=$data/ijcnn1.trn.bz2
te=$data/ijcnn1.tst.bz2
[ -f "$tr" ] || { echo "ijcnn1 not found in $data (set FWSVM_DATASETS)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
row() {
    local kernel=$1; shift
    local out
    out=$("$fw" train --backend cpu --test "$te" "$@" "$tr" "$tmp/m" 2>&1)
    local it sv f acc
    it=$(grep -oE 'iterations [0-9]+' <<<"$out" | head -1 | cut -d' ' -f2)
    sv=$(grep -oE 'SVs [0-9]+' <<<"$out" | head -1 | cut -d' ' -f2)
    f=$(grep -oE 'objective [0-9.e+-]+' <<<"$out" | head -1 | cut -d' ' -f2)
    acc=$(grep -oE 'Accuracy = [0-9.]+' <<<"$out" | cut -d' ' -f3)
    echo "| $kernel | \`$*\` | $it | $sv | $f | $acc |"
}
echo "| kernel | options | iterations | SVs | objective f | test acc % |"
echo "|---|---|---|---|---|---|"
lin=(-k linear -c 1)
row linear "${lin[@]}" -a fw
row linear "${lin[@]}" -a sparse-fw
row linear "${lin[@]}" -a sparse-fw --init-size 1
row linear "${lin[@]}" -a swap
row linear "${lin[@]}" -a fw --max-iter 19278 -e 1e-12
row linear "${lin[@]}" -a fw -e 1e-5 --max-iter 120000
row linear "${lin[@]}" -a sparse-fw -e 1e-5 --max-iter 40000
row linear "${lin[@]}" -a ws -e 1e-9 --rel-eps 1e-4 --max-iter 200000
rbf=(-c 10 -g 0.386059)
row rbf "${rbf[@]}" -a fw
row rbf "${rbf[@]}" -a sparse-fw
row rbf "${rbf[@]}" -a fw --max-iter 32712 -e 1e-12
row rbf "${rbf[@]}" -a ws -e 1e-7 --rel-eps 1e-3
echo
echo "Over C (the paper's stability claim): sparse FW (at most 150,000 iterations) against the converged SVM"
echo
echo "| kernel | options | iterations | SVs | objective f | test acc % |"
echo "|---|---|---|---|---|---|"
for c in 0.1 1 10; do
    row linear -k linear -c "$c" -a sparse-fw --max-iter 150000
    row linear -k linear -c "$c" -a ws -e 1e-9 --rel-eps 1e-4 --max-iter 200000
done
for c in 1 10 100; do
    row rbf -c "$c" -g 0.386059 -a sparse-fw --max-iter 150000
    row rbf -c "$c" -g 0.386059 -a ws -e 1e-9 --rel-eps 1e-3 --max-iter 200000
done
