#!/usr/bin/env bash
# One device call: the prepared measurement (kdd99, a9a, the 4·10⁶ checkerboard, ThunderSVM),
# then covtype (464,810 / 116,202 rows, [0, 1]-scaled, C 1, γ 0.243427) on the GPU, on the
# CPU's 16 cores and with ThunderSVM-CUDA, each capped.
set -uo pipefail
cd "$(dirname "$0")/.."
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
export XDG_RUNTIME_DIR=/tmp/xdg; mkdir -p -m 700 $XDG_RUNTIME_DIR
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > $OUT/gpu.txt 2>&1
(xz -dc .devcarry/covtype.train.xz > /tmp/covtype.train; xz -dc .devcarry/covtype.test.xz > /tmp/covtype.test) &
bash benches/gpu-device.sh --budget 230 --steps kernels-gpu,train,peers --sets kdd99,a9a,cb4m > $OUT/device.log 2>&1
echo "gpu-device.sh rc $?" >> $OUT/device.log
wait
FW=.devcarry/fwsvm
TIMEFORMAT='wall %R s'
{
echo "== covtype gpu (time limit 90)"; time timeout 150 $FW train --backend gpu -c 1 -g 0.243427 --time-limit 90 --test /tmp/covtype.test /tmp/covtype.train /tmp/cg.model 2>&1 | grep -v "^  pair"
echo "== covtype cpu 16 threads (time limit 60)"; time timeout 120 $FW train --backend cpu -c 1 -g 0.243427 --time-limit 60 --test /tmp/covtype.test /tmp/covtype.train /tmp/cc.model 2>&1 | grep -v "^  pair"
T=target/gpu-device-work/thundersvm-5c6a056/build/bin
if [ -x $T/thundersvm-train ]; then
  echo "== covtype thundersvm-cuda (cap 110 s)"; time timeout 110 $T/thundersvm-train -c 1 -g 0.243427 /tmp/covtype.train /tmp/ct.model 2>&1 | tail -5
  [ -f /tmp/ct.model ] && timeout 60 $T/thundersvm-predict /tmp/covtype.test /tmp/ct.model /tmp/ct.pred 2>&1 | tail -2
else echo "thundersvm not built"; fi
} > $OUT/covtype.log 2>&1
cat $OUT/covtype.log
tail -40 $OUT/table.md 2>/dev/null
