#!/bin/sh
# peers_gpu.sh: issue 34's one call on a GPU machine (docs/peers.md): the GEMM
# and softmax perf cases timed by kcs on CUDA, every row warmed up first
# (docs/runner.md, "Warm-up"), then PyTorch eager and compiled on the same
# shapes, timed behind kcs's own hold, into the same results file; then a
# table of each case's rows, fastest first, with their fractions of the
# ceiling. Run from the repository root after building (build/kcs), by a
# python3 that imports torch; the report is `report/kcs_report.py
# $OUT/perf.json` wherever jinja2 is (the GPU machines lack it).
#     OUT=/tmp/out tools/peers_gpu.sh            every GEMM and softmax perf case but
#                                                the SIMT rows' (f32-512, f16-4096, bf16-4096)
#     OUT=/tmp/out tools/peers_gpu.sh 'gemm/f16*'  the perf cases matching the patterns
# Each step has a time limit (KCS_STEP_SECONDS, default 300) so that the table
# is written even if one step runs long; what a stopped step finished is kept.
set -u
OUT=${OUT:-peers_gpu_out}
step=${KCS_STEP_SECONDS:-300}
mkdir -p "$OUT"
if [ $# -gt 0 ]; then
    cases=$(build/kcs list --tag perf "$@" | awk '{ print $1 }')
else
    cases=$(build/kcs list --tag perf gemm softmax | awk '{ print $1 }' |
        grep -v -e '^gemm/f32-512$' -e '^gemm/f16-4096$' -e '^gemm/bf16-4096$')
fi
[ -n "$cases" ] || { echo "peers_gpu.sh: no perf case matches $*"; exit 2; }
timeout "$step" build/kcs run --backend cuda --benchmark --min-time 0.1 --warm-up 0.3 --quiet \
    --results "$OUT/perf.json" $cases > "$OUT/perf.log" 2>&1
echo "kcs run: exit $?"; tail -1 "$OUT/perf.log"
timeout "$step" python3 report/kcs_torch_peers.py --results "$OUT/perf.json" --min-time 0.1 --warm-up 0.3 \
    $cases > "$OUT/torch.log" 2>&1
echo "kcs_torch_peers.py: exit $?"; tail -1 "$OUT/torch.log"
python3 - "$OUT/perf.json" <<'PY'
import json, sys
rows = {}
for r in json.load(open(sys.argv[1]))["results"]:
    timing = r.get("timing") or {}
    median = (timing.get("kernel") or {}).get("median_s")
    if median and r["status"] == "pass":
        fraction = (timing.get("ceiling") or {}).get("fraction")
        rows.setdefault(r["case"], []).append((median, r["kernel"], r.get("kernel_library"), fraction))
for case, timed in rows.items():
    print(case + ": " + ", ".join(f"{kernel}{' (' + library + ')' if library else ''} {median * 1e3:.4f} ms"
                                  + (f" {fraction:.3f}" if fraction else "") for median, kernel, library, fraction
                                  in sorted(timed)))
PY
