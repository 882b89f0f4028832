#!/bin/sh
# check.sh: the tests, from a fresh clone: set up, build, then `ninja check`
# (unit tests, then every case on every backend this machine has).
set -eu
cd "$(dirname "$0")/.."
tools/setup.sh "$@"
exec ninja check
