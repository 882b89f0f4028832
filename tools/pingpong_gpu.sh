#!/bin/bash
# pingpong_gpu.sh: the GPU check of the wgmma-pingpong rows (cuda/gemm/tensor_wgmma.cu, branch
# pingpong: never run on a GPU yet), from the repo root after building (build/kcs exists), on an
# H100 or H200; everything to $OUT:
#   1. every gemm case on the wgmma rows (cooperative and ping-pong), twice each (--determinism);
#   2. compute-sanitizer memcheck and racecheck on the small ones, wgmma-pingpong only;
#   3. the tensor-core perf cases timed on wgmma, wgmma-pingpong and cuBLAS in one run, and the
#      ratios (the attention-scores shape, k = 128, is the one ping-pong is for).
set -u
OUT=${OUT:-pingpong_gpu_out}
mkdir -p "$OUT"
kcs=build/kcs
timeout 150 $kcs run --backend cuda --kernel 'wgmma*' --determinism --no-save --results "$OUT/cases.json" gemm \
    > "$OUT/cases.log" 2>&1
echo "cases: exit $?"; tail -1 "$OUT/cases.log"; grep -E '^(FAIL|ERROR)' "$OUT/cases.log" | head
sanitizer=$(dirname "$(readlink -f "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")/compute-sanitizer
small=$($kcs list gemm | grep -v '\[large\]' | awk '{print $1}' | grep tensor)
for tool in memcheck racecheck; do
    timeout 90 "$sanitizer" --tool $tool --error-exitcode 99 $kcs run --backend cuda --kernel wgmma-pingpong \
        --in-process --no-save --results /tmp/pingpong-$tool.json $small > "$OUT/$tool.log" 2>&1
    echo "$tool: exit $? (99: errors found)"; grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|passed,' "$OUT/$tool.log"
done
timeout 200 $kcs run --backend cuda --kernel '[wc][gu][mb]*' --benchmark --min-time 0.1 --quiet \
    --results "$OUT/perf.json" gemm/f16-tensor-4096 gemm/bf16-tensor-4096 gemm/f16-tensor-8192 \
    gemm/bf16-tensor-8192 gemm/bf16-tensor-attention-scores-8192x8192x128 > "$OUT/perf.log" 2>&1
echo "perf: exit $?"
python3 - "$OUT/perf.json" <<'PY'
import json, sys
rows = {}
for r in json.load(open(sys.argv[1]))["results"]:
    median = ((r.get("timing") or {}).get("kernel") or {}).get("median_s")
    if median and r["status"] == "pass":
        rows.setdefault(r["case"], {})[r["kernel"]] = median
for case, kernels in rows.items():
    peer = min((v for k, v in kernels.items() if k.startswith("cublas")), default=None)
    for kernel in ("wgmma", "wgmma-pingpong"):
        if kernel in kernels and peer:
            print(f"{case:50} {kernel:16} {kernels[kernel] * 1e3:.4f} ms  cuBLAS {peer * 1e3:.4f} ms  "
                  f"{peer / kernels[kernel]:.3f} of its speed")
PY
