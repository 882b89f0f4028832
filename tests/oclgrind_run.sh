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
# crashes on some kernels. It also reports, wrongly, values a kernel wrote past
# the end of a smaller buffer released earlier in the process: a new buffer
# takes a released buffer's number, and the check keeps that number's record of
# what was written, at the old size (tests/oclgrind-limits/recycled_buffer.c).
# So a command run this way must create no buffer after releasing one: one kcs
# case and one kernel row (rows of a case share scratch buffers that grow).
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
