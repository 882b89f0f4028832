#!/usr/bin/env python3
"""configure.py: finds what this machine has and writes build.ninja.

    ./configure.py [options] && ninja            build the runner and tests
    ninja check                                  unit tests, then every case on every backend built
    ninja golden                                 rewrite golden/ from the oracles (never by default)

Every backend is optional: the scalar reference is always built; OpenCL is
built when the OpenCL headers and ICD loader are found; CUDA when nvcc and
cuBLAS are found. What is left out is printed with the reason. build.ninja
re-runs this script (with the same options) when configure.py changes.
Plain Python 3 standard library, in the manner of ninja's own configure.py.
"""

import argparse
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

SOURCE = os.path.dirname(os.path.abspath(__file__))

HARNESS = ["status", "dtype", "generator", "case_file", "op", "check", "suite", "results", "npy",
           "manifest", "take_away", "expectations"]


# The cases the saboteur backend runs on in `ninja check`: ones on which
# every saboteur must fail (tests/saboteur-expectations.txt).
SABOTEUR_CASES = ["sumsq/f64-n93", "sumsq/f64-n1000003", "sumsq/f32-n1000003"]
SABOTEUR_CASES += ["softmax/f32-near-1e4", "softmax/f64-near-1e4", "anneal/assign-f32-ties-integers",
                   "anneal/assign-f16-ties-integers", "anneal/reduce-f32-large-mean", "anneal/update-f32-t0",
                   "anneal/energy-f32-n1000"]
SABOTEUR_CASES += ["gemm/f64-nt-37x29x19", "gemm/f32-beta0-nan-c", "gemm/f32-alpha0-nan-a",
                   "elementwise/add-f64-n93", "elementwise/relu-f32-special", "elementwise/sigmoid-f64-n93",
                   "elementwise/mul-f32-subnormal-results"]


def parse_arguments():
    parser = argparse.ArgumentParser(
        description="Write build.ninja for kcs after probing for compilers and libraries.")
    parser.add_argument("--build-dir", default="build",
                        help="folder for every build product (default: build)")
    parser.add_argument("--cc", default=os.environ.get("CC", "cc"),
                        help="C compiler (default: $CC or cc)")
    parser.add_argument("--cflags", default="-O2 -g",
                        help="optimisation and debug flags for C (default: -O2 -g)")
    parser.add_argument("--no-werror", action="store_true",
                        help="do not turn compiler warnings into errors")
    parser.add_argument("--opencl-include", metavar="DIR",
                        help="folder holding CL/cl.h, for machines without opencl-headers")
    parser.add_argument("--opencl-library", metavar="FILE",
                        help="the OpenCL ICD loader to link (default: found by the linker, "
                             "or libOpenCL.so.1 where there is no development symlink)")
    parser.add_argument("--no-opencl", action="store_true", help="leave the OpenCL backend out")
    parser.add_argument("--cuda", metavar="DIR", default=os.environ.get("CUDA_HOME"),
                        help="CUDA toolkit folder (default: $CUDA_HOME, nvcc on PATH, or /usr/local/cuda)")
    parser.add_argument("--cuda-arch", default="90",
                        help="compute capability to build machine code for; PTX of it is embedded "
                             "too, for newer cards (default: 90, Hopper)")
    parser.add_argument("--no-cuda", action="store_true", help="leave the CUDA backend out")
    parser.add_argument("--python", metavar="FILE",
                        help="Python 3 with matplotlib, for reports (default: /usr/bin/python3, "
                             "then python3 on PATH)")
    return parser.parse_args()


def probe(cc, code, flags, libs=""):
    """Whether code compiles and links with cc, flags and libs."""
    with tempfile.TemporaryDirectory() as tmp:
        source = os.path.join(tmp, "probe.c")
        with open(source, "w") as f:
            f.write(code)
        command = f"{cc} {flags} {source} -o {tmp}/probe {libs}"
        return subprocess.run(command, shell=True, capture_output=True).returncode == 0


