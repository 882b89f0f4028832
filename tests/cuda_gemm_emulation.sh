#!/bin/sh
# cuda_gemm_emulation.sh: builds and runs tests/cuda_gemm_emulation.cpp (see
# there): cuda/gemm/simt.cu's tiled kernels emulated on the host, no GPU needed.
#
#     tests/cuda_gemm_emulation.sh [random SEED [COUNT]]
#     tests/cuda_gemm_emulation.sh --build DIR      only build, DIR/emulation
#     tests/cuda_gemm_emulation.sh --built DIR [random SEED [COUNT]]   only run DIR/emulation
#
# Needs g++ with C++20 (std::barrier); -D flags in CXXFLAGS reach the
# tunables (e.g. CXXFLAGS=-DKCS_GEMM_F32_BLOCK_K=16). `ninja` builds it with
# the other test binaries (--build build/emulation/gemm) and `ninja check`
# only runs it (--built), as tests/cuda_kernels_emulation.sh.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
case "${1:-}" in
--build | --built)
    mode=$1 work=$2
    shift 2
    ;;
*)
    mode=both work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    ;;
esac
if [ "$mode" = --built ]; then
    "$work/emulation" "$@"
    exit
fi
mkdir -p "$work"
rm -f "$work/emulation" # nothing of an earlier build may stand in for one that fails now
python3 - "$root/cuda/gemm/simt.cu" "$work" <<'PY'
import re, sys
source = open(sys.argv[1]).read()
tunables = source[source.index("#ifndef KCS_GEMM_F32_BLOCK_M"):source.index("namespace {")]
device = source[source.index("namespace {"):source.index("/* End of what runs without a device. */")]
# every 16-byte load and store is checked for alignment and bounds
device, count = re.subn(r"(\*reinterpret_cast<(const )?(float4|double2) \*>\(p\))",
                        r'(emu_check(p, 16, "vector"), \1)', device)
assert count == 4, "cuda/gemm/simt.cu's vector loads and stores changed shape: update this script"
open(sys.argv[2] + "/gemm_device.inc", "w").write(tunables + device + "\n} // namespace\n")
PY
${CXX:-g++} -std=c++20 -O2 -fno-strict-aliasing -Wall -Wno-unknown-pragmas -Wno-unused-function -Wno-unused-variable \
    ${CXXFLAGS:-} -I"$root/harness" -I"$root/ops" -I"$root/ref" -I"$root/tests" -I"$work" "$root/tests/cuda_gemm_emulation.cpp" -o "$work/emulation" -lboost_context -lpthread
[ "$mode" = --build ] && exit 0
"$work/emulation" "$@"
