#!/usr/bin/env bash
# Run on a machine with an NVIDIA GPU and nvcc: builds the standalone CUDA binaries of every
# library kernel (untransformed) and of the GPU schedules in tests/cuda_schedules/, runs them
# and compares their outputs with the interpreter (python -m dojo_core run --backend interp).
# Arguments go to bench/gpu_check.py (e.g. --schedules-only, --kernel matmul, --arch sm_80,
# --keep DIR, --json). Exit 0 when every case matches; 2 when no GPU or nvcc is present.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=python3
[ -x .venv/bin/python ] && PY=.venv/bin/python
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu_check: no CUDA device here (nvidia-smi is absent or lists no GPU)" >&2
  exit 2
fi
if ! command -v nvcc >/dev/null 2>&1; then
  echo "gpu_check: nvcc is not on PATH" >&2
  exit 2
fi
nvidia-smi -L
nvcc --version | tail -1
exec "$PY" bench/gpu_check.py "$@"
