#!/bin/sh
# references_test.sh: nothing in the tree points to a file or a branch that does not exist
# (tests/references.py says what it takes for a reference, and what it leaves alone on purpose).
#
# 1. The tree: every reference to nothing is one of tests/references-pending.txt, and every
#    line of that file is still found.
# 2. The scan can fail: on a copy of the tree, made a git repository of one branch (main), with
#    one bad reference of each kind planted (a path, a bare file name in a C comment, a
#    Markdown link, a development branch), it names each one with its file and line, exits 1,
#    and names nothing else: not the things planted beside them that are no reference to a
#    file of the tree on purpose (a generated build/ path, patterns, a made-up path in a C
#    string, a file in a fenced command, "the branch").
# usage: tests/references_test.sh [build/kcs]   (the runner is not used)
set -u
export LC_ALL=C  # one collation for sort and comm
python=${KCS_PYTHON:-/usr/bin/python3}
source=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# names FILE: references.py's findings without line numbers, sorted ("FILE: what").
names() { grep -v '^references.py:' "$1" | sed 's/^\([^:]*\):[0-9]*: /\1: /' | sort -u; }
grep -v '^#' "$source/tests/references-pending.txt" | grep -v '^$' | sort -u > "$work/pending.txt"

# 1. The tree.
"$python" "$source/tests/references.py" "$source" > "$work/tree.txt" 2>&1
status=$?
[ "$status" -le 1 ] || fail "references.py on the tree exited $status: $(cat "$work/tree.txt")"
names "$work/tree.txt" > "$work/tree-names.txt"
comm -23 "$work/tree-names.txt" "$work/pending.txt" > "$work/new.txt"
while IFS= read -r line; do
    fail "a reference to nothing: $(grep -F -- "${line%%: *}:" "$work/tree.txt" | grep -F -- "${line#*: }")"
done < "$work/new.txt"
comm -13 "$work/tree-names.txt" "$work/pending.txt" > "$work/fixed.txt"
while IFS= read -r line; do
    fail "tests/references-pending.txt lists '$line', which the scan no longer finds: delete the line"
done < "$work/fixed.txt"

# 2. A copy with references planted.
copy="$work/tree"
mkdir "$copy"
"$python" "$source/tests/references.py" --list "$source" > "$work/files.txt" &&
    (cd "$source" && tar -cf - -T "$work/files.txt") | tar -xf - -C "$copy" ||
    { echo "FAIL: cannot copy the tree's files"; exit 1; }
(cd "$copy" && git init -q -b main && git add -A && git -c user.name=kcs -c user.email=kcs@localhost commit -qm copy) ||
    { echo "FAIL: cannot make a git repository of the copy"; exit 1; }
# plant FILE LINE: appends LINE to FILE and prints FILE:N, N the line's number.
plant() { printf '%s\n' "$2" >> "$copy/$1"; echo "$1:$(wc -l < "$copy/$1")"; }
expected="$work/expected.txt"
: > "$expected"
at=$(plant docs/runner.md "The lanes are planned in harness/no_such_file.c.")
echo "$at: harness/no_such_file.c does not exist" >> "$expected"
at=$(plant runner/runner.h "/* the lanes (lanes.c) */")
echo "$at: lanes.c is no file of the tree" >> "$expected"
at=$(plant README.md "See [the lanes](docs/no-such-page.md#lanes).")
echo "$at: link docs/no-such-page.md#lanes does not exist (relative to ./)" >> "$expected"
at=$(plant ops/sumsq.c "/* measured on the sumsq-speed branch */")
echo "$at: the sumsq-speed branch does not exist" >> "$expected"
# no references to a file of the tree, on purpose: none of these may be named
plant docs/runner.md "Generated: build/ops.c; patterns: docs/<op>.md, cuda/*.cu, \`opencl/FILE.cl\`; the branch." > /dev/null
plant docs/runner.md "Outside the tree: /usr/local/cuda/lib64/libcublas.so, https://example.org/docs/x.md." > /dev/null
plant harness/op.c 'static const char *const made_up_for_a_test = "cases/no-such-case.md";' > /dev/null
printf '%s\n' '```' 'cc my_program.c -o my_program' '```' >> "$copy/docs/runner.md"

"$python" "$source/tests/references.py" "$copy" > "$work/planted.txt" 2>&1
status=$?
[ "$status" -eq 1 ] || fail "references.py on the copy with bad references exited $status, not 1"
sort -u "$expected" > "$work/expected-sorted.txt"
grep -v '^references.py:' "$work/planted.txt" | sort -u > "$work/planted-sorted.txt"
# the planted ones, by file and line; beyond them, only what the tree has (its pending ones)
comm -23 "$work/expected-sorted.txt" "$work/planted-sorted.txt" > "$work/unnamed.txt"
while IFS= read -r line; do
    fail "the planted reference was not named: $line"
done < "$work/unnamed.txt"
names "$work/planted.txt" > "$work/planted-names.txt"
sed 's/^\([^:]*\):[0-9]*: /\1: /' "$work/expected-sorted.txt" | cat - "$work/pending.txt" | sort -u > "$work/allowed.txt"
comm -23 "$work/planted-names.txt" "$work/allowed.txt" > "$work/extra.txt"
while IFS= read -r line; do
    fail "named in the copy, yet neither planted as a bad reference nor pending: $line"
done < "$work/extra.txt"

if [ "$failures" -ne 0 ]; then
    echo "references_test: $failures failures; the scan of the tree:"
    cat "$work/tree.txt"
    echo "the scan of the copy with planted references:"
    cat "$work/planted.txt"
    exit 1
fi
echo "references_test: passed ($(tail -n 1 "$work/tree.txt"); the copy's four planted references named)"
