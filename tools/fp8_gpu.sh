#!/bin/bash
# fp8_gpu.sh: the GPU checks of the wgmma-fp8 row (cuda/gemm/fp8_wgmma.cu), on an
# H100 or H200, from the repo root after building (build/kcs exists):
#   1. every FP8 case on CUDA, the large ones included (wgmma-fp8 and cublaslt),
#      and in the same run (--benchmark --min-time 0.2) the perf cases
#      fp8_e4m3-4096 and -8192 timed: one run prepares each case once (the
#      8192^3 inputs take the host seconds), and --benchmark checks every
#      case it runs, timed or not;
#   2. compute-sanitizer memcheck and racecheck on the FP8 cases but the two perf
#      cubes, wgmma-fp8 only;
#   3. the kernel medians of wgmma-fp8 and cublaslt on the perf cases, from
#      step 1's results, and their ratio.
# Everything goes to $OUT (6 files: logs, the results JSON, summary.txt); each
# step has its own time limit so that the whole stays under 150 s even if a
# kernel hangs.
#     OUT=/tmp/out tools/fp8_gpu.sh
set -u
OUT=${OUT:-fp8_gpu_out}
mkdir -p "$OUT"
kcs=build/kcs
start=$(date +%s)
elapsed() { echo "$(($(date +%s) - start)) s"; }
summary="$OUT/summary.txt"
say() { echo "$*" | tee -a "$summary"; }

say "== $(git rev-parse --short HEAD 2>/dev/null) $(nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader 2>/dev/null | head -1)"

say "== 1. every FP8 case on CUDA, the perf ones timed $(elapsed)"
timeout 70 $kcs run --backend cuda --benchmark --min-time 0.2 --no-save --time-limit 40 \
    --results "$OUT/cases.json" 'gemm/fp8*' > "$OUT/cases.log" 2>&1
say "exit $?"
grep -E '^(PASS|FAIL|ERROR|SKIP) ' "$OUT/cases.log" | grep -E 'wgmma-fp8|cublaslt' | cut -c1-220 | tee -a "$summary"
tail -1 "$OUT/cases.log" | tee -a "$summary"

say "== 2. compute-sanitizer on the small FP8 cases, wgmma-fp8 only $(elapsed)"
sanitizer=$(dirname "$(readlink -f "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")/compute-sanitizer
small=$($kcs list 'gemm/fp8*' | awk '{ print $1 }' | grep -v -e '-4096$' -e '-8192$')
for tool in memcheck racecheck; do
    timeout 35 "$sanitizer" --tool $tool --target-processes all --error-exitcode 99 \
        $kcs run --backend cuda --kernel wgmma-fp8 --in-process --no-save --time-limit 20 \
        --results /tmp/fp8_gpu_$tool.json $small > "$OUT/$tool.log" 2>&1
    say "$tool: exit $? (99: the tool found errors; 124: timed out) $(elapsed)"
    grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|passed, .* failed' "$OUT/$tool.log" | tee -a "$summary"
done

say "== 3. kernel medians of the perf cases (step 1) $(elapsed)"
python3 - "$OUT/cases.json" <<'PY' | tee -a "$summary"
import json, sys
results = json.load(open(sys.argv[1]))["results"]
medians = {}
for r in results:
    kernel = (r.get("timing") or {}).get("kernel") or {}
    if r.get("kernel") in ("wgmma-fp8", "cublaslt") and "perf" in r.get("tags", []):
        median = kernel.get("median_s")
        medians[(r["case"], r["kernel"])] = median
        rate = r["flops"] / median / 1e12 if median else float("nan")
        ceiling = (r.get("timing") or {}).get("ceiling") or {}
        print(f"{r['case']:24} {r['kernel']:10} {r['status']:5} median "
              f"{median * 1e3 if median else float('nan'):.4f} ms  {rate:7.1f} TFLOP/s  "
              f"of ceiling {ceiling.get('fraction', float('nan')):.3f}  {r.get('message', '')[:80]}")
for case in sorted({c for c, _ in medians}):
    ours, peer = medians.get((case, "wgmma-fp8")), medians.get((case, "cublaslt"))
    if ours and peer:
        print(f"{case}: wgmma-fp8 runs at {peer / ours:.3f} of cuBLASLt's speed (its time / ours)")
PY
say "done $(elapsed)"
