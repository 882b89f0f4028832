#!/bin/sh
# suite.sh: the main job, from a fresh clone: set up, build, run every case
# on every backend and device found, timing the perf cases, and write the
# results file (build/suite-results.json, build/suite-junit.xml).
set -eu
cd "$(dirname "$0")/.."
tools/setup.sh "$@"
ninja
status=0
build/kcs run --benchmark --results build/suite-results.json --junit build/suite-junit.xml ||
    status=$?
echo "results file: $(pwd)/build/suite-results.json"
exit $status
