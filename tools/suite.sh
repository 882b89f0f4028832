#!/bin/sh
# suite.sh: the main job, from a fresh clone: set up, build, run every case
# on every backend and device found, timing the perf cases against the
# device's measured ceilings, then write the HTML report. The last line is
# the path of the report. Extra arguments go to configure.py.
set -eu
cd "$(dirname "$0")/.."
tools/setup.sh "$@"
ninja
status=0
ninja suite || status=$?
ninja report
echo "report: $(pwd)/build/report/index.html"
exit $status
