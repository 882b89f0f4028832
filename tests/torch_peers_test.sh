#!/bin/sh
# torch_peers_test.sh: what report/kcs_torch_peers.py (the PyTorch peer rows,
# docs/peers.md) shares with the runner, checked without PyTorch or a GPU.
#
#   sh tests/torch_peers_test.sh build/kcs
#
# 1. Its generator makes kcs's inputs bit for bit: every input that `kcs run
#    --save-all` writes for cases of each distribution it makes (uniform,
#    normal, ramp, constant, integers) in f64, f32, f16, bf16 and int32, made
#    again with NumPy from the case list the runner gives (`kcs list --json`,
#    or the plain list where this kcs has none); also with PyTorch on the CPU,
#    FP8 included, where this python imports torch.
# 2. `kcs check` read back: kcs's own reference outputs, checked whole through
#    the peer runner's run_check, give the verdict, elements checked, fraction
#    of the bound, worst element and fraction_histogram that `kcs run` wrote
#    for them; one element changed in a checked row of a subset check fails
#    it, with that element named at its place in the whole output.
# 3. Where PyTorch cannot be imported the runner says so and exits 3, writing
#    nothing.
set -u
kcs=$(realpath "$1")
python=${KCS_PYTHON:-/usr/bin/python3}
peers=$(realpath report/kcs_torch_peers.py)
report=$(realpath report)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

cases="anneal/update-f32-1024x128 anneal/reduce-f32-many-tiles anneal/energy-f32-n1000000
       anneal/assign-f16-ramp-on-anchors elementwise/add-bf16-n93 sumsq/f16-n93 sumsq/f16-tenths
       sumsq/f64-ramp-1000 softmax/f32-cols33 gemm/f64-33x65x17 gemm/fp8_e4m3-nt-48x32x64-f32-out
       gemm/fp8_e5m2-nt-32x16x48-edges-f32-out"
# shellcheck disable=SC2086
"$kcs" run --backend reference --save-failures saved --save-all --results run.json --quiet $cases > run.log 2>&1 ||
    { cat run.log; echo "FAIL: kcs run of the reference"; exit 1; }

KCS="$kcs" REPORT="$report" CASES="$cases" $python - <<'EOF' || exit 1
import glob, json, os, sys
import numpy as np
sys.path.insert(0, os.environ["REPORT"])
import kcs_torch_peers as peers

kcs, names = os.environ["KCS"], os.environ["CASES"].split()
listed = {c["name"]: c for c in peers.list_cases(kcs, None, names, perf_only=False)}
problems, compared, made_by = [], 0, [("numpy", peers.NumpyArrays())]
try:
    import torch
    made_by.append(("torch", peers.TorchArrays(torch, torch.device("cpu"))))
except ImportError:
    print("PyTorch not importable here: inputs made with NumPy only")
kinds = set()
for name in names:
    case = listed[name]
    for array in peers.case_arrays(case)[0]:
        want = np.load(f"saved/{name}/{array.name}.npy")
        kinds.add((case["inputs"][array.name]["distribution"], array.dtype))
        for label, xp in made_by:
            if label == "numpy" and array.dtype.startswith("fp8"):
                continue  # NumPy has no FP8 type
            got = peers.generate(xp, case["inputs"][array.name], name, array.name, array.count, array.dtype)
            got = peers.to_numpy(torch, got, array.dtype) if label == "torch" else got
            got = got.reshape(array.shape)
            compared += 1
            if got.dtype != want.dtype or got.shape != want.shape or got.tobytes() != want.tobytes():
                problems.append(f"{name}:{array.name} ({array.dtype}, made with {label}) differs from kcs's")
for wanted in ("uniform", "normal", "ramp", "constant", "integers"):
    if not any(kind == wanted for kind, _ in kinds):
        problems.append(f"no case of the list makes {wanted} inputs")
for wanted in ("f64", "f32", "f16", "bf16", "i32", "fp8_e4m3", "fp8_e5m2"):
    if not any(dtype == wanted for _, dtype in kinds):
        problems.append(f"no case of the list has {wanted} inputs")
print(f"{compared} inputs compared with kcs's")
if problems:
    print("FAIL: " + "\nFAIL: ".join(problems))
    sys.exit(1)

