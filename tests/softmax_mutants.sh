#!/bin/sh
# softmax_mutants.sh: the attention-shaped softmax cases exercise the merge of
# empty pieces of a row in the real OpenCL kernels. Two mutants of
# opencl/softmax.cl (tests/opencl-mutants/, built as build/mutants/kcs-NAME)
# break group-online's handling of a piece that holds nothing but -inf:
#   softmax-online-merge-lets-empty-in  the tree merge of two work-items'
#                                       (max, sum) lets an empty side in
#   softmax-online-empty-trip           a work-item's trip of four vectors is
#                                       summed without masking -inf, which only
#                                       matters while its running max is -inf
# On every OpenCL device here (POCL on this machine; NVIDIA's on a GPU machine,
# tools/gpu-check.sh), each mutant's group-online must fail every softmax case
# whose input is an attention mask (cases/softmax.md, "input x: attention")
# and pass every other softmax case: the cases before the attention-shaped ones
# could not see these mistakes. The other variants take the row's max before
# any sum and fail nothing, except where they hand a row to group-online's
# kernel (group-registers, for rows too long for its registers and local
# memory): there they fail attention-shaped cases only.
#
#     tests/softmax_mutants.sh build/kcs build/mutants
set -u
runner=$1
mutants=$2
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

if ! "$runner" devices --backend opencl 2>/dev/null | grep -q "^opencl:"; then
    echo "SKIP: no OpenCL device here"
    exit 0
fi

# The cases whose input is an attention mask, from the case file itself.
awk '/^case:/ { name = $2 } /^input x: attention / { print "softmax/" name }' "$root/cases/softmax.md" \
    > "$work/attention"
[ -s "$work/attention" ] || fail "no attention-shaped cases in cases/softmax.md"

for mutant in softmax-online-merge-lets-empty-in softmax-online-empty-trip; do
    "$mutants/kcs-$mutant" run --backend opencl --skip-large --no-save --results "$work/$mutant.json" softmax \
        > "$work/$mutant.log" 2>&1
    before=$failures
    # every attention case fails group-online on every device, and nothing else fails
    while read -r case; do
        if grep -q "^PASS  $case  *opencl:[0-9]* *group-online " "$work/$mutant.log" ||
            ! grep -q "^FAIL  $case  *opencl:[0-9]* *group-online " "$work/$mutant.log"; then
            fail "$mutant: group-online did not fail $case"
        fi
    done < "$work/attention"
    # Another variant may fail an attention case too, where it runs the mutated
    # code: group-registers launches group-online's kernel for a row it can hold
    # neither in registers nor in local memory (f64 rows of 20000 on NVIDIA's
    # OpenCL, not on POCL). Any failure of a case that is not attention-shaped
    # is a mistake of the test's premise: the old cases cannot see this one.
    grep "^FAIL \|^ERROR" "$work/$mutant.log" | while read -r outcome case device kernel rest; do
        if ! grep -qx "$case" "$work/attention"; then
            echo "FAIL: $mutant: $outcome $case $device $kernel $rest"
            echo x >> "$work/unexpected"
        fi
    done
    if [ -s "$work/unexpected" ]; then
        fail "$mutant failed where only the attention-shaped cases on group-online should"
        rm "$work/unexpected"
    fi
    grep -q "^PASS  softmax/f32-masked-cols33 .* group-online" "$work/$mutant.log" ||
        fail "$mutant: group-online did not pass the randomly masked softmax/f32-masked-cols33"
    [ $failures -eq "$before" ] &&
        echo "ok: $mutant fails group-online on the $(wc -l < "$work/attention") attention-shaped cases, passes the rest"
done

if [ $failures -ne 0 ]; then
    echo "softmax mutants: $failures failed"
    exit 1
fi
echo "softmax mutants: the attention-shaped cases catch every broken merge of empty pieces"
