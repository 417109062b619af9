#!/usr/bin/env bash
# Packs what benches/gpu-device.sh needs on a machine without Rust or network into .devcarry/
# (ignored by git; name it and .gl in the device run's carry): a stripped release binary without
# MPI, the KDD Cup 99 10 % file, covtype's benchmark split (compressed) and ThunderSVM's source. Fetches the loader .debs into .gl/.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release
mkdir -p .devcarry
strip -o .devcarry/fwsvm target/release/fwsvm
# An MPI build too, for two ranks sharing the GPU where the machine has Open MPI's mpirun and
# libraries (it links libmpi.so.40); the run records it when they are missing.
if cargo build --release --features mpi --target-dir target/device-mpi 2>/dev/null; then
    strip -o .devcarry/fwsvm-mpi target/device-mpi/release/fwsvm
fi
shared=${FWSVM_SHARED:-../shared}
cp "$shared/datasets/kddcup.data_10_percent.gz" "$shared/peers/thundersvm-5c6a056.tar.xz" .devcarry/
# covtype's benchmark split made here (a few minutes of Python), carried compressed.
if [ ! -f .devcarry/covtype.test.xz ]; then
    tmp=$(mktemp -d)
    python3 "$shared/datasets/covtype_split.py" "$shared/datasets/covtype.libsvm.binary.xz" "$tmp"
    xz -T0 -6 -c "$tmp/covtype.train" >.devcarry/covtype.train.xz
    xz -T0 -6 -c "$tmp/covtype.test" >.devcarry/covtype.test.xz
    rm -rf "$tmp"
fi
git rev-parse --short HEAD >.devcarry/commit
if ! ls .gl/libvulkan1*.deb >/dev/null 2>&1; then
    mkdir -p .gl /tmp/amd64/partial
    o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
    apt-get $o update >/dev/null
    (cd .gl && apt-get $o download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
fi
du -sh .devcarry .gl
