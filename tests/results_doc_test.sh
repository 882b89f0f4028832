#!/bin/sh
# results_doc_test.sh: docs/results.md names every field the runner writes.
# A real run that writes every kind of field (a timed pass with ceilings, a
# failure saved with its replay command, a hang, an expected failure), then
# every key of its results file, at any depth, must appear quoted in the
# document ("key"), so a field added to harness/results.c without a word in
# the docs fails here. The time limit (10 s of silence) ends the hang; it is
# not shorter because on a loaded 2-core host a worker measuring ceilings can
# be silent for 3 s, and the whole run then ended as errors.
# usage: tests/results_doc_test.sh build/kcs   (uses build/kcs-saboteur beside it)
set -u
. "$(dirname "$0")/saboteur_prelude.sh"
mkdir cases
cat > cases/timed.md <<'CASES'
# A small timed case for every saboteur of sum of squares

```kcs-case
case: f64-n93
op: sumsq
dtype: f64
sizes: n=93
input x: normal
expect: oracle
tags: perf
```
CASES
cat > expected.txt <<'LINES'
saboteur * * * drops-last-element fail listed so that the results file has an "expected" object
LINES
"$saboteur" run --cases cases --backend saboteur --kernel '*' --benchmark --min-time 0.01 --time-limit 10 \
    --expectations expected.txt --save-failures saved --results results.json > run.log 2>&1
[ -s results.json ] || { cat run.log; echo "FAIL: no results file"; exit 1; }
"$python" - results.json "$source/docs/results.md" <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))
document = open(sys.argv[2]).read()
keys = set()
def walk(value, path):
    if path.endswith(".output_hashes"):
        return  # its keys are the op's output names, not fields
    if isinstance(value, dict):
        for key, inner in value.items():
            keys.add((key, path))
            walk(inner, f"{path}.{key}")
    elif isinstance(value, list):
        for inner in value:
            walk(inner, path + "[]")
walk(data, "")
wanted = {"timing", "ceiling", "expected", "saved", "accuracy", "samples_s", "output_hashes"}
seen = {key for key, _ in keys}
missing_kinds = wanted - seen
assert not missing_kinds, f"the run wrote no {sorted(missing_kinds)}: the test no longer covers them"
undocumented = sorted({f"{path}.{key}" for key, path in keys if f'"{key}"' not in document})
if undocumented:
    print("FAIL: docs/results.md does not name these fields the runner wrote:")
    for field in undocumented:
        print("   ", field)
    sys.exit(1)
print(f"docs/results.md names all {len(seen)} field names the runner wrote")
PY
