#!/bin/sh
# empty_run_test.sh: a run that validated nothing fails, with the reason
# (docs/runner.md, "Exit status"): a pattern that matches no case (kcs list too), a
# misspelt command, a device, platform or backend asked for that ran
# nothing, a run whose only passes compared no element (empty outputs), an option given twice, an expectation line that matched nothing
# under --strict-expectations, a results file that cannot be written (found
# before the run, not after, and before any output file is made: a JUnit
# path that is a folder leaves no empty results file), or one that would
# land on a case or golden file. A long unit is named while it runs (a heartbeat).
# And the same run with something to check passes.
# usage: tests/empty_run_test.sh build/kcs
set -u
kcs=$(realpath "$1")
source=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
failures=0
fail() { echo "FAIL: $*"; cat run.log; failures=$((failures + 1)); }
# expect STATUS TEXT ARGS...: runs kcs with ARGS, wants exit STATUS and TEXT in its output.
expect() {
    want=$1 text=$2
    shift 2
    "$kcs" "$@" > run.log 2>&1
    got=$?
    [ "$got" -eq "$want" ] || fail "kcs $*: exit $got, not $want"
    grep -qF -- "$text" run.log || fail "kcs $*: no '$text' in its output"
}
case=sumsq/f64-n93
expect 0 "1 passed, 0 failed, 0 skipped" run --backend reference --no-save --results r.json "$case"
grep -qF "[1/1] $case" run.log || fail "no progress line [1/1] $case"
# A unit that runs long is named while it runs, and its ERROR line names device and kernel.
kcs_saboteur=$(dirname "$kcs")/kcs-saboteur
"$kcs_saboteur" run --backend saboteur --time-limit 4 --no-save --results s.json "$case" > run.log 2>&1
grep -qF "still running $case on saboteur:0 hangs" run.log || fail "no heartbeat for the hung unit"
grep -q "^ERROR  *$case  *saboteur:0 hangs  *no progress" run.log || fail "the hang's ERROR line lacks device or kernel"
expect 2 "no case in" run --backend reference --no-save --results r.json 'sumsq/['
# kcs list too: a script reading the list must not take a mistyped pattern for an empty selection.
expect 2 "no case in" list 'sumsq/['
expect 2 "no case in" list --json 'no-such-case'
expect 0 "$case" list "$case"
expect 2 "it is no command" frob --no-save --results r.json
expect 1 "nothing was checked" run --device 99 --no-save --results r.json "$case"
expect 1 "nothing was checked" run --platform no-such-platform --no-save --results r.json "$case"
expect 1 "no kernel of reference for sumsq f64 matches --kernel no-such-kernel" run --backend reference \
    --kernel no-such-kernel --no-save --results r.json "$case"
expect 2 "given twice" run --results a.json --results b.json "$case"
# A case whose outputs have no element (gemm m = 0) passes on its guards and
# inputs, but a run of such cases alone compared no value: no zero-element pass.
expect 1 "nothing was checked: no result failed or passed comparing an output element" run --backend reference \
    --no-save --results r.json gemm/f32-m0
grep -q "^PASS  *gemm/f32-m0 .*no output element to compare" run.log || fail "gemm/f32-m0's line did not say it compared nothing"
expect 0 "2 passed, 0 failed, 0 skipped" run --backend reference --no-save --results r.json gemm/f32-m0 "$case"
expect 2 "cannot write the results file" run --backend reference --results no-such-folder/r.json "$case"
# Every output is tried before any is made: a JUnit path that is a folder leaves no empty results file.
mkdir junit-folder
expect 2 "cannot write the JUnit file junit-folder: it is a folder" run --backend reference --no-save \
    --results fresh.json --junit junit-folder "$case"
[ ! -e fresh.json ] || fail "the results file was made before the JUnit path was refused"
expect 2 "cannot write the JUnit file ./same.json: the results file is that file too" run --backend reference \
    --no-save --results same.json --junit ./same.json "$case"
# Nor may a run's files land on the case or golden files.
mkdir golden-copy && cp "$source/golden/MANIFEST" golden-copy/ && cp -r "$source/cases" cases-copy
expect 2 "it is in the golden folder (--golden), which only kcs golden writes" run --cases cases-copy \
    --golden golden-copy --backend reference --no-save --results golden-copy/MANIFEST "$case"
cmp -s golden-copy/MANIFEST "$source/golden/MANIFEST" || fail "the golden MANIFEST was changed"
expect 2 "cannot write the JUnit file cases-copy/sumsq.md: it is in the case folder (--cases)" run --cases cases-copy \
    --golden golden-copy --backend reference --no-save --results r.json --junit cases-copy/sumsq.md "$case"
cmp -s cases-copy/sumsq.md "$source/cases/sumsq.md" || fail "a case file was changed"
printf 'reference * * sumsq/* no-such-kernel fail a misspelt kernel\n' > misspelt.txt
expect 0 "this expectation matched no result" run --backend reference --no-save --results r.json \
    --expectations misspelt.txt "$case"
expect 1 "this expectation matched no result" run --backend reference --no-save --results r.json \
    --expectations misspelt.txt --strict-expectations "$case"
if "$kcs" devices --backend cuda 2>/dev/null | grep -q "^cuda:"; then
    echo "(a CUDA device is here: the check of a CUDA backend without a device does not apply)"
elif "$kcs" devices 2>&1 | grep -q "^cuda"; then
    expect 1 "backend cuda was asked for by name and checked nothing" run --backend cuda --no-save \
        --results r.json "$case"
fi
[ $failures -eq 0 ] || { echo "$failures failed"; exit 1; }
echo "empty runs: all fail with their reason"
