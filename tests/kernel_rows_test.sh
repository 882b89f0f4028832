#!/bin/sh
# kernel_rows_test.sh: every kernel row of the build checked against the op
# table and the cases (`kcs rows`, runner/rows.c; docs/runner.md "Kernel
# rows"): in build/kcs (reference, OpenCL, CUDA, whether or not a device is
# there) and in build/kcs-saboteur (the saboteur, fault and replica rows of
# tests/), each row's op and dtype are known and some case of cases/ or
# tests/cases/ selects it. Every OpenCL row also has a case of each pass of
# the Oclgrind sanitizer (tags sanitize and sanitize-unoptimised), checked here
# where Oclgrind need not be installed. Then the check itself: a row that no
# case selects fails, named, and so does a reference row whose only case is
# tagged no-reference; the --tag selection lists exactly the tagged cases.
# A row of an unknown op or dtype: tests/bad_rows_test.c.
# usage: tests/kernel_rows_test.sh build/kcs
set -u
kcs=$(realpath "$1")
saboteur=$(dirname "$kcs")/kcs-saboteur
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# rows_pass NAME COMMAND...: `kcs rows` exits 0, says nothing on standard error, and its
# summary counts the rows it listed.
rows_pass() {
    name=$1
    shift
    "$@" > "$work/$name.out" 2> "$work/$name.err"
    status=$?
    listed=$(($(wc -l < "$work/$name.out") - 1))
    if [ $status -ne 0 ] || [ -s "$work/$name.err" ] ||
        ! tail -1 "$work/$name.out" | grep -q "^$listed kernel rows, "; then
        cat "$work/$name.err"
        grep -v " cases\?$" "$work/$name.out"
        fail "$*: exit $status, expected 0 and a summary of the $listed rows listed"
    else
        echo "ok: $name: $(tail -1 "$work/$name.out")"
    fi
}
rows_pass build "$kcs" rows
rows_pass saboteur "$saboteur" rows
for backend in saboteur replica; do
    grep -q "^$backend " "$work/saboteur.out" || fail "kcs-saboteur rows listed no row of backend $backend"
done
grep -q "^opencl " "$work/build.out" && for tag in sanitize sanitize-unoptimised; do
    rows_pass "opencl-$tag" "$kcs" rows --backend opencl --tag $tag
done

# A folder whose one case is sumsq f32 tagged no-reference: no reference row can run it (the
# runner leaves it out there), so each reference row, and every row of another op or dtype,
# is named as selected by no case; each OpenCL sumsq f32 row is selected by that one case.
mkdir -p "$work/cases"
cat > "$work/cases/one.md" <<'EOF'
```kcs-case
case: f32-n7
op: sumsq
dtype: f32
sizes: n=7
input x: normal
expect: oracle
tags: no-reference
```
EOF
"$kcs" rows --cases "$work/cases" > "$work/one.out" 2> "$work/one.err"
status=$?
reference_row=$(awk '$1 == "reference" && $2 == "sumsq" && $3 == "f32" { print $4; exit }' "$work/build.out")
[ $status -eq 1 ] || fail "kcs rows with one case: exit $status, expected 1"
grep -q "^reference  *sumsq  *f32  *$reference_row  *NO CASE$" "$work/one.out" ||
    fail "the reference's sumsq f32 row $reference_row was not listed as selected by no case"
cause="no case of $work/cases selects it, so no run of those cases runs it: add a case of sumsq f32, or give the row"
grep -qF "kcs rows: reference: kernel row sumsq f32 $reference_row: $cause an .unreachable that says why none can be" \
    "$work/one.err" ||
    { cat "$work/one.err"; fail "the reference's unreachable sumsq f32 row was not named with its cause"; }
grep -q "^reference  *gemm  *f32 .* NO CASE$" "$work/one.out" || fail "a gemm row was not listed as selected by no case"
opencl_rows=$(awk '$1 == "opencl" && $2 == "sumsq" && $3 == "f32"' "$work/build.out" | wc -l)
[ "$(grep -c "^opencl  *sumsq  *f32 .* 1 case$" "$work/one.out")" -eq "$opencl_rows" ] ||
    fail "not each of the $opencl_rows OpenCL sumsq f32 rows was selected by the one case"
unreached=$(grep -c "NO CASE$" "$work/one.out")
[ "$(grep -c "^kcs rows: .*: no case of" "$work/one.err")" -eq "$unreached" ] && [ "$unreached" -gt 0 ] &&
    grep -q "^kcs rows: $unreached problems in " "$work/one.err" ||
    fail "the $unreached rows listed as selected by no case were not each named on standard error"
[ $fails -eq 0 ] && echo "ok: with one case, the $unreached rows it cannot reach are named, each with its cause"

# Usage: no PATTERN (rows are chosen by --backend and --kernel), and no tag the case files do not have.
"$kcs" rows sumsq > "$work/usage.out" 2>&1
[ $? -eq 2 ] && grep -q "takes no PATTERN" "$work/usage.out" ||
    { cat "$work/usage.out"; fail "kcs rows took a pattern"; }
"$kcs" list --tag sanitise > "$work/usage.out" 2>&1
[ $? -eq 2 ] && grep -qx "kcs: --tag needs a tag of the case files, not 'sanitise' (known: perf large no-reference sanitize sanitize-unoptimised)" \
    "$work/usage.out" ||
    { cat "$work/usage.out"; fail "an unknown --tag was not refused naming the known ones"; }

# --tag selects exactly the cases whose tags line has the tag (counted here from the Markdown,
# where each tag follows a space: "tags: perf large").
for tag in sanitize sanitize-unoptimised perf; do
    for folder in cases tests/cases; do
        written=$(cat "$root/$folder"/*.md | grep -c "^tags:.* $tag\( \|$\)")
        listed=$("$kcs" list --cases "$root/$folder" --tag $tag | wc -l)
        [ "$written" -eq "$listed" ] ||
            fail "kcs list --cases $folder --tag $tag listed $listed cases, but $written are tagged $tag"
    done
done

[ $fails -eq 0 ] || exit 1
echo "kcs rows and --tag: all passed"