# 2. kcs check read back, against what kcs run wrote for the same outputs.
run = {r["case"]: r for r in json.load(open("run.json"))["results"] if r["status"] == "pass"}
for name in ("anneal/update-f32-1024x128", "anneal/reduce-f32-many-tiles", "anneal/energy-f32-n1000000"):
    case, result = listed[name], run[name]
    arrays_in, arrays_out = peers.case_arrays(case)
    outputs_folder = glob.glob(f"saved/{name}/reference-0-*")[0]
    parts_in = [np.load(f"saved/{name}/{a.name}.npy") for a in arrays_in]
    parts_out = [np.load(f"{outputs_folder}/{a.name}.npy") for a in arrays_out]
    status, message, accuracy, _, command = peers.run_check(kcs, case, arrays_in, arrays_out, parts_in, parts_out,
                                                           peers.everything(arrays_out), f"check/{name}")
    theirs = result["accuracy"]
    if status != "pass" or accuracy["checked"] != theirs["checked"] or \
            f"{accuracy['fraction_of_bound']:.3g}" != f"{theirs['fraction_of_bound']:.3g}" or \
            accuracy.get("fraction_histogram") != theirs["fraction_histogram"] or \
            (accuracy["worst"]["output"], accuracy["worst"]["index"]) != (theirs["worst"]["output"], theirs["worst"]["index"]):
        print(f"FAIL: {name}: kcs check through the peer runner read {status} {json.dumps(accuracy)}; "
              f"kcs run wrote {json.dumps(theirs)}\n  {' '.join(command)}")
        sys.exit(1)
print("kcs check read back as kcs run wrote it")

# A subset check: 64 of softmax/f32-cols33's 65 rows; one element of a checked row changed.
name = "softmax/f32-cols33"
case = listed[name]
arrays_in, arrays_out = peers.case_arrays(case)
x = np.load(f"saved/{name}/x.npy")
y = np.load(glob.glob(f"saved/{name}/reference-0-*")[0] + "/y.npy").copy()
subset = peers.softmax_subset(case, seed=11)
rows = peers.chosen(65, peers.CHECKED_ROWS, 11)
status, _, accuracy, _, _ = peers.run_check(kcs, case, arrays_in, arrays_out, [subset.pick_input("x", x)],
                                            [subset.pick_output("y", y)], subset, "check/subset-pass")
if status != "pass" or accuracy["checked"] != 64 * 33 or subset.elements != 64 * 33:
    print(f"FAIL: {name}: 64 rows of kcs's own output: {status} {accuracy}")
    sys.exit(1)
row = rows[40]
y[row, 17] *= 1.001
status, message, accuracy, _, _ = peers.run_check(kcs, case, arrays_in, arrays_out, [subset.pick_input("x", x)],
                                                  [subset.pick_output("y", y)], subset, "check/subset-fail")
if status != "fail" or accuracy["failures"] != 1 or accuracy["worst"]["index"] != row * 33 + 17:
    print(f"FAIL: {name}: y[{row}, 17] changed: {status} {message} {accuracy}")
    sys.exit(1)
print(f"a changed element found at y[{row}, 17] of the whole output")
EOF

# 3. No PyTorch: exit 3, the reason, nothing written (a torch that cannot be
# imported is planted first on the path, so that this holds wherever it runs).
mkdir -p fake/torch empty
echo 'raise ImportError("No module named torch (planted)")' > fake/torch/__init__.py
(cd empty && PYTHONPATH="$work/fake" $python "$peers" --kcs "$kcs" > ../no-torch.log 2>&1)
status=$?
[ "$status" -eq 3 ] || { cat no-torch.log; echo "FAIL: without PyTorch the runner exits $status, not 3"; exit 1; }
grep -q "PyTorch cannot be imported by" no-torch.log || { cat no-torch.log; echo "FAIL: no reason given"; exit 1; }
[ -z "$(ls empty)" ] || { ls empty; echo "FAIL: the runner wrote files without PyTorch"; exit 1; }
if ! $python -c "import torch" > /dev/null 2>&1; then
    (cd empty && $python "$peers" --kcs "$kcs" > ../no-torch.log 2>&1)
    status=$?
    [ "$status" -eq 3 ] && grep -q "No module named 'torch'" no-torch.log ||
        { cat no-torch.log; echo "FAIL: $python without torch: exit $status"; exit 1; }
fi
echo "PASS: torch_peers_test"
