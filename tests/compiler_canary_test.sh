#!/bin/sh
# compiler_canary_test.sh: canary 1 of docs/canaries.md (LLVM 14/15 moving a
# store of 0 past a masked store of a value) in plain C, with every clang on
# this machine: tests/canaries/zero_then_store.c. clang 14, 15 and 16, the
# versions measured to have it, must show the bug (else docs/canaries.md's
# account of it is wrong, and the canary's expectation in
# expectations/known-bugs.txt with it); other versions are reported as they are. The store-once form that kcs's kernels use must come
# out right with every clang and with cc. This is how a machine without an
# AVX-512 CPU, where POCL never takes the buggy path, sees the bug.
# usage: tests/compiler_canary_test.sh [build/kcs]   (the runner is not used)
set -u
source=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
checked=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
case "$(uname -m)" in
x86_64) ;;
*) echo "FAIL: the reproducer is for x86-64 (-march=x86-64); this is $(uname -m)"; exit 1 ;;
esac
# run COMPILER LABEL [options]: builds and runs the reproducer; prints "N wrong", returns its status
run() {
    compiler=$1 label=$2
    shift 2
    "$compiler" -O3 -march=x86-64 "$@" "$source/tests/canaries/zero_then_store.c" -o "$work/$label" \
        > "$work/$label.log" 2>&1 || { cat "$work/$label.log"; fail "$compiler $* does not build the reproducer"; return 2; }
    "$work/$label"
}
seen=""
for compiler in clang clang-11 clang-12 clang-13 clang-14 clang-15 clang-16 clang-17 clang-18 clang-19 clang-20; do
    path=$(command -v "$compiler") || continue
    real=$(realpath "$path")
    case " $seen " in *" $real "*) continue ;; esac
    seen="$seen $real"
    major=$("$compiler" -dumpversion | cut -d. -f1)
    checked=$((checked + 1))
    printf '%s (clang %s), store then conditional store: ' "$compiler" "$major"
    run "$compiler" "pattern-$major"
    status=$?
    case "$major:$status" in
    14:1 | 15:1 | 16:1) echo "  the bug, as docs/canaries.md says" ;;
    14:0 | 15:0 | 16:0) fail "clang $major compiles the pattern right: docs/canaries.md and expectations/known-bugs.txt say it does not" ;;
    *:1) echo "  clang $major has the bug too: add it to docs/canaries.md" ;;
    *:0) echo "  no bug in clang $major" ;;
    esac
    printf '%s (clang %s), store once: ' "$compiler" "$major"
    run "$compiler" "once-$major" -DKCS_CANARY_STORE_ONCE || fail "clang $major miscompiles the store-once form kcs's kernels use"
done
[ $checked -gt 0 ] || fail "no clang on this machine (tools/setup.sh installs it): nothing was checked"
printf 'cc, store once: '
run cc once-cc -DKCS_CANARY_STORE_ONCE || fail "cc miscompiles the store-once form"
[ $failures -eq 0 ] || { echo "$failures failed"; exit 1; }
echo "compiler canary: $checked clang version(s) checked"
