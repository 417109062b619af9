#!/usr/bin/env bash
# One prepared measurement of fwsvm on a GPU machine (see benches/gpu_device.py for the steps):
#   benches/gpu-device.sh [--quick] [--budget SECONDS]
# Writes table.md, results.json and log.txt to $OUT (default target/gpu-device) and prints the
# table last. --quick runs every step at small sizes on any adapter (lavapipe included).
#
# On a machine without Rust (the lent H100) it uses what travels with the working tree:
#   .devcarry/fwsvm            a stripped release binary (`benches/gpu-device-pack.sh` makes it)
#   .devcarry/*.gz|*.xz        the datasets and ThunderSVM's source
#   .gl/*.deb                  the Vulkan and EGL/GL loaders, unpacked here when none is installed
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -d .gl ] && ! ldconfig -p | grep -q libvulkan.so.1; then
    for f in .gl/*.deb; do dpkg -x "$f" /; done
    ldconfig
fi
if [ -z "${VK_DRIVER_FILES:-}" ] && [ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
    export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
fi
if [ -z "${XDG_RUNTIME_DIR:-}" ]; then
    export XDG_RUNTIME_DIR=/tmp/xdg-$UID
    mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
fi
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] && [ -z "${PYTHON:-}" ] && PY=.venv/bin/python
export PYTHONUNBUFFERED=1
exec "$PY" benches/gpu_device.py "$@"
