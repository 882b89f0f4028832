#!/bin/sh
# configure_rerun_test.sh: configure.py run again with nothing changed leaves ninja no work.
#
#   sh tests/configure_rerun_test.sh [RUNNER]   (the runner is not used)
#
# configure.py writes C sources (the op list, the kernel tables, the backend
# lists), pkg-config files and the install manifest; rewriting one whose text
# did not change would recompile it and relink everything built from it. In a
# build folder of its own (the reference backend only, -O0: seconds): every
# object made from a generated source is built, configure.py runs again with
# the same options, and then no file but build.ninja may have been rewritten
# and `ninja -n` of those objects must say "no work to do".
set -eu
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
build=$work/build
fail() { echo "FAIL: $*"; exit 1; }
configure() { python3 configure.py --build-dir "$build" --no-cuda --no-opencl --cflags=-O0 > "$work/configure.log" ||
    { cat "$work/configure.log"; fail "configure.py failed"; }; }

configure
generated=$(find "$build" -name '*.c' | sort)
[ -n "$generated" ] || fail "configure.py generated no C source under $build"
targets=$(for source in $generated; do
    ninja -f "$build/build.ninja" -t query "$source" | sed -n 's/^ *\(.*\.o\)$/\1/p'
done | sort -u)
[ -n "$targets" ] || fail "no object is built from the generated sources"
ninja -f "$build/build.ninja" $targets > "$work/ninja.log" || { cat "$work/ninja.log"; fail "the first build failed"; }
echo "built $(echo "$targets" | wc -l) objects from $(echo "$generated" | wc -l) generated sources"

stamp() { find "$build" -type f ! -name build.ninja ! -name '.ninja_*' -printf '%T@ %p\n' | sort -k2; }
stamp > "$work/before"
configure
stamp > "$work/after"
rewritten=$(diff "$work/before" "$work/after" | sed -n 's/^> [^ ]* //p')
[ -z "$rewritten" ] || fail "configure.py run again rewrote files it had not changed: $rewritten"
plan=$(ninja -f "$build/build.ninja" -n $targets)
[ "$plan" = "ninja: no work to do." ] || fail "after configure.py ran again, ninja has work: $plan"
echo "configure_rerun: configure.py run again rewrote nothing, ninja: no work to do"