def find_opencl(args, cc):
    """(cflags, libs, None) for OpenCL, or (None, None, why not)."""
    if args.no_opencl:
        return None, None, "--no-opencl was given"
    cflags = "-DCL_TARGET_OPENCL_VERSION=120"
    if args.opencl_include:
        cflags += " -I" + os.path.abspath(args.opencl_include)
    code = "#include <CL/cl.h>\nint main(void){cl_uint n; return clGetPlatformIDs(0, 0, &n);}\n"
    if not probe(cc, "#include <CL/cl.h>\nint main(void){return 0;}\n", cflags, ""):
        return None, None, ("no OpenCL headers (install opencl-headers, or give "
                            "--opencl-include DIR)")
    candidates = [args.opencl_library] if args.opencl_library else ["-lOpenCL", "-l:libOpenCL.so.1"]
    for libs in candidates:
        if libs and not libs.startswith("-"):
            libs = os.path.abspath(libs)
        if probe(cc, code, cflags, libs):
            return cflags, libs, None
    return None, None, "no OpenCL ICD loader to link (install ocl-icd-opencl-dev)"


def find_cuda(args):
    """(nvcc, cuda folder, None) or (None, None, why not)."""
    if args.no_cuda:
        return None, None, "--no-cuda was given"
    roots = [args.cuda] if args.cuda else []
    nvcc_on_path = shutil.which("nvcc")
    if nvcc_on_path:
        roots.append(os.path.dirname(os.path.dirname(os.path.realpath(nvcc_on_path))))
    roots.append("/usr/local/cuda")
    for root in roots:
        nvcc = os.path.join(root, "bin", "nvcc")
        if not os.access(nvcc, os.X_OK):
            continue
        libdirs = [os.path.join(root, d) for d in ("lib64", "lib", "targets/x86_64-linux/lib")]
        has_cublas = any(glob.glob(os.path.join(d, "libcublas.so*")) for d in libdirs)
        has_header = os.path.exists(os.path.join(root, "include", "cublas_v2.h"))
        if not (has_cublas and has_header):
            return None, None, f"{root} has nvcc but no cuBLAS (libcublas, cublas_v2.h)"
        return nvcc, root, None
    return None, None, "no nvcc found (give --cuda DIR or set CUDA_HOME)"


def find_python(args):
    """(python, None) for a Python 3 with matplotlib and numpy, or (None, why not)."""
    candidates = [args.python] if args.python else ["/usr/bin/python3", shutil.which("python3")]
    for python in candidates:
        if python and os.access(python, os.X_OK):
            result = subprocess.run([python, "-c", "import matplotlib, numpy"], capture_output=True)
            if result.returncode == 0:
                return python, None
    return None, "no Python 3 with matplotlib and numpy (install python3-matplotlib python3-numpy)"


class Ninja:
    """A small writer of build.ninja statements."""

    def __init__(self, path):
        self.out = open(path, "w")

    def line(self, text=""):
        self.out.write(text + "\n")

    def variable(self, name, value):
        self.line(f"{name} = {value}")

    def rule(self, name, command, description, depfile=None, generator=False, pool=None):
        self.line(f"rule {name}")
        self.line(f"  command = {command}")
        self.line(f"  description = {description}")
        if depfile:
            self.line(f"  depfile = {depfile}")
            self.line("  deps = gcc")
        if generator:
            self.line("  generator = 1")
        if pool:
            self.line(f"  pool = {pool}")
        self.line()

    def build(self, outputs, rule, inputs=(), implicit=(), order_only=(), variables=None):
        outputs = " ".join(outputs) if isinstance(outputs, (list, tuple)) else outputs
        inputs = " ".join(inputs) if isinstance(inputs, (list, tuple)) else inputs
        text = f"build {outputs}: {rule}"
        if inputs:
            text += " " + inputs
        if implicit:
            text += " | " + " ".join(implicit)
        if order_only:
            text += " || " + " ".join(order_only)
        self.line(text)
        for name, value in (variables or {}).items():
            self.line(f"  {name} = {value}")

    def close(self):
        self.out.close()


def src(path):
    """A path in the source tree, as build.ninja (which lives at its root) names it."""
    return path


