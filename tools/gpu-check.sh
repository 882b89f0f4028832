#!/bin/sh
# gpu-check.sh: configure and build kcs on a GPU machine where nothing can be
# installed (see ../shared/GPU.md): the Debian packages kcs needs are given
# unpacked (dpkg -x) in DEPS, and NVIDIA's OpenCL driver and POCL are
# registered with the ICD loader through OCL_ICD_VENDORS.
#
#     tools/gpu-check.sh DEPS [configure.py options]
#
# DEPS holds usr/include and usr/lib/x86_64-linux-gnu of opencl-c-headers,
# libjansson-dev, nettle-dev and libcmocka-dev (and their library packages).
# Source this script's environment lines before running build/kcs by hand.
set -eu
deps=$(realpath "$1")
shift
export CPATH="$deps/usr/include"
export LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu"
export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p /tmp/kcs-vendors
[ -e /usr/local/nvidia/lib64/libnvidia-opencl.so.1 ] &&
    echo /usr/local/nvidia/lib64/libnvidia-opencl.so.1 > /tmp/kcs-vendors/nvidia.icd
echo libpocl.so.2 > /tmp/kcs-vendors/pocl.icd
export OCL_ICD_VENDORS=/tmp/kcs-vendors
python3 configure.py --opencl-include "$deps/usr/include" "$@"
ninja
