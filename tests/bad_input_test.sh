#!/bin/sh
# bad_input_test.sh: every class of bad input reaches the runner as a
# message naming the file, case and cause; the other cases still run and
# pass; nothing crashes; the exit status is 1. Also a kernel build that
# fails (OpenCL, where built), and a case too big for the device.
# usage: tests/bad_input_test.sh build/kcs
set -u
kcs=$(realpath "$1")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
expect_in() { grep -qF -- "$1" run.log || { fail "no '$1' in the run's output"; }; }

mkdir cases golden
cat > cases/bad.md <<'CASES'
# Cases that are wrong in every way a person can get them wrong

```kcs-case
case: good
op: sumsq
dtype: f64
sizes: n=93
input x: normal
expect: golden
```

A GEMM whose arrays have more elements than size_t counts (m = n = k = 2^32):

```kcs-case
case: size-overflow
op: gemm
dtype: f32
sizes: m=4294967296 n=4294967296 k=4294967296
input a: normal
input b: normal
input c: normal
expect: oracle
```

```kcs-case
case: golden-missing
op: sumsq
dtype: f64
sizes: n=7
input x: normal
expect: golden
```

```kcs-case
case: golden-corrupt
op: sumsq
dtype: f64
sizes: n=8
input x: normal
expect: golden
```

```kcs-case
case: golden-truncated
op: sumsq
dtype: f32
sizes: n=9
input x: normal
expect: golden
```

```kcs-case
case: golden-unlisted
op: sumsq
dtype: f32
sizes: n=10
input x: normal
expect: golden
```

```kcs-case
case: unknown-key
op: sumsq
dtype: f64
colour: red
expect: golden
```

```kcs-case
case: unknown-op
op: frobnicate
dtype: f64
sizes: n=3
input x: normal
expect: oracle
```

```kcs-case
case: unknown-dtype
op: sumsq
dtype: f128
expect: oracle
```

```kcs-case
case: dtype-the-op-lacks
op: sumsq
dtype: i32
sizes: n=3
input x: integers lo=0 hi=3
expect: oracle
```

A mask laid over rows of 4 elements where the rows have 5:

```kcs-case
case: mask-rows-mismatch
op: softmax
dtype: f32
sizes: rows=2 cols=5
input x: attention cols=4 visible=1 step=1
expect: oracle
```

