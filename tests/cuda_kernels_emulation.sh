#!/bin/sh
# cuda_kernels_emulation.sh: builds and runs tests/cuda_kernels_emulation.cpp
# (see there): cuda/elementwise.cu, cuda/softmax.cu and the anneal steps'
# cuda/assign.cu, reduce.cu, update.cu and energy.cu emulated on the host,
# under AddressSanitizer and UBSan, no GPU needed.
#
#     tests/cuda_kernels_emulation.sh [--quick] [elementwise|softmax|assign|reduce|update|energy]
#     tests/cuda_kernels_emulation.sh --build DIR      only build, DIR/emulation
#     tests/cuda_kernels_emulation.sh --built DIR [--quick] [...]   only run DIR/emulation
#
# Each source is rewritten as host C++ (the Python below): common.cuh becomes
# tests/cuda_kernels_emulation.h, __shared__ becomes static, the qualifiers
# and launch bounds go, kernel<<<...>>>(args) becomes
# emu_launch(kernel, ...)(args), and cooperative_groups and cuda/async_copy.cuh
# (cp.async, mbarriers, the cluster's barrier) are the emulation's (clusters:
# cudaLaunchKernelEx). Needs g++ with C++20.
# Every CUDA thread is a fiber (tests/cuda_threads_emulation.h); --quick (a
# subset that still reaches every kernel configuration; see the .cpp) runs in
# about 6 CPU seconds, after a build under AddressSanitizer of about 70. So
# `ninja` builds it with the other test binaries (--build
# build/emulation/kernels) and `ninja check` only runs it (--built), and the
# build is paid again only when one of its sources changes.
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
    ASAN_OPTIONS=detect_leaks=0 "$work/emulation" "$@"
    exit
fi
mkdir -p "$work"
# Nothing of an earlier build may stand in for a part that fails to build now.
rm -f "$work/emulation" "$work"/*.o
for name in elementwise softmax assign reduce update energy; do
    python3 - "$root/cuda/$name.cu" "$work/$name.cpp" <<'PY'
import re
import sys

source = open(sys.argv[1]).read()
# The backend's device-only headers are inlined, to be rewritten with the source.
for header in ("anneal.cuh", "grid_sum.cuh", "load_streaming.cuh", "vector_of.cuh"):
    source = source.replace(f'#include "{header}"', open(sys.argv[1].rsplit("/", 1)[0] + "/" + header).read())

for include in ["#include \"async_copy.cuh\"",  # tests/cuda_kernels_emulation.h has the functions softmax.cu uses
                "#include <cub/device/device_radix_sort.cuh>", "#include <cuda_fp16.h>", "#include \"half.cuh\"",
                "#include <cuda/std/limits>", "#include <cub/device/device_reduce.cuh>",
                "#include <cooperative_groups.h>",  # the cluster kernel: tests/cuda_kernels_emulation.h has its cluster_group
                "#include <cub/device/device_scan.cuh>"]:
    source = source.replace(include, "")
source = source.replace('#include "common.cuh"', '#include "cuda_kernels_emulation.h"')
source = source.replace("extern __shared__ __align__(16) unsigned char dynamic_shared[];",
                        "unsigned char *dynamic_shared = emu_dynamic_shared;")
source = source.replace("__shared__ __align__(16)", "alignas(16) static").replace("__shared__", "static")


def drop_balanced(text, word):
    out, i = [], 0
    while True:
        j = text.find(word + "(", i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:j])
        k, depth = j + len(word), 0
        while True:
            if text[k] == "(":
                depth += 1
            elif text[k] == ")":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        i = k + 1


source = drop_balanced(source, "__launch_bounds__")
source = re.sub(r"\b__global__\s+", "", source)
source = re.sub(r"\b__host__\s+", "", source)
source = re.sub(r"\b__device__\s+", "", source)
source = source.replace("__forceinline__", "inline").replace("__restrict__", "__restrict")

# kernel<<<a, b, c, d>>>(  ->  emu_launch(kernel, a, b, c, d)(
source, launches = re.subn(r"([A-Za-z_][\w:]*(?:<[^;<>]*>)?)\s*<<<(.*?)>>>\s*\(",
                           lambda m: "emu_launch(" + m.group(1) + ", " + m.group(2) + ")(", source, flags=re.S)
assert launches > 0, sys.argv[1] + ": no kernel launches found"
open(sys.argv[2], "w").write(source)
PY
done
# -g1: line tables only, all that AddressSanitizer's and UBSan's reports name (function, file and
# line of each frame); full debug information (-g) made the build half as long again.
flags="-std=c++20 -O1 -g1 -fsanitize=address,undefined -fno-sanitize-recover=all -fno-strict-aliasing -Wall"
flags="$flags -Wno-unknown-pragmas -Wno-unused-function -I$root/harness -I$root/ops -I$root/ref -I$root/tests"
for name in elementwise softmax assign reduce update energy; do
    ${CXX:-g++} $flags ${CXXFLAGS:-} -c "$work/$name.cpp" -o "$work/$name.o" &
done
${CXX:-g++} $flags ${CXXFLAGS:-} -c "$root/tests/cuda_kernels_emulation.cpp" -o "$work/driver.o" &
${CC:-gcc} -std=c11 -O1 -g -fsanitize=address -I"$root/harness" -c "$root/harness/status.c" -o "$work/status.o" &
wait
${CXX:-g++} $flags "$work"/elementwise.o "$work"/softmax.o "$work"/assign.o "$work"/reduce.o "$work"/update.o \
    "$work"/energy.o "$work"/driver.o "$work"/status.o \
    -o "$work/emulation" -lboost_context -lpthread
[ "$mode" = --build ] && exit 0
ASAN_OPTIONS=detect_leaks=0 "$work/emulation" "$@"
