#!/bin/sh
# check.sh: the tests, from a fresh clone: set up, build, then `ninja check`
# (the tests and every case on every backend this machine has; docs/checking.md).
set -eu
cd "$(dirname "$0")/.."
tools/setup.sh "$@"
exec ninja check
