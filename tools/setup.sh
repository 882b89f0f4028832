#!/bin/sh
# setup.sh: installs what kcs needs from Debian's packages (only what is
# missing), then configures the build. Used by tools/suite.sh and
# tools/check.sh; safe to run again. Extra arguments go to configure.py.
set -eu
cd "$(dirname "$0")/.."

packages="gcc g++ git ninja-build python3 python3-matplotlib python3-numpy python3-jinja2 python3-markdown-it
python3-pil libcmocka-dev libboost-context-dev
libjansson-dev nettle-dev ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo chromium
clang libclang-rt-14-dev valgrind oclgrind slurm-wlm munge"
missing=""
for package in $packages; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
        missing="$missing $package"
done
if [ -n "$missing" ]; then
    echo "setup: installing$missing"
    if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing
fi
python3 configure.py "$@"
