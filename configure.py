#!/usr/bin/env python3
"""configure.py: finds what this machine has and writes build.ninja.

    ./configure.py [options] && ninja            build the runner and tests
    ninja check                                  the tests and every case on every backend built
    ninja golden                                 rewrite golden/ from the oracles (never by default)

Every backend is optional: the scalar reference is always built; OpenCL is
built when the OpenCL headers and ICD loader are found; CUDA when nvcc and
cuBLAS are found. What is left out is printed with the reason. build.ninja
re-runs this script (with the same options) when configure.py changes or a
source folder gains or loses a file.
Plain Python 3 standard library, in the manner of ninja's own configure.py.

What gets built is found, not listed: harness/*.c is the core, ops/*.c
the ops (each defines `const kcs_op kcs_op_<name>`), each backend's folder
its files (BACKENDS below), and every file of a backend exports its kernel
rows as `const kcs_kernel_table kcs_<backend>_<op>_kernels`; the lists of ops
and of each backend's tables are generated from those definitions.
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

# Folders whose files are found by globbing: adding or removing a file in one
# of them regenerates build.ninja.
# Script tests that must find a planted slowdown in real timings
# (docs/comparing.md): `ninja timing-check` alone, not part of `ninja check`,
# whose tests assert only what holds however busy the machine is (the
# comparison's own, tests/compare_test.sh, among them).
TIMING_TESTS = ["tests/compare_timing_test.sh"]
# The compiler and driver bugs kcs has found, expected where they are known
# (docs/canaries.md): every run of `ninja check` and of the main job reads it.
KNOWN_BUGS = "expectations/known-bugs.txt"
# The edges of `ninja check` that take longest, by their output under the build
# folder: seconds on a 2-core machine with nothing else running, CPU (user + sys,
# /usr/bin/time) for those that compute and the wall for those that mostly wait
# (the hang, Slurm and multi-device tests, the saboteur run's hung kernels).
# build.ninja declares them first, longest first (class Ninja), so that ninja
# starts them first: the longest do not end `ninja check` alone on one core, and
# the waiting ones hold a job while the others compute. Measured again when one
# of them changes much (docs/checking.md, "What each costs").
LONG_EDGES = {"tests/opencl_sanitize.passed": 81, "tests/hang_limit_test.passed": 62,
              "tests/opencl_paths.passed": 45, "tests/report_test_kcs_report.passed": 40,
              "tests/report_test.passed": 30, "tests/saboteur_gemm_test.passed": 28,
              "tests/multi_device_test.passed": 26, "tests/saboteur_run.passed": 25,
              "tests/fleet_slurm_test.passed": 23, "tests/compare_test.passed": 20, "check-cases.log": 15,
              "tests/saboteur_sumsq_test.passed": 13, "tests/cuda_gemm_emulation.passed": 13,
              "tests/results_doc_test.passed": 12, "tests/check_command_test.passed": 8,
              "tests/cuda_kernels_emulation.passed": 7, "tests/opencl_sanitize_mutants.passed": 7,
              "tests/probe_command_test.passed": 7, "tests/take_away_unfinished_test.passed": 7,
              "tests/empty_run_test.passed": 7, "tests/saboteur_softmax_test.passed": 6,
              "tests/report_test_kcs_torch_peers.passed": 6,
              # not tests: the emulations' build, the longest edge of a fresh `ninja check` (CI)
              "emulation/kernels/emulation": 60, "emulation/gemm/emulation": 9}

# The set-up the script tests that drive the saboteur share (sourced; every script test depends on it).
SCRIPT_PRELUDE = "tests/saboteur_prelude.sh"
# What a script test reads beyond the runner and the report (which every one depends on).
# The references test reads the whole tree: it runs at every `ninja check` (`always`).
SCRIPT_TEST_INPUTS = {"tests/configure_rerun_test.sh": ["configure.py"],
                      "tests/multi_device_test.sh": ["tests/replica-cases/scale.md"],
                      "tests/peers_test.sh": ["tests/replica-cases/scale.md"],
                      "tests/references_test.sh": ["tests/references.py", "tests/references-pending.txt",
                                                   "always"]}

WATCHED_FOLDERS = ["harness", "ops", "ref", "opencl", "cuda", "cuda/gemm", "runner", "tests", "tests/cases",
                   "tests/saboteur-expectations", "tests/opencl-mutants", "report/templates",
                   "lib", "examples",
                   # report/ by its full path: plain "report" is the target `ninja report`
                   os.path.join(SOURCE, "report")]


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
    parser.add_argument("--prefix", default="/usr/local",
                        help="where `ninja install` puts the libraries, headers and pkg-config "
                             "files (default: /usr/local; DESTDIR in the environment is put in front)")
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


def find_reference(args, cc):
    """The scalar reference needs nothing but the C compiler."""
    return {"summary": "scalar C", "cflags": "", "libs": ""}, None


def find_opencl(args, cc):
    """({summary, cflags, libs}, None) for OpenCL, or (None, why not)."""
    if args.no_opencl:
        return None, "--no-opencl was given"
    cflags = "-DCL_TARGET_OPENCL_VERSION=120"
    if args.opencl_include:
        cflags += " -I" + os.path.abspath(args.opencl_include)
    code = "#include <CL/cl.h>\nint main(void){cl_uint n; return clGetPlatformIDs(0, 0, &n);}\n"
    if not probe(cc, "#include <CL/cl.h>\nint main(void){return 0;}\n", cflags, ""):
        return None, ("no OpenCL headers (install opencl-headers, or give "
                      "--opencl-include DIR)")
    candidates = [args.opencl_library] if args.opencl_library else ["-lOpenCL", "-l:libOpenCL.so.1"]
    for libs in candidates:
        if libs and not libs.startswith("-"):
            libs = os.path.abspath(libs)
        if probe(cc, code, cflags, libs):
            return {"summary": f"{cflags} {libs}", "cflags": cflags, "libs": libs}, None
    return None, "no OpenCL ICD loader to link (install ocl-icd-opencl-dev)"


def find_cuda(args, cc):
    """({summary, nvcc, root, libs}, None) for CUDA, or (None, why not)."""
    if args.no_cuda:
        return None, "--no-cuda was given"
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
            return None, f"{root} has nvcc but no cuBLAS (libcublas, cublas_v2.h)"
        libs = f"-L{root}/lib64 -Wl,-rpath,{root}/lib64 -lcublasLt -lcublas -lcudart -lstdc++"
        summary = f"{nvcc} (sm_{args.cuda_arch} + compute_{args.cuda_arch} PTX)"
        return {"summary": summary, "nvcc": nvcc, "root": root, "cflags": "", "libs": libs}, None
    return None, "no nvcc found (give --cuda DIR or set CUDA_HOME)"


class BackendRow:
    """One backend: its name, its folder, how to find its toolkit (a function
    returning ({summary, cflags, libs, ...}, None) or (None, why not)), the
    file endings of its sources, and whether the ASan/UBSan build can hold it
    (nvcc's objects cannot be instrumented)."""

    def __init__(self, name, folder, find, endings, sanitizer_safe):
        self.name, self.folder, self.find = name, folder, find
        self.endings, self.sanitizer_safe = endings, sanitizer_safe

    def sources(self):
        """Its source files, those of its folder and of its subfolders (cuda/gemm/: one op's
        families of rows), sorted by path; backend.<ending> holds the device and buffer functions."""
        return sorted(p for ending in self.endings
                      for p in glob.glob(f"{self.folder}/**/*{ending}", recursive=True) if not p.endswith("_test.c"))


# Every backend the runner can have, in the order the runner lists them. A
# new backend is a folder with a backend.c (or .cu) defining kcs_<name>_backend
# and a row here.
BACKENDS = [
    BackendRow("reference", "ref", find_reference, [".c"], sanitizer_safe=True),
    BackendRow("opencl", "opencl", find_opencl, [".c", ".cl"], sanitizer_safe=True),
    BackendRow("cuda", "cuda", find_cuda, [".cu"], sanitizer_safe=False),
]


class Built:
    """A backend row that this machine can build, with what its probe found."""

    def __init__(self, row, found):
        self.row, self.found = row, found

    @property
    def name(self):
        return self.row.name


def kernel_tables(files, prefix):
    """The kernel tables the files export whose names start with kcs_<prefix>_,
    in file order (a definition "const kcs_kernel_table kcs_<prefix>_<op>_kernels")."""
    tables = []
    for path in files:
        with open(path, errors="replace") as source:
            tables += re.findall(rf"^(?:extern \"C\" )?const kcs_kernel_table (kcs_{prefix}_\w+_kernels)\b",
                                 source.read(), re.M)
    return tables


def write_generated(path, text):
    """Writes a file configure.py generates (C sources, pkg-config files, the
    install manifest) only when its text changed: an unchanged file keeps its
    time, so configure.py run again with nothing changed leaves ninja no work."""
    try:
        with open(path) as f:
            if f.read() == text:
                return
    except FileNotFoundError:
        pass
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def write_table_list(path, backend, tables):
    """Writes the C file that lists a backend's kernel tables (kcs_<backend>_kernel_tables)."""
    write_generated(path, f"/* Generated by configure.py: the kernel tables of the {backend} backend. */\n"
                          '#include "backend.h"\n' +
                    "".join(f"extern const kcs_kernel_table {table};\n" for table in tables) +
                    f"const kcs_kernel_table *const kcs_{backend}_kernel_tables[] = {{\n" +
                    "".join(f"    &{table},\n" for table in tables) + "    NULL,\n};\n")


def write_op_list(path, op_files, comment):
    """Writes the C file of the op table (kcs_ops) of the ops op_files define:
    each ops/<name>.c defines one or more, each as a line that starts
    "const kcs_op kcs_op_<op> = {" (elementwise.c: four)."""
    symbols = []
    for path_of_op in op_files:
        with open(path_of_op) as source:
            symbols += re.findall(r"^const kcs_op (kcs_op_\w+) = \{", source.read(), re.M)
    write_generated(path, f"/* Generated by configure.py: {comment}. */\n"
                          '#include "op.h"\n' + "".join(f"extern const kcs_op {symbol};\n" for symbol in symbols) +
                    "const kcs_op *const kcs_ops[] = {\n" + "".join(f"    &{symbol},\n" for symbol in symbols) +
                    "    NULL,\n};\n")


def find_python(args):
    """(python, None) for a Python 3 with what the report uses, or (None, why not)."""
    candidates = [args.python] if args.python else ["/usr/bin/python3", shutil.which("python3")]
    for python in candidates:
        if python and os.access(python, os.X_OK):
            result = subprocess.run([python, "-c", "import matplotlib, numpy, jinja2, markdown_it, PIL"], capture_output=True)
            if result.returncode == 0:
                return python, None
    return None, ("no Python 3 with matplotlib, numpy, jinja2, markdown-it and PIL (install python3-matplotlib "
                  "python3-numpy python3-jinja2 python3-markdown-it python3-pil)")


class Ninja:
    """A small writer of build.ninja statements.

    ninja before 1.12 (Debian 12 has 1.11) starts the edges that are ready in
    the order the file declares them, whatever order a target lists them in
    (tried on 1.11.1), so the longest edges must come first in the file to
    start first and not end `ninja check` alone on one core. A build whose
    output long_edges lists (path: seconds) goes to the place mark_first()
    marked, ahead of every other build, the longest first; lines and rules
    written with first=True go there too, ahead of those builds (a rule must
    come before the builds that use it)."""

    def __init__(self, path, long_edges):
        self.path = path
        self.lines = []
        self.first_at = None
        self.long_edges = long_edges
        self.long_builds = []  # (-seconds, order written, lines of the build)

    def mark_first(self):
        self.first_at = len(self.lines)

    def line(self, text="", first=False):
        if first:
            self.lines.insert(self.first_at, text)
            self.first_at += 1
        else:
            self.lines.append(text)

    def variable(self, name, value):
        self.line(f"{name} = {value}")

    def rule(self, name, command, description, depfile=None, generator=False, pool=None, first=False):
        self.line(f"rule {name}", first)
        self.line(f"  command = {command}", first)
        self.line(f"  description = {description}", first)
        if depfile:
            self.line(f"  depfile = {depfile}", first)
            self.line("  deps = gcc", first)
        if generator:
            self.line("  generator = 1", first)
        if pool:
            self.line(f"  pool = {pool}", first)
        self.line("", first)

    def build(self, outputs, rule, inputs=(), implicit=(), order_only=(), variables=None):
        outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
        inputs = " ".join(inputs) if isinstance(inputs, (list, tuple)) else inputs
        text = f"build {' '.join(outputs)}: {rule}"
        if inputs:
            text += " " + inputs
        if implicit:
            text += " | " + " ".join(implicit)
        if order_only:
            text += " || " + " ".join(order_only)
        lines = [text] + [f"  {name} = {value}" for name, value in (variables or {}).items()]
        seconds = max(self.long_edges.get(output, 0) for output in outputs)
        if seconds:
            self.long_builds.append((-seconds, len(self.long_builds), lines))
        else:
            self.lines += lines

    def close(self):
        # Written every time, unlike the generated sources (write_generated):
        # build.ninja must end newer than configure.py and the watched folders,
        # or ninja would run configure.py again at every build.
        long_builds = [line for _, _, lines in sorted(self.long_builds) for line in lines]
        lines = self.lines[:self.first_at] + long_builds + self.lines[self.first_at:]
        with open(self.path, "w") as out:
            out.write("".join(line + "\n" for line in lines))


def src(path):
    """A path in the source tree, as build.ninja (which lives at its root) names it."""
    return path


# ---- the libraries (docs/library.md) ------------------------------------------
# libkcs_ref, libkcs_opencl and libkcs_cuda are the runner's own objects (the
# backends, their kernel tables, the op descriptors that check a call's
# buffers) and lib/*.c, the public calls over them. Kept apart from the
# runner's build above: nothing here changes how the runner is built.

# The libraries' version: the soname carries MAJOR (docs/library.md, "Versions").
LIBRARY_VERSION = "0.1.0"

# The harness files the libraries hold (besides every op descriptor): what the
# descriptors' layouts and the backends call. Whatever they need beyond these is
# a link error (-Wl,--no-undefined), never a silent gap.
LIBRARY_HARNESS = ["harness/status.c", "harness/dtype.c", "harness/backend.c", "harness/op.c",
                   "harness/case_file.c", "harness/check.c", "harness/generator.c", "harness/probe.c"]
# Those of them whose functions libkcs_ref exports (status.h, dtype.h, the probe's kcs_probe_*): the device
# libraries link them from it, and hold a private copy of the others, with the op descriptors, for the buffer
# check of their call paths (kcs_check_buffers).
LIBRARY_EXPORTED_HARNESS = ["harness/status.c", "harness/dtype.c", "harness/probe.c"]


def test_only_ops():
    """The ops whose cases are all in tests/cases/, none in cases/ (scale: the
    proof that a new op takes new files only, docs/adding-an-op.md). The runner
    has them, for `ninja check`; the libraries and their headers leave them out."""
    def ops_of(folder):
        ops = set()
        for path in glob.glob(f"{folder}/*.md"):
            with open(path) as cases:
                ops.update(re.findall(r"^op:\s*(\w+)", cases.read(), re.M))
        return ops
    return ops_of("tests/cases") - ops_of("cases")


def is_test_only_file(path, test_ops):
    """Whether path is a test-only op's file, named as docs/adding-an-op.md names
    an op's files: ops/<op>.c, ref/kcs_ref_<op>.h, <backend folder>/<op>.<ending>."""
    name = os.path.splitext(os.path.basename(path))[0]
    return any(name.startswith(start) and name[len(start):] in test_ops for start in ("op_", "kcs_ref_", ""))


# The headers installed in PREFIX/include/kcs/, which programs include as <kcs/NAME>.
def library_headers(built_backends, test_ops):
    headers = sorted(glob.glob("ref/kcs_ref*.h")) + ["harness/kcs_export.h", "harness/status.h",
                                                      "harness/dtype.h", "ops/op_args.h", "lib/kcs_device.h",
                                                      "lib/kcs_probe.h"]
    return [h for h in headers if not is_test_only_file(h, test_ops)] + [f"lib/kcs_device_{b}.h"
                                                                          for b in built_backends]


def backend_macro(backend):
    """The macro a device library's pkg-config Cflags define, so that a program
    (examples/example_device.h) offers the backends it is built with."""
    return f"KCS_HAS_{backend.upper()}"


def pkg_config_text(prefix, name, description, cflags, libs, private_libs, requires=""):
    """A pkg-config file: Cflags for <kcs/...> includes; Libs.private for static linking."""
    text = (f"prefix={prefix}\nlibdir=${{prefix}}/lib\nincludedir=${{prefix}}/include\n\n"
            f"Name: {name}\nDescription: {description}\nVersion: {LIBRARY_VERSION}\n")
    if requires:
        text += f"Requires: {requires}\n"
    return text + (f"Cflags: -I${{includedir}}{cflags}\nLibs: -L${{libdir}} {libs}\n"
                   f"Libs.private: {private_libs}\n")


def emit_libraries(n, build, backends, library_parts, prefix):
    """Static and shared libkcs_<backend> for every backend built, their
    pkg-config files, the examples, `ninja install` / `ninja uninstall` and
    the installed-library test; returns (libraries and examples, test stamps)."""
    lib = os.path.join(build, "lib")
    major = LIBRARY_VERSION.split(".")[0]
    n.rule("static_library", "rm -f $out && ar crs $out $in", "AR $out")
    n.rule("shared_library", f"$cc -shared -Wl,-soname,$soname -Wl,--no-undefined "
                             f"-Wl,--version-script={src('lib/exports.map')} -o $out $in $ldflags $libs "
                             "&& ln -sf $realname $libdir/$soname && ln -sf $soname $libdir/$devname", "SO $out")
    # The test-only ops' files are left out, and the libraries' op table and
    # kernel-table lists are made of what is left.
    test_ops = test_only_ops()
    op_files = sorted(p for p in library_parts["harness"] if p.startswith("ops/")
                      and not is_test_only_file(p, test_ops))
    write_op_list(os.path.join(lib, "ops.c"), op_files, "the ops of the libraries, without the test-only ops")
    harness = [library_parts["harness"][p] for p in LIBRARY_HARNESS + op_files]
    harness.append(os.path.join(build, "obj", "lib_ops.o"))
    n.build(harness[-1], "cc", os.path.join(lib, "ops.c"))
    opencl_cflags = next((b.found["cflags"] for b in backends if b.name == "opencl"), "")
    found = {b.name: b.found for b in backends}
    products, manifest = [], []
    for backend in backends:
        name = f"kcs_{backend.name if backend.name != 'reference' else 'ref'}"
        api = "lib/device.c" if backend.name == "reference" else f"lib/{backend.name}_device.c"
        api_object = os.path.join(build, "obj", "lib_" + os.path.basename(api)[:-2] + ".o")
        n.build(api_object, "cc", src(api), variables={
            "extra_cflags": f"-Ilib {opencl_cflags if backend.name == 'opencl' else ''} "
                            f"-DKCS_LIBRARY_VERSION='\"{LIBRARY_VERSION}\"'".strip()})
        sources = [p for p in library_parts[backend.name] if not is_test_only_file(p, test_ops)]
        tables = os.path.join(lib, f"{backend.name}_kernel_tables.c")
        write_table_list(tables, backend.name, kernel_tables(sources, backend.name))
        tables_object = os.path.join(build, "obj", f"lib_{backend.name}_kernel_tables.o")
        n.build(tables_object, "cc", tables)
        # libkcs_ref holds the harness; the others link it (their .pc Requires it) and hold the rest.
        objects = [api_object, tables_object] + [library_parts[backend.name][p] for p in sources]
        if backend.name == "reference":  # kcs_probe_open on a context (lib/kcs_probe.h)
            objects.append(os.path.join(build, "obj", "lib_probe.o"))
            n.build(objects[-1], "cc", src("lib/probe.c"), variables={"extra_cflags": "-Ilib"})
        objects += harness if backend.name == "reference" else [
            o for p, o in zip(LIBRARY_HARNESS + op_files + ["lib/ops.c"], harness) if p not in LIBRARY_EXPORTED_HARNESS]
        private = "-lm" if backend.name == "reference" else f"{found[backend.name]['libs']} -lm"
        archive = os.path.join(lib, f"lib{name}.a")
        realname, soname, devname = f"lib{name}.so.{LIBRARY_VERSION}", f"lib{name}.so.{major}", f"lib{name}.so"
        shared = os.path.join(lib, realname)
        n.build(archive, "static_library", objects)
        needs_ref = [] if backend.name == "reference" else [os.path.join(lib, "libkcs_ref.so")]
        n.build(f"{shared} | {os.path.join(lib, soname)} {os.path.join(lib, devname)}", "shared_library", objects,
                implicit=needs_ref + [src("lib/exports.map")],
                variables={"soname": soname, "realname": realname, "devname": devname, "libdir": lib,
                           "ldflags": "" if backend.name == "reference" else f"-L{lib} -lkcs_ref",
                           "libs": private})
        products += [archive, shared]
        pc = os.path.join(lib, "pkgconfig", f"{name}.pc")
        write_generated(pc, pkg_config_text(prefix, name, f"kcs, the kernel conformance suite: the {backend.name} "
                                    "kernels as a library (docs/library.md)",
                                    "" if backend.name == "reference" else f" -D{backend_macro(backend.name)}",
                                    f"-l{name}", private,
                                    "" if backend.name == "reference" else f"kcs_ref = {LIBRARY_VERSION}"))
        manifest += [f"file {archive} lib", f"file {shared} lib", f"link {realname} lib/{soname}",
                     f"link {soname} lib/{devname}", f"file {pc} lib/pkgconfig"]
    headers = library_headers([b.name for b in backends if b.name != "reference"], test_ops)
    manifest += [f"file {h} include/kcs" for h in headers]
    install_list = os.path.join(build, "install-manifest.txt")
    write_generated(install_list, "# Generated by configure.py: what `ninja install` copies (tools/install.sh).\n" +
                    "\n".join(manifest) + "\n")
    n.build("install", "run_console", implicit=products + [install_list, src("tools/install.sh")],
            variables={"command": f"sh tools/install.sh install {shlex.quote(prefix)} {install_list}",
                       "description": f"INSTALL into $$DESTDIR{prefix}"})
    n.build("uninstall", "run_console", implicit=[install_list, src("tools/install.sh")],
            variables={"command": f"sh tools/install.sh uninstall {shlex.quote(prefix)} {install_list}",
                       "description": f"UNINSTALL from $$DESTDIR{prefix}"})

    # The examples, compiled and linked as a program outside the tree is (the
    # installed headers as <kcs/NAME>, the pkg-config files' macros, -lkcs_*),
    # finding the build's shared libraries through their rpath.
    n.rule("copy", "cp $in $out", "COPY $out")
    include = os.path.join(build, "include")
    installed_headers = [os.path.join(include, "kcs", os.path.basename(h)) for h in headers]
    for header, copy in zip(headers, installed_headers):
        n.build(copy, "copy", src(header))
    device_libs = [b.name for b in backends if b.name != "reference"]
    example_cflags = f"-I{include} " + " ".join(f"-D{backend_macro(b)}" for b in device_libs)
    example_libs = (" ".join(f"-lkcs_{b}" for b in device_libs) + " -lkcs_ref -lm").strip()
    for source in sorted(glob.glob("examples/*.c")):
        stem = os.path.basename(source)[:-2]
        obj = os.path.join(build, "obj", f"examples_{stem}.o")
        n.build(obj, "cc", src(source), order_only=installed_headers, variables={"extra_cflags": example_cflags})
        binary = os.path.join(build, "examples", stem)
        n.build(binary, "link", [obj], implicit=[os.path.join(lib, f"libkcs_{'ref' if b == 'reference' else b}.so")
                                                  for b in ["reference"] + device_libs],
                variables={"ldflags": f"-L{lib} -Wl,-rpath,'$$ORIGIN/../lib'", "libs": example_libs})
        products.append(binary)
    n.line()

    # The installed libraries, used from outside the tree (tests/library_install.sh).
    stamp = os.path.join(build, "tests", "library_install.passed")
    n.rule("library_test", "sh $in $arguments > $out.log 2>&1 && touch $out || (cat $out.log; exit 1)",
           "TEST $in")
    n.build(stamp, "library_test", src("tests/library_install.sh"),
            implicit=products + [install_list, src("tools/install.sh")] + sorted(glob.glob("examples/*.[ch]")),
            variables={"arguments": f"{install_list} {src('examples')} {' '.join(device_libs)}"})
    n.line()
    return products, [stamp]


# ---- main's steps, in the order main takes them ----------------------------------

def check_compiler(cc):
    """Exits, naming the Debian package to install, when the C compiler or a
    library that every build needs is missing: cmocka (the unit tests), jansson
    (results files) and nettle (the checksums of inputs and outputs). Unlike a
    backend's toolkit, none of them is optional, so there is nothing to leave out."""
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


def find_fuzz_compiler():
    """clang, where it links libFuzzer (`ninja fuzz`), or None: the fuzzers are
    optional, and GCC has no libFuzzer."""
    fuzz_cc = shutil.which("clang")
    if fuzz_cc and not probe(fuzz_cc, "#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput("
                             "const uint8_t *d, size_t n){(void)d;(void)n;return 0;}\n",
                             "-fsanitize=fuzzer"):
        fuzz_cc = None
    return fuzz_cc


def choose_backends(args, cc):
    """Probes the toolkit of every BACKENDS row and prints what it found or why
    the backend is left out; returns the backends this machine builds (Built).
    A row whose folder has no backend file yet is left out like one whose
    toolkit is missing, so that configure works while a backend is written."""
    backends = []
    for row in BACKENDS:
        found, why_not = row.find(args, cc)
        if found is not None and not any(os.path.exists(f"{row.folder}/backend{e}") for e in row.endings):
            found, why_not = None, f"{row.folder}/ has no backend file"
        if found is None:
            print(f"  left out       {row.name}: {why_not}")
        else:
            backends.append(Built(row, found))
            print(f"  {row.name:<14} {found['summary']}")
    print(f"  backends       {', '.join(b.name for b in backends)}")
    return backends


def write_runner_op_list(build):
    """Writes build/ops.c, the runner's op table, from every op of ops/*.c (the
    libraries have their own, without the test-only ops: emit_libraries), and
    returns those op files: the op list is found, so a new op is a new file."""
    op_files = sorted(p for p in glob.glob("ops/*.c") if not p.endswith("_test.c"))
    write_op_list(os.path.join(build, "ops.c"), op_files, "the ops of this build, from the files of ops/")
    return op_files


class Context:
    """What the steps that write build.ninja share: the options, the build
    folder, the writer, the backends this machine builds and the optional
    tools found (Python with what the report needs; clang with libFuzzer)."""

    def __init__(self, args, build, n, backends, python, fuzz_cc):
        self.args, self.build, self.n, self.backends = args, build, n, backends
        self.python, self.fuzz_cc = python, fuzz_cc

    def built(self, path):
        """A path under the build folder."""
        return os.path.join(self.build, path)

    def backend(self, name):
        """The built backend of that name, or None where this machine does not build it."""
        return next((b for b in self.backends if b.name == name), None)


def start_build_file(args, build, python):
    """Opens build.ninja and writes its head: the compiler flags every C file
    gets (and why each unusual one is there), the rules the later steps use,
    and the edge that re-runs configure.py with the same options when it or a
    watched folder changes. Returns (writer, path of build.ninja), with the
    writer's mark for the tests that must start first set after the head."""
    # The default build folder's build.ninja sits at the root, so a plain
    # `ninja` works; another folder gets its own (`ninja -f DIR/build.ninja`),
    # so that several builds can live side by side.
    ninja_file = "build.ninja" if build == "build" else os.path.join(build, "build.ninja")
    n = Ninja(ninja_file, {os.path.join(build, output): seconds for output, seconds in LONG_EDGES.items()})
    n.line("# Generated by configure.py; edit configure.py instead.")
    n.line(f"# configure.py {' '.join(shlex.quote(a) for a in sys.argv[1:])}")
    n.line("ninja_required_version = 1.10")
    n.variable("builddir", build)
    werror = "" if args.no_werror else " -Werror"
    n.variable("cc", args.cc)
    # -fno-tree-slp-vectorize: Debian 12's GCC 12.2 at -O2 drops the rounding of
    # two neighbouring (double)(float)x conversions that its SLP vectorizer
    # pairs (seen in ops/gemm.c's alpha and beta; ops/gemm_test.c catches it).
    # Strict IEEE code must not depend on that pass; the loop vectorizer stays on.
    # -Wno-missing-field-initializers: a kernel row (harness/backend.h) leaves
    # its optional trailing members out, and C makes them NULL.
    # -fPIC -fvisibility=hidden: the runner's objects are also the libraries'
    # (emit_libraries), which export only what a public header declares
    # (harness/kcs_export.h, docs/library.md).
    n.variable("cflags", f"-std=gnu11 -D_GNU_SOURCE -Wall -Wextra{werror} -Wno-format-truncation "
                         f"-fPIC -fvisibility=hidden "
                         f"-Wno-missing-field-initializers "
                         f"-ffp-contract=off -fno-fast-math -fno-tree-slp-vectorize "
                         f"-Iharness -Iops -Iref -I{build} -DKCS_SOURCE_DIR='\"{SOURCE}\"' "
                         f"-DKCS_BUILD_OPTIMISE='\"{args.cflags}\"' -DKCS_BUILD_CUDA_ARCH='\"{args.cuda_arch}\"'")
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
    n.rule("saboteur_run", "$in run --backend saboteur $expectations --strict-expectations "
                           "--time-limit 5 --determinism --no-save --results $results $cases > $out.log 2>&1 "
                           "&& touch $out || (cat $out.log; exit 1)",
           "TEST every saboteur through the runner")
    n.rule("run_console", "$command", "$description", pool="console")
    # Directories change when a file is added, removed or renamed in them.
    n.build(ninja_file, "configure", implicit=[src("configure.py")] + WATCHED_FOLDERS)
    n.line()
    # The longest edges go here (LONG_EDGES), to start first (class Ninja).
    n.mark_first()
    return n, ninja_file


def emit_nvcc_rule(ctx):
    """Where CUDA is built: the nvcc variables and rule, machine code for
    --cuda-arch and its PTX for newer cards. Returns the nvcc variables of the
    files that need their own (source -> variables): empty without CUDA."""
    n, cuda = ctx.n, ctx.backend("cuda")
    nvcc_file_flags = {}
    if cuda:
        arch = ctx.args.cuda_arch
        n.variable("nvcc", cuda.found["nvcc"])
        common_nvccflags = (f"-std=c++17 -O3 -lineinfo "
                            f"-Xcompiler -Wall -Xcompiler -ffp-contract=off "
                            f"-Xcompiler -fPIC -Xcompiler -fvisibility=hidden "
                            f"-I{src('harness')} -I{src('ops')} -I{src('ref')}")
        n.variable("nvccflags", f"-gencode arch=compute_{arch},code=sm_{arch} "
                                f"-gencode arch=compute_{arch},code=compute_{arch} {common_nvccflags}")
        # wgmma and setmaxnreg exist only in the arch-specific sm_90a target, whose
        # code runs on compute capability 9.0 alone: those files' rows refuse other
        # devices (cuda/gemm/tensor_wgmma.cu, fp8_wgmma.cu), whatever --cuda-arch the
        # rest is built for.
        for source in ("cuda/gemm/tensor_wgmma.cu", "cuda/gemm/fp8_wgmma.cu"):
            nvcc_file_flags[source] = {"nvccflags": f"-gencode arch=compute_90a,code=sm_90a {common_nvccflags}"}
        for source in sorted(set(nvcc_file_flags) - set(cuda.row.sources())):
            sys.exit(f"configure.py: nvcc flags are given for {source}, which is no CUDA source (moved?)")
        n.rule("nvcc", "$nvcc -MD -MF $out.d $nvccflags -c $in -o $out", "NVCC $out",
               depfile="$out.d")
    return nvcc_file_flags


class VariantCompiler:
    """How one variant of the build (the plain one in the build folder, or
    `asan` in its own subfolder) compiles a C file: into <folder>/obj/, named
    after the source's path, with the variant's extra flags and optimisation."""

    def __init__(self, n, folder, extra_cflags, optimise):
        self.n, self.folder = n, folder
        self.extra_cflags, self.optimise = extra_cflags, optimise

    def obj_path(self, name):
        return os.path.join(self.folder, "obj", name)

    def compile(self, source, extra=""):
        """The object of one C file, with extra flags beyond the variant's own."""
        obj = self.obj_path(source.replace("/", "_").rsplit(".", 1)[0] + ".o")
        variables = {"extra_cflags": (self.extra_cflags + " " + extra).strip()}
        if self.optimise is not None:
            variables["optimise"] = self.optimise
        self.n.build(obj, "cc", src(source), variables=variables)
        return obj


class CoreBuild:
    """The runner, with the harness, the ops and the backends, and the unit
    tests, compiled once per variant of the build. It keeps what later steps
    reuse from the plain variant: the objects the libraries are made of
    (library_parts), and the runner's objects and embedded kernel texts that
    the OpenCL mutant runners swap one of (runner_links, embedded_objects)."""

    LIBS = "-ljansson -lnettle -lm"

    def __init__(self, n, build, op_files, nvcc_file_flags):
        self.n, self.build, self.nvcc_file_flags = n, build, nvcc_file_flags
        self.harness_sources = sorted(p for p in glob.glob("harness/*.c") if not p.endswith("_test.c")) + op_files
        self.embedded = set()  # .cl files embedded once, shared by every variant of the build
        self.runner_links = {}  # variant -> (objects, libs) of its runner, for the OpenCL mutant runners
        self.library_parts = {}  # "harness" and each backend's name -> {source: object}: the runner's, for the libraries
        self.embedded_objects = {}  # (variant, "opencl/<stem>.cl") -> the object of its embedded text

    def emit(self, variant, backends, extra_cflags="", ldflags="", optimise=None):
        """Compiles the harness, the backends, the runner and the unit tests
        into build/<variant>; returns (runner, test binaries, test stamps).
        The plain variant (variant "") also gets kcs-saboteur and its run."""
        n = self.n
        folder = os.path.join(self.build, variant) if variant else self.build
        os.makedirs(folder, exist_ok=True)
        compiler = VariantCompiler(n, folder, extra_cflags, optimise)

        harness = [compiler.compile(p) for p in self.harness_sources] + \
                  [compiler.compile(os.path.join(self.build, "ops.c"))]
        if not variant:  # the libraries are made of these same objects (emit_libraries)
            self.library_parts["harness"] = dict(zip(self.harness_sources + ["ops.c"], harness))
        reference = self.backend_objects(variant, compiler, next(b for b in backends if b.name == "reference"))
        objects = list(reference)
        link_libs = self.LIBS
        for backend in backends:
            own = reference if backend.name == "reference" else self.backend_objects(variant, compiler, backend)
            if backend.name != "reference":
                objects += own
            if backend.found["libs"]:
                link_libs += " " + backend.found["libs"]
        backends_object = self.backend_list(compiler, os.path.join(folder, "backends.c"),
                                            [f"kcs_{b.name}_backend" for b in backends],
                                            "the backends of this build")
        runner = os.path.join(folder, "kcs")
        runner_objects = [compiler.compile(p) for p in sorted(glob.glob("runner/*.c")) if not p.endswith("_test.c")]
        n.build(runner, "link", runner_objects + [backends_object] + harness + objects,
                variables={"libs": link_libs, "ldflags": ldflags})
        self.runner_links[variant] = (runner_objects + [backends_object] + harness + objects, link_libs)
        n.line()

        test_sources, support = self.test_support(folder, compiler)
        binaries, stamps = self.unit_tests(folder, compiler, support, harness + reference, ldflags)
        n.line()
        if variant:
            return runner, binaries, stamps
        stamps.append(self.saboteur_run(folder, compiler, runner_objects, harness + reference, test_sources,
                                        support, ldflags))
        n.line()
        return runner, binaries, stamps

    def backend_objects(self, variant, compiler, backend):
        """The objects of one backend's files (a .cl file's text embedded as a
        C string, a .cu file through nvcc), and of the list of its kernel
        tables; the plain variant's are also the libraries', by source file."""
        objects = []
        for source in backend.row.sources():
            if source.endswith(".cl"):
                stem = os.path.splitext(os.path.basename(source))[0]
                generated = os.path.join(self.build, f"{backend.row.folder}/{stem}_cl.c")
                if generated not in self.embedded:
                    self.n.build(generated, "embed", source, implicit=[src("tools/embed.py")],
                                 variables={"symbol": f"kcs_{backend.name}_{stem}_source"})
                    self.embedded.add(generated)
                objects.append(compiler.compile(generated))
                self.embedded_objects[(variant, source)] = objects[-1]
            elif source.endswith(".cu"):
                obj = compiler.obj_path(source.replace("/", "_")[:-3] + ".o")
                self.n.build(obj, "nvcc", source, variables=self.nvcc_file_flags.get(source))
                objects.append(obj)
            else:
                objects.append(compiler.compile(source, backend.found["cflags"]))
        if not variant:
            self.library_parts[backend.name] = dict(zip(backend.row.sources(), objects))
        tables = os.path.join(compiler.folder, f"{backend.name}_kernel_tables.c")
        write_table_list(tables, backend.name, kernel_tables(backend.row.sources(), backend.name))
        objects.append(compiler.compile(tables))
        return objects

    @staticmethod
    def backend_list(compiler, path, symbols, comment):
        """Writes and compiles the list of backends a runner has (kcs_builtin_backends)."""
        write_generated(path, f"/* Generated by configure.py: {comment}. */\n"
                              '#include "backend.h"\n' +
                        "".join(f"extern const kcs_backend {symbol};\n" for symbol in symbols) +
                        "const kcs_backend *const kcs_builtin_backends[] = {\n" +
                        "".join(f"    &{symbol},\n" for symbol in symbols) +
                        f"}};\nconst size_t kcs_builtin_backend_count = {len(symbols)};\n")
        return compiler.compile(path)

    @staticmethod
    def test_support(folder, compiler):
        """The test-only code in tests/ (the saboteur backend: each
        tests/saboteur_<op>.c exports kcs_saboteur_<op>_kernels,
        tests/saboteur_faults.c kcs_fault_*_kernels) and the lists of its
        tables; returns (its sources, their objects)."""
        test_sources = sorted(p for p in glob.glob("tests/*.c") if not p.endswith("_test.c"))
        support = [compiler.compile(p, "-Itests") for p in test_sources]
        for prefix in ("saboteur", "fault"):
            path = os.path.join(folder, f"{prefix}_kernel_tables.c")
            write_table_list(path, prefix, kernel_tables(test_sources, prefix))
            support.append(compiler.compile(path))
        return test_sources, support

    def unit_tests(self, folder, compiler, support, harness_and_reference, ldflags):
        """Every *_test.c, linked with the harness and the reference (and, for
        tests/, the test-only code) and run; returns (binaries, stamps)."""
        stamps, binaries = [], []
        for source in sorted(glob.glob("harness/*_test.c") + glob.glob("ops/*_test.c") + glob.glob("ref/*_test.c") +
                             glob.glob("tests/*_test.c")):
            name = os.path.splitext(os.path.basename(source))[0]
            extra = support if source.startswith("tests/") else []
            binary = os.path.join(folder, "tests", name)
            self.n.build(binary, "link", [compiler.compile(source, "-Itests")] + extra + harness_and_reference,
                         variables={"libs": self.LIBS + " -lcmocka", "ldflags": ldflags})
            stamp = binary + ".passed"
            # expectations_test reads the shipped known bugs
            self.n.build(stamp, "unit_test", binary,
                         implicit=[src(KNOWN_BUGS)] if name == "expectations_test" else [])
            stamps.append(stamp)
            binaries.append(binary)
        return binaries, stamps

    def saboteur_run(self, folder, compiler, runner_objects, harness_and_reference, test_sources, support,
                     ldflags):
        """The runner once more with the saboteur backend beside the reference
        (kcs-saboteur), and its run over every saboteur's cases, for `ninja
        check` to show through the normal path that the checks catch each
        planted fault; returns the run's stamp."""
        n = self.n
        saboteur_list = self.backend_list(compiler, os.path.join(folder, "saboteur_backends.c"),
                                          ["kcs_reference_backend", "kcs_saboteur_runner_backend",
                                           "kcs_replica_backend", "kcs_queue_model_backend"],
                                          "the backends of kcs-saboteur")
        saboteur_runner = os.path.join(folder, "kcs-saboteur")
        saboteurs = [obj for obj in support if not obj.endswith("_support.o")]
        n.build(saboteur_runner, "link", runner_objects + [saboteur_list] + harness_and_reference + saboteurs,
                variables={"libs": self.LIBS, "ldflags": ldflags})
        saboteur_stamp = os.path.join(folder, "tests", "saboteur_run.passed")
        # Each tests/saboteur_<x>.c names its cases on a "kcs-saboteur-cases:" line,
        # and tests/saboteur-expectations/<x>.txt says which saboteur must fail where.
        saboteur_cases = []
        for path in test_sources:
            with open(path) as source:
                for line in re.findall(r"kcs-saboteur-cases:([^*]*)\*/", source.read()):
                    saboteur_cases += [c for c in line.split() if c not in saboteur_cases]
        expectation_files = sorted(glob.glob("tests/saboteur-expectations/*.txt"))
        n.build(saboteur_stamp, "saboteur_run", saboteur_runner, implicit=expectation_files,
                variables={"cases": " ".join(saboteur_cases),
                           "expectations": " ".join(f"--expectations {f}" for f in expectation_files),
                           "results": os.path.join(folder, "saboteur-results.json")})
        return saboteur_stamp


def emit_sanitizer_build(ctx, core):
    """The CPU suite again under AddressSanitizer and UndefinedBehaviorSanitizer
    (`ninja sanitize`), in build/asan: backends whose objects cannot be
    instrumented are left out. Returns (its runner, its unit tests' stamps)."""
    sanitizers = "-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
    safe_backends = [b for b in ctx.backends if b.row.sanitizer_safe]
    asan_runner, _, asan_stamps = core.emit("asan", safe_backends, sanitizers, sanitizers, "-O1 -g")
    return asan_runner, asan_stamps


def emit_cases_run(ctx, runner):
    """Every case on every backend built, the heart of `ninja check`: it times
    nothing, so it runs beside the other tests (it spends much of its time
    waiting, not computing), and again at each `ninja check` (its input
    `always` is never built). `check` prints its last line at the end.
    Returns its log."""
    n, built = ctx.n, ctx.built
    results = built("results.json")
    failures = built("failures")
    cases_log = built("check-cases.log")
    n.build("always", "phony")
    n.rule("cases_run", f"$in run --skip-large --results {results} --junit {built('junit.xml')} "
                        f"--save-failures {failures} --expectations {src(KNOWN_BUGS)} > $out 2>&1 "
                        f"|| (cat $out; exit 1)",
           "CHECK every case on every backend built", first=True)
    n.build(cases_log, "cases_run", runner, implicit=["always", src(KNOWN_BUGS)])
    return cases_log


def report_sources():
    """The report's files, which every script test reads through the runner's results."""
    return sorted(glob.glob("report/*.py") + glob.glob("report/templates/*"))


def emit_script_tests(ctx, runner):
    """Script tests: tests/*_test.sh, found by glob, each given the runner (the
    numpy round trip, the runner's own tests, ...). Those that must find a
    planted slowdown (TIMING_TESTS) are `ninja timing-check`'s
    (emit_timing_tests); the report's test needs the report's Python.
    Returns their stamps."""
    stamps = []
    for script in sorted(glob.glob("tests/*_test.sh")):
        if (script.endswith("report_test.sh") and not ctx.python) or script in TIMING_TESTS:
            continue
        stamp = ctx.built("tests/" + os.path.basename(script)[:-3] + ".passed")
        ctx.n.build(stamp, "script_test", script, implicit=[runner, ctx.built("kcs-saboteur"), SCRIPT_PRELUDE] +
                                                        report_sources() + SCRIPT_TEST_INPUTS.get(script, []),
                    variables={"runner": runner})
        stamps.append(stamp)
    return stamps


def emit_emulation_tests(ctx):
    """The CUDA kernels emulated on the host (tests/cuda_*_emulation.sh): every
    launch configuration of cuda/*.cu runs under ASan without a GPU. They need
    g++ with C++20, not nvcc, and Boost.Context for the CUDA threads' fibers
    (tests/cuda_threads_emulation.h); --quick is the subset that reaches every
    configuration. Each is built by `ninja` with the other test binaries
    (--build: its build under AddressSanitizer is most of its CPU time) and
    only run by `ninja check` (--built). Left out, and said so, without them.
    Returns (their binaries, their stamps)."""
    n, binaries, stamps = ctx.n, [], []
    gxx = shutil.which("g++")
    fibers = ("#include <boost/context/fiber.hpp>\n"
              "int main(){namespace c = boost::context; int n = 0;\n"
              "c::fiber f([&](c::fiber &&s){ n++; return std::move(s); }); std::move(f).resume(); return n != 1;}\n")
    if gxx and probe(gxx, fibers, "-std=c++20 -x c++", "-lboost_context"):
        n.rule("emulation_build", "sh $in --build $folder > $out.log 2>&1 || (cat $out.log; exit 1)",
               "BUILD $out (CUDA kernels emulated on the host)", first=True)
        n.rule("emulation_test", "sh $in --built $folder $arguments > $out.log 2>&1 && touch $out "
                                 "|| (cat $out.log; exit 1)",
               "TEST $in (CUDA kernels emulated on the host)", first=True)
        sources = sorted(glob.glob("cuda/**/*.cu", recursive=True) + glob.glob("cuda/**/*.cuh", recursive=True) +
                         glob.glob("tests/cuda_*_emulation.*") + ["harness/status.c"])
        for script, name, arguments in (("tests/cuda_kernels_emulation.sh", "kernels", "--quick"),
                                        ("tests/cuda_gemm_emulation.sh", "gemm", "")):
            folder = ctx.built(f"emulation/{name}")
            binary = os.path.join(folder, "emulation")
            n.build(binary, "emulation_build", script, implicit=sources, variables={"folder": folder})
            stamp = ctx.built("tests/" + os.path.basename(script)[:-3] + ".passed")
            n.build(stamp, "emulation_test", script, implicit=[binary],
                    variables={"folder": folder, "arguments": arguments})
            binaries.append(binary)
            stamps.append(stamp)
    else:
        print("  left out       CUDA emulation tests: no g++ with C++20 and Boost.Context "
              "(install g++ and libboost-context-dev)")
    return binaries, stamps


def emit_opencl_mutants(ctx, core, runner):
    """OpenCL kernels with a mistake planted in them (tests/opencl-mutants/*.mutant,
    applied by tests/opencl_mutant.py): a runner each, build/mutants/kcs-<name>,
    the same as build/kcs but for that one kernel file, and the tests that show
    that what should catch each mistake does (the softmax mutants; every row
    under POCL's other compilation paths). Returns (the mutant runners, the
    tests' stamps): none without the OpenCL backend."""
    n, built = ctx.n, ctx.built
    mutant_runners, stamps = [], []
    if not ctx.backend("opencl"):
        return mutant_runners, stamps
    objects, link_libs = core.runner_links[""]
    n.rule("opencl_mutant", f"{sys.executable} {src('tests/opencl_mutant.py')} $in $out", "MUTANT $out")
    for path in sorted(glob.glob("tests/opencl-mutants/*.mutant")):
        name = os.path.basename(path)[:-len(".mutant")]
        with open(path) as f:
            kernels = re.findall(r"^kernel:\s*(\S+)\s*$", f.read(), re.M)
        if len(kernels) != 1 or not re.fullmatch(r"opencl/\w+\.cl", kernels[0]):
            sys.exit(f"configure.py: {path} needs one line 'kernel: opencl/FILE.cl'")
        stem = os.path.basename(kernels[0])[:-3]
        original = core.embedded_objects.get(("", kernels[0]))
        if original is None:
            sys.exit(f"configure.py: {path} mutates {kernels[0]}, which the OpenCL backend does not embed")
        mutated = built(f"mutants/{name}.cl")
        n.build(mutated, "opencl_mutant", path, implicit=[src("tests/opencl_mutant.py"), src(kernels[0])])
        embedded_source = built(f"mutants/{name}_cl.c")
        n.build(embedded_source, "embed", mutated, implicit=[src("tools/embed.py")],
                variables={"symbol": f"kcs_opencl_{stem}_source"})
        embedded_object = built(f"mutants/{name}_cl.o")
        n.build(embedded_object, "cc", embedded_source, variables={"extra_cflags": ""})
        mutant_runner = built(f"mutants/kcs-{name}")
        n.build(mutant_runner, "link", [embedded_object if o == original else o for o in objects],
                variables={"libs": link_libs, "ldflags": ""})
        mutant_runners.append(mutant_runner)
    n.build("mutants", "phony", mutant_runners)
    n.line()

    # The softmax kernels with their merge of empty pieces broken must fail
    # the attention-shaped cases (and pass the others), on any OpenCL device.
    n.rule("opencl_test", "sh $in $arguments > $out.log 2>&1 && touch $out || (cat $out.log; exit 1)",
           "TEST $in", first=True)
    stamp = built("tests/softmax_mutants.passed")
    n.build(stamp, "opencl_test", src("tests/softmax_mutants.sh"), implicit=[runner] + mutant_runners,
            variables={"arguments": f"{runner} {built('mutants')}"})
    stamps.append(stamp)

    # Every OpenCL row under POCL's other compilation paths and a large
    # GPU's launch plans, and the proof that the plans catch a mistake
    # only they reach (tests/opencl_paths.sh; docs/runner.md).
    stamp = built("tests/opencl_paths.passed")
    n.build(stamp, "opencl_test", src("tests/opencl_paths.sh"),
            implicit=[runner, src(KNOWN_BUGS)] + mutant_runners,
            variables={"arguments": f"{runner} {built('mutants')}"})
    stamps.append(stamp)
    return mutant_runners, stamps


def emit_opencl_sanitize(ctx, runner, mutant_runners):
    """`ninja opencl-sanitize`: every OpenCL kernel on small cases under Oclgrind's
    memory-access, data-race and API checks, and unoptimised under those and its
    uninitialised-value check (tests/opencl_sanitize.sh), and the proof that they
    catch a planted access past a global, a local and a private array and a
    missing barrier (tests/opencl_sanitize_mutants.sh). Part of `ninja check`;
    left out, and said so, without oclgrind. Returns their stamps."""
    n, built = ctx.n, ctx.built
    opencl = ctx.backend("opencl")
    oclgrind = shutil.which("oclgrind")
    if not (opencl and oclgrind):
        print(f"  left out       opencl-sanitize: {'no oclgrind (install oclgrind)' if opencl else 'no OpenCL backend'}")
        return []
    print(f"  oclgrind       {oclgrind} (ninja opencl-sanitize)")
    sanitize_stamps = []
    work = built("opencl-sanitize")
    for script, arguments in (("tests/opencl_sanitize.sh", f"{runner} {work}"),
                              ("tests/opencl_sanitize_mutants.sh", f"{built('mutants')} {work}")):
        stamp = built("tests/" + os.path.basename(script)[:-3] + ".passed")
        n.build(stamp, "opencl_test", src(script),
                implicit=[runner, src("tests/oclgrind_run.sh")] + mutant_runners +
                         sorted(glob.glob("cases/*.md") + glob.glob("tests/cases/*.md")),
                variables={"arguments": arguments})
        sanitize_stamps.append(stamp)
    n.build("opencl-sanitize", "phony", sanitize_stamps)
    n.line()
    return sanitize_stamps


def emit_test_ops_run(ctx, runner):
    """The test-only ops (tests/cases/*.md, e.g. scale: the proof that a new op
    takes new files only) on every backend built, through the normal runner.
    Returns its stamp, in a list."""
    n = ctx.n
    n.rule("test_ops_run", "$in run --cases tests/cases --no-save --results $results > $out.log 2>&1 "
                           "&& touch $out || (cat $out.log; exit 1)", "TEST the test-only ops on every backend")
    stamp = ctx.built("tests/test_ops_run.passed")
    n.build(stamp, "test_ops_run", runner, implicit=sorted(glob.glob("tests/cases/*.md")),
            variables={"results": ctx.built("test-ops-results.json")})
    return [stamp]


def emit_report_unittest(ctx):
    """The report's own tests (Python unittest, report/test_*.py), where
    Python has what the report needs: a test edge per module, so that they
    run beside each other and the other tests rather than one after another
    in one process (report/ is a watched folder: a new module gets its edge).
    Returns their stamps."""
    if not ctx.python:
        return []
    ctx.n.rule("python_test", f"{ctx.python} -m unittest discover -s report -p $module > $out.log 2>&1 "
                              "&& touch $out || (cat $out.log; exit 1)", "TEST report/$module", first=True)
    modules = sorted(os.path.basename(p) for p in glob.glob("report/test_*.py"))
    stamps = []
    for module in modules:
        stamp = ctx.built(f"tests/report_{module[:-3]}.passed")
        ctx.n.build(stamp, "python_test", implicit=report_sources(), variables={"module": module})
        stamps.append(stamp)
    return stamps


def emit_timing_tests(ctx, runner):
    """Tests that must find a planted slowdown: `ninja timing-check`, not part
    of `ninja check`. They need no quiet machine either: both sides are
    timed in interleaved rounds, where the machine's load is common to both,
    and the planted slowdown gets three attempts to be named SLOWER
    (tests/compare_timing_test.sh)."""
    timing_stamps = []
    for script in TIMING_TESTS:
        if ctx.python:
            stamp = ctx.built("tests/" + os.path.basename(script)[:-3] + ".passed")
            ctx.n.build(stamp, "script_test", script,
                        implicit=[runner, ctx.built("kcs-saboteur"), SCRIPT_PRELUDE] + report_sources(),
                        variables={"runner": runner})
            timing_stamps.append(stamp)
    ctx.n.build("timing-check", "phony", timing_stamps)


def emit_check_targets(ctx, runner, cases_log, test_stamps, asan_runner, asan_stamps):
    """The targets a person asks for by name: `unit-tests`, `check` (every
    test and every case), `golden`, `sanitize` (ASan and UBSan), `valgrind`,
    and `cuda-sanitize` (compute-sanitizer, where CUDA is built)."""
    n, built = ctx.n, ctx.built
    n.build("unit-tests", "phony", test_stamps)
    n.build("check", "run_console", implicit=[runner, cases_log] + test_stamps,
            variables={"command": f"tail -n 2 {cases_log}",
                       "description": "CHECK every case on every backend built: the last lines of its log"})
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
    cuda = ctx.backend("cuda")
    if cuda:
        # The CUDA cases under compute-sanitizer's memcheck and racecheck (on a
        # machine with a GPU); large cases are left out to keep it minutes.
        sanitizer = os.path.join(cuda.found["root"], "bin", "compute-sanitizer")
        commands = []
        for tool in ("memcheck", "racecheck"):
            commands.append(f"{sanitizer} --tool {tool} --error-exitcode 99 "
                            f"{'--leak-check full ' if tool == 'memcheck' else ''}"
                            f"{runner} run --backend cuda --in-process --skip-large --no-save "
                            f"--results {built(f'cuda-{tool}-results.json')}")
        n.build("cuda-sanitize", "run_console", implicit=[runner],
                variables={"command": " && ".join(commands),
                           "description": "CUDA-SANITIZE memcheck and racecheck of the CUDA cases"})


def emit_fuzzers(ctx, op_files):
    """`ninja fuzz`, where clang has libFuzzer: the case-file parser (with the
    op table it checks names against) and the .npy reader, built with
    libFuzzer, ASan and UBSan, since both read files a person writes."""
    n, fuzz_cc = ctx.n, ctx.fuzz_cc
    if not fuzz_cc:
        return
    fuzz_flags = "-fsanitize=fuzzer,address,undefined -g -O1"
    n.rule("fuzz_link", f"{fuzz_cc} -std=gnu11 -D_GNU_SOURCE -ffp-contract=off {fuzz_flags} "
                        f"-Iharness -Iops -I{ctx.build} -o $out $in -lm", "FUZZ $out")
    fuzzers = []
    parser_sources = [f"harness/{name}.c" for name in ("case_file", "generator", "status", "dtype",
                                                         "op", "check")]
    parser_sources += op_files + [os.path.join(ctx.build, "ops.c")]
    for target, sources in (("case_file_fuzz", parser_sources),
                            ("npy_fuzz", ["harness/npy.c", "harness/status.c", "harness/dtype.c"])):
        binary = ctx.built(f"fuzz/{target}")
        n.build(binary, "fuzz_link", [f"fuzz/{target}.c"] + sources)
        fuzzers.append(binary)
    n.build("fuzz", "phony", fuzzers)


def emit_suite_and_report(ctx, runner):
    """The main job: `ninja suite`, every case on every backend found, timed;
    and `ninja report`, the report of its results, where Python has what the
    report needs. `ninja suite` runs every time it is asked (a new driver is
    no input ninja can see) and exits as the runner does."""
    n, built, python = ctx.n, ctx.built, ctx.python
    suite_results = built("suite-results.json")
    suite_junit = built("suite-junit.xml")
    failures = built("failures")

    # The default lanes (docs/runner.md, "All devices at once"): one per card,
    # its CUDA and OpenCL devices together by PCI address, the cards at once;
    # timing, the lane of the devices that share the host's cores runs alone.
    # Every ceiling, not only those the timed cases need: the report's
    # rooflines draw the FMA rate too (docs/runner.md, "Ceilings").
    def suite_command(results):
        return (f"{runner} run --benchmark --all-ceilings --results {results} --junit {suite_junit} "
                f"--save-failures {failures} --expectations {src(KNOWN_BUGS)}")

    n.build("suite", "run_console", implicit=[runner],
            variables={"command": suite_command(suite_results),
                       "description": "SUITE every case on every backend, timed"})
    if python:
        # `ninja report` reports build/suite-results.json and depends on it, so
        # that on a fresh build it runs the suite first. The file is made only
        # when missing (generator: no input or command makes it stale; the
        # runner is order-only), so `ninja report` after `ninja suite` reports
        # that run rather than making another; and `ninja` and `ninja check`
        # never ask for it. A run with failing cases is still a results file
        # to report (exit 1 is kept as a pass here; the report shows the
        # failures), written under another name first so that a run that dies
        # leaves no half a file to be taken for a whole one.
        partial = suite_results + ".partial"
        n.rule("suite_results",
               f"{suite_command(partial)}; status=$$?; "
               f"if [ $$status -le 1 ] && [ -s {partial} ]; then mv {partial} {suite_results}; "
               f"else rm -f {partial}; exit $$status; fi",
               "SUITE every case on every backend, timed, for the report", generator=True, pool="console")
        n.build(suite_results, "suite_results", order_only=[runner])
        n.build("report", "run_console", implicit=[suite_results],
                variables={"command": f"{python} report/kcs_report.py {suite_results} --output "
                                      f"{built('report')}",
                           "description": "REPORT from the suite's results"})


def main():
    """Probes the machine, then writes build.ninja step by step: the head and
    rules, the runner and its unit tests, the libraries, the sanitizer build,
    the tests (each kind in its own step), the targets asked for by name, and
    the suite and its report. Each step is a function above, in this order;
    the order matters, since build.ninja is written as the steps run."""
    args = parse_arguments()
    os.chdir(SOURCE)
    build = os.path.normpath(args.build_dir)
    os.makedirs(build, exist_ok=True)

    check_compiler(args.cc)
    python, python_missing = find_python(args)
    fuzz_cc = find_fuzz_compiler()
    print("kcs configure:")
    print(f"  C compiler     {args.cc}")
    backends = choose_backends(args, args.cc)
    if not fuzz_cc:
        print("  left out       fuzz: no clang with libFuzzer (install clang and libclang-rt-14-dev)")
    if python_missing:
        print(f"  left out       report: {python_missing}")
    else:
        print(f"  report         {python}")
    op_files = write_runner_op_list(build)

    n, ninja_file = start_build_file(args, build, python)
    ctx = Context(args, build, n, backends, python, fuzz_cc)
    core = CoreBuild(n, build, op_files, emit_nvcc_rule(ctx))
    runner, test_binaries, test_stamps = core.emit("", backends)
    library_products, library_stamps = emit_libraries(n, build, backends, core.library_parts, args.prefix)
    test_stamps += library_stamps
    asan_runner, asan_stamps = emit_sanitizer_build(ctx, core)
    cases_log = emit_cases_run(ctx, runner)
    test_stamps += emit_script_tests(ctx, runner)
    emulation_binaries, emulation_stamps = emit_emulation_tests(ctx)
    test_stamps += emulation_stamps
    mutant_runners, opencl_stamps = emit_opencl_mutants(ctx, core, runner)
    test_stamps += opencl_stamps
    test_stamps += emit_opencl_sanitize(ctx, runner, mutant_runners)
    test_stamps += emit_test_ops_run(ctx, runner)
    test_stamps += emit_report_unittest(ctx)
    emit_timing_tests(ctx, runner)
    emit_check_targets(ctx, runner, cases_log, test_stamps, asan_runner, asan_stamps)
    emit_fuzzers(ctx, op_files)
    emit_suite_and_report(ctx, runner)
    # Every binary the tests run is built by `ninja`, so that `ninja check` after it only runs tests.
    n.build("all", "phony", [runner] + test_binaries + [ctx.built("kcs-saboteur")] + mutant_runners +
            emulation_binaries + library_products)
    n.line("default all")
    n.close()
    print(f"  wrote          {ninja_file} (build products under {build})")


if __name__ == "__main__":
    main()