def main():
    args = parse_arguments()
    os.chdir(SOURCE)
    build = os.path.normpath(args.build_dir)
    os.makedirs(build, exist_ok=True)

    def built(path):
        return os.path.join(build, path)

    cc = args.cc
    if not shutil.which(cc):
        sys.exit(f"configure.py: no C compiler '{cc}' (install gcc, or give --cc)")
    needed = [("<cmocka.h>", "libcmocka-dev", "-lcmocka",
               "#include <stdarg.h>\n#include <stddef.h>\n#include <stdint.h>\n#include <setjmp.h>\n"
               "#include <cmocka.h>\nint main(void){return 0;}\n"),
              ("<jansson.h>", "libjansson-dev", "-ljansson",
               "#include <jansson.h>\nint main(void){json_decref(json_object());return 0;}\n"),
              ("<nettle/sha2.h>", "nettle-dev", "-lnettle",
               "#include <nettle/sha2.h>\nint main(void){struct sha256_ctx c; sha256_init(&c);"
               "return 0;}\n")]
    for header, package, lib, code in needed:
        if not probe(cc, code, "", lib):
            sys.exit(f"configure.py: {header} with {lib} is needed: apt-get install {package}")

    opencl_cflags, opencl_libs, opencl_missing = find_opencl(args, cc)
    nvcc, cuda_root, cuda_missing = find_cuda(args)
    python, python_missing = find_python(args)
    fuzz_cc = shutil.which("clang")
    if fuzz_cc and not probe(fuzz_cc, "#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput("
                             "const uint8_t *d, size_t n){(void)d;(void)n;return 0;}\n",
                             "-fsanitize=fuzzer"):
        fuzz_cc = None

    # A backend whose host side is not in the tree is left out like one whose
    # toolkit is missing (so configure works while a backend is being written).
    if opencl_cflags and not os.path.exists(src("opencl/backend.c")):
        opencl_cflags, opencl_missing = None, "opencl/backend.c is not in the tree"
    if nvcc and not os.path.exists(src("cuda/backend.cu")):
        nvcc, cuda_missing = None, "cuda/backend.cu is not in the tree"
    backends = [("reference", "kcs_reference_backend")]
    if opencl_cflags:
        backends.append(("opencl", "kcs_opencl_backend"))
    if nvcc:
        backends.append(("cuda", "kcs_cuda_backend"))

    print("kcs configure:")
    print(f"  C compiler     {cc}")
    print(f"  backends       {', '.join(name for name, _ in backends)}")
    if opencl_missing:
        print(f"  left out       opencl: {opencl_missing}")
    else:
        print(f"  opencl         {opencl_cflags} {opencl_libs}")
    if cuda_missing:
        print(f"  left out       cuda: {cuda_missing}")
    else:
        print(f"  cuda           {nvcc} (sm_{args.cuda_arch} + compute_{args.cuda_arch} PTX)")
    if not fuzz_cc:
        print("  left out       fuzz: no clang with libFuzzer (install clang and libclang-rt-14-dev)")
    if python_missing:
        print(f"  left out       report: {python_missing}")
    else:
        print(f"  report         {python}")

    # The op table: every harness/op_<name>.c defines kcs_op_<name>, or several
    # ops (op_elementwise.c: add, mul, relu, sigmoid), each as a line that starts
    # "const kcs_op kcs_op_<op> = {".
    ops = sorted(os.path.basename(p)[3:-2] for p in glob.glob("harness/op_*.c")
                 if not p.endswith("_test.c"))
    op_symbols = []
    for op in ops:
        with open(f"harness/op_{op}.c") as source:
            defined = re.findall(r"^const kcs_op (kcs_op_\w+) = \{", source.read(), re.M)
        op_symbols += defined or [f"kcs_op_{op}"]
    with open(built("ops.c"), "w") as f:
        f.write("/* Generated by configure.py: the ops of this build, from harness/op_*.c. */\n")
        f.write('#include "op.h"\n')
        for symbol in op_symbols:
            f.write(f"extern const kcs_op {symbol};\n")
        f.write("const kcs_op *const kcs_ops[] = {\n")
        for symbol in op_symbols:
            f.write(f"    &{symbol},\n")
        f.write("    NULL,\n};\n")

    # The default build folder's build.ninja sits at the root, so a plain
    # `ninja` works; another folder gets its own (`ninja -f DIR/build.ninja`),
    # so that several builds can live side by side.
    ninja_file = "build.ninja" if build == "build" else os.path.join(build, "build.ninja")
    n = Ninja(ninja_file)
    n.line("# Generated by configure.py; edit configure.py instead.")
    n.line(f"# configure.py {' '.join(shlex.quote(a) for a in sys.argv[1:])}")
    n.line("ninja_required_version = 1.10")
    n.variable("builddir", build)
    werror = "" if args.no_werror else " -Werror"
    n.variable("cc", cc)
    n.variable("cflags", f"-std=gnu11 -D_GNU_SOURCE -Wall -Wextra{werror} -Wno-format-truncation "
                         f"-ffp-contract=off -fno-fast-math "
                         f"-Iharness -Iref -I{build} -DKCS_SOURCE_DIR='\"{SOURCE}\"'")
    n.variable("optimise", args.cflags)
    n.line()
    n.rule("cc", "$cc -MMD -MF $out.d $cflags $optimise $extra_cflags -c $in -o $out",
           "CC $out", depfile="$out.d")
    n.rule("link", "$cc -o $out $in $ldflags $libs", "LINK $out")
    n.rule("embed", f"{sys.executable} {src('tools/embed.py')} $in $out $symbol", "EMBED $out")
    n.rule("configure", f"{sys.executable} {src('configure.py')} "
                        f"{' '.join(shlex.quote(a) for a in sys.argv[1:])}",
           "CONFIGURE", generator=True)
    n.rule("unit_test", "$in > $out.log 2>&1 && touch $out || (cat $out.log; exit 1)",
           "TEST $in")
    n.rule("script_test", f"KCS_PYTHON={python or '/usr/bin/python3'} sh $in $runner > $out.log 2>&1 "
                          "&& touch $out || (cat $out.log; exit 1)",
           "TEST $in")
    n.rule("saboteur_run", "$in run --backend saboteur --expectations tests/saboteur-expectations.txt "
                           "--time-limit 5 --determinism --no-save --results $results $cases > $out.log 2>&1 "
                           "&& touch $out || (cat $out.log; exit 1)",
           "TEST every saboteur through the runner")
    n.rule("run_console", "$command", "$description", pool="console")
    n.build(ninja_file, "configure", implicit=[src("configure.py")])
    n.line()

    if nvcc:
        arch = args.cuda_arch
        n.variable("nvcc", nvcc)
        n.variable("nvccflags", f"-std=c++17 -O3 -lineinfo "
                                f"-gencode arch=compute_{arch},code=sm_{arch} "
                                f"-gencode arch=compute_{arch},code=compute_{arch} "
                                f"-Xcompiler -Wall -Xcompiler -ffp-contract=off "
                                f"-I{src('harness')} -I{src('ref')}")
        n.rule("nvcc", "$nvcc -MD -MF $out.d $nvccflags -c $in -o $out", "NVCC $out",
               depfile="$out.d")
    cuda_libs = (f" -L{cuda_root}/lib64 -Wl,-rpath,{cuda_root}/lib64 -lcublas -lcudart -lstdc++"
                 if nvcc else "")
    libs = "-ljansson -lnettle -lm"
    backend_libs = libs + (" " + opencl_libs if opencl_cflags else "") + cuda_libs

    def emit_build(variant, backends, extra_cflags="", ldflags="", optimise=None):
        """Compiles the harness, the backends, the runner and the unit tests
        into build/<variant>; returns (runner, test binaries, test stamps)."""
        folder = os.path.join(build, variant) if variant else build
        os.makedirs(folder, exist_ok=True)

        def obj_path(name):
            return os.path.join(folder, "obj", name)

        def cc_object(source, extra=""):
            obj = obj_path(source.replace("/", "_")[:-2] + ".o")
            variables = {"extra_cflags": (extra_cflags + " " + extra).strip()}
            if optimise is not None:
                variables["optimise"] = optimise
            n.build(obj, "cc", src(source), variables=variables)
            return obj

        with open(os.path.join(folder, "backends.c"), "w") as f:
            f.write("/* Generated by configure.py: the backends of this build. */\n")
            f.write('#include "backend.h"\n')
            for _, symbol in backends:
                f.write(f"extern const kcs_backend {symbol};\n")
            f.write("const kcs_backend *const kcs_builtin_backends[] = {\n")
            for _, symbol in backends:
                f.write(f"    &{symbol},\n")
            f.write("};\n")
            f.write(f"const size_t kcs_builtin_backend_count = {len(backends)};\n")
        names = [name for name, _ in backends]

        harness = [cc_object(f"harness/{name}.c") for name in HARNESS]
        harness += [cc_object(f"harness/op_{op}.c") for op in ops]
        harness.append(cc_object(os.path.join(build, "ops.c")))
        reference = [cc_object(p) for p in sorted(glob.glob("ref/*.c")) if not p.endswith("_test.c")]
        backend_objects = list(reference)
        link_libs = libs
        if "opencl" in names:
            for kernel in sorted(glob.glob("opencl/*.cl")):
                stem = os.path.splitext(os.path.basename(kernel))[0]
                generated = os.path.join(build, f"opencl/{stem}_cl.c")
                if not variant:
                    n.build(generated, "embed", kernel, implicit=[src("tools/embed.py")],
                            variables={"symbol": f"kcs_opencl_{stem}_source"})
                backend_objects.append(cc_object(generated))
            backend_objects += [cc_object(p, opencl_cflags) for p in sorted(glob.glob("opencl/*.c"))
                                if not p.endswith("_test.c")]
            link_libs += " " + opencl_libs
        if "cuda" in names:
            for source in sorted(glob.glob("cuda/*.cu")):
                obj = obj_path("cuda_" + os.path.splitext(os.path.basename(source))[0] + ".o")
                n.build(obj, "nvcc", source)
                backend_objects.append(obj)
            link_libs += cuda_libs
        backends_object = cc_object(os.path.join(folder, "backends.c"))
        runner = os.path.join(folder, "kcs")
        runner_objects = [cc_object(p) for p in sorted(glob.glob("runner/*.c"))]
        n.build(runner, "link", runner_objects + [backends_object] + harness + backend_objects,
                variables={"libs": link_libs, "ldflags": ldflags})
        n.line()

        # Unit tests: every *_test.c, linked with the harness and the reference;
        # tests/ also holds test-only code (the saboteur backend) linked into its tests.
        stamps, binaries = [], []
        support = [cc_object(p, "-Itests") for p in sorted(glob.glob("tests/*.c"))
                   if not p.endswith("_test.c")]
        for source in sorted(glob.glob("harness/*_test.c") + glob.glob("ref/*_test.c") +
                             glob.glob("tests/*_test.c")):
            name = os.path.splitext(os.path.basename(source))[0]
            extra = support if source.startswith("tests/") else []
            binary = os.path.join(folder, "tests", name)
            n.build(binary, "link", [cc_object(source, "-Itests")] + extra + harness + reference,
                    variables={"libs": libs + " -lcmocka", "ldflags": ldflags})
            stamp = binary + ".passed"
            n.build(stamp, "unit_test", binary)
            stamps.append(stamp)
            binaries.append(binary)
        n.line()
        if variant:
            return runner, binaries, stamps

        # The runner once more with the saboteur backend (tests/saboteur_*.c)
        # beside the reference, for `ninja check` to run through the normal path.
        saboteur_backends = os.path.join(folder, "saboteur_backends.c")
        with open(saboteur_backends, "w") as f:
            f.write("/* Generated by configure.py: the backends of kcs-saboteur. */\n")
            f.write('#include "backend.h"\n')
            f.write("extern const kcs_backend kcs_reference_backend;\n")
            f.write("extern kcs_backend kcs_saboteur_runner_backend; /* filled before main() */\n")
            f.write("const kcs_backend *const kcs_builtin_backends[] = {&kcs_reference_backend, "
                    "&kcs_saboteur_runner_backend};\n")
            f.write("const size_t kcs_builtin_backend_count = 2;\n")
        saboteur_runner = os.path.join(folder, "kcs-saboteur")
        saboteurs = [obj for obj in support if not obj.endswith("_support.o")]
        n.build(saboteur_runner, "link", runner_objects + [cc_object(saboteur_backends)] + harness +
                reference + saboteurs, variables={"libs": libs, "ldflags": ldflags})
        saboteur_stamp = os.path.join(folder, "tests", "saboteur_run.passed")
        saboteur_cases = " ".join(SABOTEUR_CASES)
        n.build(saboteur_stamp, "saboteur_run", saboteur_runner,
                implicit=["tests/saboteur-expectations.txt"],
                variables={"cases": saboteur_cases,
                           "results": os.path.join(folder, "saboteur-results.json")})
        stamps.append(saboteur_stamp)
        n.line()
        return runner, binaries, stamps

    runner, test_binaries, test_stamps = emit_build("", backends)

    # The CPU suite again under AddressSanitizer and UndefinedBehaviorSanitizer
    # (`ninja sanitize`): nvcc objects are left out, the rest is rebuilt.
    sanitizers = "-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
    cpu_backends = [b for b in backends if b[0] != "cuda"]
    asan_runner, _, asan_stamps = emit_build("asan", cpu_backends, sanitizers, sanitizers, "-O1 -g")

    # Script tests: tests/*_test.sh, given the runner (the numpy round trip).
    for script in sorted(glob.glob("tests/*_test.sh")):
        if script.endswith("report_test.sh") and not python:
            continue
        stamp = built("tests/" + os.path.basename(script)[:-3] + ".passed")
        n.build(stamp, "script_test", script, implicit=[runner, built("kcs-saboteur")],
                variables={"runner": runner})
        test_stamps.append(stamp)

    # The report's own tests (Python unittest), where Python has matplotlib.
    if python:
        n.rule("python_test", f"{python} -m unittest discover -s report -p 'test_*.py' > $out.log 2>&1 "
                              "&& touch $out || (cat $out.log; exit 1)", "TEST report/test_*.py")
        stamp = built("tests/report_unittest.passed")
        n.build(stamp, "python_test", implicit=sorted(glob.glob("report/*.py")))
        test_stamps.append(stamp)

    results = built("results.json")
    failures = built("failures")
    n.build("unit-tests", "phony", test_stamps)
    n.build("check", "run_console", implicit=[runner] + test_stamps,
            variables={"command": f"{runner} run --results {results} --junit {built('junit.xml')} "
                                  f"--save-failures {failures}",
                       "description": "CHECK every case on every backend built"})
    n.build("golden", "run_console", implicit=[runner],
            variables={"command": f"{runner} golden", "description": "GOLDEN rewrite golden/"})
    n.build("sanitize", "run_console", implicit=[asan_runner] + asan_stamps,
            variables={"command": f"ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 "
                                  f"LSAN_OPTIONS=suppressions={SOURCE}/tools/lsan.supp "
                                  f"UBSAN_OPTIONS=print_stacktrace=1 "
                                  f"{asan_runner} run --skip-large --no-save "
                                  f"--results {built('asan/results.json')}",
                       "description": "SANITIZE the CPU suite under ASan and UBSan"})
    n.build("valgrind", "run_console", implicit=[runner],
            variables={"command": f"valgrind --error-exitcode=99 --leak-check=full "
                                  f"--suppressions={SOURCE}/tools/valgrind.supp "
                                  f"--errors-for-leak-kinds=definite {runner} run --backend reference "
                                  f"--no-save --results {built('valgrind-results.json')} "
                                  f"'sumsq/*-n[0-9]' 'sumsq/*-n93' 'sumsq/*-nan' 'sumsq/*-ramp-1000'",
                       "description": "VALGRIND the runner on a small case set"})
    if nvcc:
        # The CUDA cases under compute-sanitizer's memcheck and racecheck (on a
        # machine with a GPU); large cases are left out to keep it minutes.
        sanitizer = os.path.join(cuda_root, "bin", "compute-sanitizer")
        commands = []
        for tool in ("memcheck", "racecheck"):
            commands.append(f"{sanitizer} --tool {tool} --error-exitcode 99 "
                            f"{'--leak-check full ' if tool == 'memcheck' else ''}"
                            f"{runner} run --backend cuda --in-process --skip-large --no-save "
                            f"--results {built(f'cuda-{tool}-results.json')}")
        n.build("cuda-sanitize", "run_console", implicit=[runner],
                variables={"command": " && ".join(commands),
                           "description": "CUDA-SANITIZE memcheck and racecheck of the CUDA cases"})
    if fuzz_cc:
        fuzz_flags = "-fsanitize=fuzzer,address,undefined -g -O1"
        n.rule("fuzz_link", f"{fuzz_cc} -std=gnu11 -D_GNU_SOURCE -ffp-contract=off {fuzz_flags} "
                            f"-Iharness -I{build} -o $out $in -lm", "FUZZ $out")
        fuzzers = []
        parser_sources = [f"harness/{name}.c" for name in ("case_file", "generator", "status", "dtype",
                                                             "op", "check")]
        parser_sources += [f"harness/op_{op}.c" for op in ops] + [os.path.join(build, "ops.c")]
        for target, sources in (("case_file_fuzz", parser_sources),
                                ("npy_fuzz", ["harness/npy.c", "harness/status.c", "harness/dtype.c"])):
            binary = built(f"fuzz/{target}")
            n.build(binary, "fuzz_link", [f"fuzz/{target}.c"] + sources)
            fuzzers.append(binary)
        n.build("fuzz", "phony", fuzzers)
    # The main job: every case on every backend found, timed, then the report.
    suite_results = built("suite-results.json")
    n.build("suite", "run_console", implicit=[runner],
            variables={"command": f"{runner} run --benchmark --results {suite_results} "
                                  f"--junit {built('suite-junit.xml')} --save-failures {failures}",
                       "description": "SUITE every case on every backend, timed"})
    if python:
        n.build("report", "run_console",
                variables={"command": f"{python} report/kcs_report.py {suite_results} --output "
                                      f"{built('report')}",
                           "description": "REPORT from the suite's results"})
    n.build("all", "phony", [runner] + test_binaries)
    n.line("default all")
    n.close()
    print(f"  wrote          {ninja_file} (build products under {build})")


if __name__ == "__main__":
    main()
