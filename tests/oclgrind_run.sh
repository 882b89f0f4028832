#!/bin/sh
# oclgrind_run.sh: runs a command under Oclgrind with the checks kcs relies on,
# and fails when Oclgrind reports anything. The one Oclgrind invocation of kcs:
# `ninja opencl-sanitize` runs the OpenCL kernels through it
# (tests/opencl_sanitize.sh), and tests/opencl_sanitize_mutants.sh shows that
# it catches kernels broken on purpose.
#
#     tests/oclgrind_run.sh [--unoptimised] LOG COMMAND [ARGUMENT...]
#
# Oclgrind (Debian package oclgrind) stands in for the OpenCL platforms: the
# command sees one device, "Oclgrind Simulator", that interprets each kernel's
# LLVM code work-item by work-item. Its checks here:
#   memory accesses (always on): a load or store outside every buffer, global,
#     local, constant or private, and an index past a fixed-size array;
#   --data-races: two work-items touching the same global or local location
#     without a barrier (or, for global memory, a kernel boundary) between
#     them, one of them writing;
#   --check-api: OpenCL calls that fail or break the rules (a launch asking
#     for more local memory than the device has, say).
# --unoptimised builds the kernels with -cl-opt-disable and adds
# --uninitialized: a value read before anything wrote it. Without the
# optimiser, private arrays stay in memory where the checks see them (an index
# past one that the optimiser removes as dead code is UB that another compiler
# may keep), and the uninitialised-value check works: in Oclgrind 21.10 it
# stops at LLVM's `freeze` instruction, which only optimised code holds, and
# crashes on some kernels. It also reports, wrongly, part of a buffer created
# after a smaller one was released as never written, so a command run this
# way should create its buffers once: one kcs case (docs/runner.md).
#
# Oclgrind's exit status is the command's, whatever it found; its reports go
# to LOG, and any report fails this script (printed, with the LOG's path).
# Otherwise the exit status is the command's.
set -u
checks="--check-api --data-races"
if [ "$1" = --unoptimised ]; then
    checks="$checks --uninitialized --build-options -cl-opt-disable"
    shift
fi
log=$1
shift
rm -f "$log"
# shellcheck disable=SC2086 # the checks are words
oclgrind $checks --max-errors 200 --log "$log" "$@"
status=$?
if [ -s "$log" ]; then
    cat "$log"
    echo "oclgrind_run: Oclgrind reported the problems above while running: $* (log: $log)"
    exit 1
fi
exit $status