```kcs-case
case: never-closed
op: sumsq
CASES

"$kcs" golden --cases cases --golden golden > golden.log 2>&1 || { cat golden.log; fail "kcs golden"; }
rm golden/bad/golden-missing.s.npy
printf 'x' | dd of=golden/bad/golden-corrupt.s.npy bs=1 seek=130 conv=notrunc 2> /dev/null
head -c 100 golden/bad/golden-truncated.s.npy > t && mv t golden/bad/golden-truncated.s.npy
grep -v "golden-unlisted" golden/MANIFEST > m && mv m golden/MANIFEST

"$kcs" run --cases cases --golden golden --backend reference --no-save --results results.json > run.log 2>&1
status=$?
[ $status -eq 1 ] || fail "exit status $status, not 1"
expect_in "PASS  bad/good"
expect_in "golden/bad/golden-missing.s.npy"
expect_in "golden/bad/golden-corrupt.s.npy has sha256"
expect_in "golden/bad/golden-truncated.s.npy has sha256"
expect_in "golden-unlisted.s.npy"
grep -q "cases/bad.md:[0-9]*: unknown key 'colour'" run.log || fail "no file:line for the unknown key"
expect_in "unknown op 'frobnicate'"
expect_in "unknown dtype 'f128'"
expect_in "sumsq has f16, bf16, f32 and f64 variants, not i32"
expect_in "never closed"
expect_in "case bad/size-overflow: op gemm: array a has more elements than size_t can count"
expect_in "case bad/mask-rows-mismatch: input x: 'attention' has cols=4, but the array's rows (its last axis) have 5 elements"
expect_in "1 passed, 11 failed, 0 skipped"
grep -q '"schema": "kcs-results"' results.json || fail "no results file after the errors"
[ $failures -eq 0 ] && echo "ok: every malformed case and golden file named, the good case passed, exit 1"

# Case files that would write outside their folders or hang the reader: a file
# named ...md (its stem ".." names the cases' golden and saved folders), a case
# named "..", and a FIFO. Each is named with its cause; nothing lands outside.
mkdir -p escape/cases escape/golden escape/saved
cp cases/bad.md escape/cases/good.md
sed -n '/^```kcs-case$/,/^```$/p' cases/bad.md | sed -n '1,8p' > escape/cases/....md
printf '```kcs-case\ncase: ..\nop: sumsq\ndtype: f64\nsizes: n=5\ninput x: normal\nexpect: oracle\n```\n' \
    > escape/cases/dots.md
mkfifo escape/cases/fifo.md
timeout 60 "$kcs" golden --cases escape/cases --golden escape/golden > golden-escape.log 2>&1
timeout 60 "$kcs" run --cases escape/cases --golden escape/golden --backend reference --save-all \
    --save-failures escape/saved --results escape/results.json good/good > run.log 2>&1
[ $? -ne 124 ] || fail "a FIFO among the case files hung the run"
cat golden-escape.log >> run.log
expect_in "....md:0: a case file's name (less .md) must be letters"
expect_in "case name '..' must be letters"
expect_in "fifo.md:0: not a regular file"
[ -z "$(find . -name '*.npy' -not -path './golden/*' -not -path './escape/golden/*' -not -path './escape/saved/*')" ] ||
    fail "a .npy file was written outside the golden and saved folders: $(find . -name '*.npy' | head -3)"
[ $failures -eq 0 ] && echo "ok: case files that would escape their folders or hang are named, nothing escapes"

# A case file alone in its folder that cannot be read: the run names the file, the case and
# the cause rather than only "no cases"; beside a good file, a size too large says so.
one_case() { printf '```kcs-case\ncase: f64-x\nop: sumsq\ndtype: f64\nsizes: n=%s\ninput x: normal\nexpect: oracle\n```\n' "$1"; }
expect_alone() { # FOLDER TEXT: kcs run --cases FOLDER exits 2 naming TEXT
    "$kcs" run --cases "$1" --backend reference --no-save --results alone.json > run.log 2>&1
    status=$?
    [ $status -eq 2 ] || fail "--cases $1: exit $status, not 2"
    grep -qF -- "kcs: no cases in $1: its case files have 1 problem:" run.log || fail "--cases $1: no count of problems"
    expect_in "$2"
}
mkdir negative huge zero fraction text
one_case -1 > negative/sumsq.md
one_case 10^20 > huge/sumsq.md
ln -s /dev/zero zero/sumsq.md
one_case 6.5 > fraction/sumsq.md
one_case ten > text/sumsq.md
expect_alone negative "negative/sumsq.md:5: sumsq/f64-x: size n=-1 is negative: a size is a whole number >= 0"
expect_alone huge "huge/sumsq.md:5: sumsq/f64-x: size n=10^20 is 1e+20, too large: a size is at most 2^53"
expect_alone zero "zero/sumsq.md: not a regular file"
expect_alone fraction "size n=6.5 is not a whole number"
expect_alone text "size n=ten is not a number"
mkdir beside
one_case 100000000000000000000 > beside/huge.md
one_case 7 > beside/good.md
"$kcs" run --cases beside --backend reference --no-save --results beside.json > run.log 2>&1
[ $? -eq 1 ] || fail "a good case beside a huge one: not exit 1"
expect_in "beside/huge.md:5: size n=100000000000000000000 is 1e+20, too large"
grep -q "not a whole number" run.log && fail "a whole size that is too large was called not whole"
"$kcs" run --cases beside --backend reference --no-save --results beside.json huge/f64-x > run.log 2>&1
[ $? -eq 2 ] || fail "a pattern naming only an unreadable case: not exit 2"
expect_in "kcs: no case in beside matches 'huge/f64-x': a case of that name could not be read:"
expect_in "beside/huge.md:5: huge/f64-x: size n=100000000000000000000 is 1e+20, too large"
mkdir bom
printf '\357\273\277' > bom/sumsq.md && one_case 7 >> bom/sumsq.md  # a UTF-8 byte order mark first
"$kcs" run --cases bom --backend reference --no-save --results bom.json > run.log 2>&1 ||
    fail "a case file that begins with a byte order mark was not read"
mkdir nothing
"$kcs" run --cases nothing --no-save --results nothing.json > run.log 2>&1
expect_in "kcs: no cases in nothing (no .md file there holds a kcs-case block)"
# A misspelt --kernel under --quiet: the reason is printed, with the kernels there are.
mkdir good && cp beside/good.md good/
"$kcs" run --cases good --backend reference --kernel blocked-pairwize --quiet --no-save --results quiet.json \
    > run.log 2>&1
[ $? -eq 1 ] || fail "a misspelt --kernel did not fail the run"
expect_in "1 skip: no kernel of reference for sumsq f64 matches --kernel blocked-pairwize (its kernels: blocked-pairwise"
grep -q "see above" run.log && fail "--quiet: the run pointed above, where nothing is"
[ $failures -eq 0 ] && echo "ok: unreadable case files alone in their folder, sizes too large and a misspelt --kernel named"

# A kernel that fails to build: its cases are errors with the build log; the rest run.
if "$kcs" devices --backend opencl 2>/dev/null | grep -q "^opencl:"; then
    KCS_OPENCL_BUILD_OPTIONS="-DKCS_SUMSQ_GROUP_SIZE=not_a_number" "$kcs" run --backend reference,opencl \
        --no-save --results build.json --device 0 sumsq/f64-n7 > run.log 2>&1
    status=$?
    [ $status -eq 1 ] || fail "build failure: exit status $status, not 1"
    expect_in "PASS  sumsq/f64-n7"
    expect_in "failed with CL_BUILD_PROGRAM_FAILURE"
    grep -q "not_a_number" build.json || fail "the build log is not in the results"
    echo "ok: a failed kernel build is an error of its cases, with the log"
    # KCS_OPENCL_BUILD_LOG shows the log of a build that succeeds, and only when asked
    KCS_OPENCL_BUILD_LOG=1 "$kcs" run --backend opencl --no-save --device 0 sumsq/f64-n7 > run.log 2>&1 ||
        fail "KCS_OPENCL_BUILD_LOG=1: the run failed"
    expect_in "build log of opencl/sumsq.cl for "
    "$kcs" run --backend opencl --no-save --device 0 sumsq/f64-n7 > run.log 2>&1
    ! grep -q "build log of" run.log || fail "a build log was printed without KCS_OPENCL_BUILD_LOG"
    echo "ok: KCS_OPENCL_BUILD_LOG prints the logs of builds that succeed"
else
    echo "SKIP the failed-build check: no OpenCL device here"
fi

# Seconds options out of range, or not numbers, are usage errors (exit 2) naming the option and its range;
# values within them run.
for bad in "--min-time 3601|--min-time needs seconds from 0 to 3600" "--min-time 1s|--min-time needs seconds" \
    "--warm-up 61|--warm-up needs seconds from 0 to 60" "--warm-up -1|--warm-up needs seconds" \
    "--time-limit -1|--time-limit needs seconds >= 0"; do
    option=${bad%%|*} message=${bad#*|}
    # shellcheck disable=SC2086 # the option and its value are two words
    "$kcs" run $option --no-save --results options.json sumsq/f64-n7 > run.log 2>&1
    status=$?
    [ $status -eq 2 ] || fail "kcs run $option exited $status, not 2 (a usage error)"
    expect_in "$message"
done
"$kcs" run --backend reference --min-time 0 --warm-up 0 --time-limit 3600 --no-save --results options.json \
    sumsq/f64-n7 > run.log 2>&1 || fail "kcs run with --min-time 0 --warm-up 0 --time-limit 3600 did not pass"
echo "ok: seconds options out of range are usage errors"

if [ $failures -ne 0 ]; then
    echo "--- run output ---"
    cat run.log
    echo "$failures failed"
    exit 1
fi
echo "bad input: all passed"
