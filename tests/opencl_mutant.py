#!/usr/bin/env python3
"""opencl_mutant.py: writes an OpenCL kernel file with one mistake planted in it.

    tests/opencl_mutant.py tests/opencl-mutants/NAME.mutant OUT.cl

A mutant (tests/opencl-mutants/*.mutant) is a real kernel of opencl/ broken on
purpose, so that a test can show that a checker catches the mistake in the
kernel the suite ships, not in a toy: Oclgrind an access past a buffer or a
missing barrier (tests/opencl_sanitize_mutants.sh), the softmax cases a merge
that lets an empty piece of a row in (tests/softmax_mutants.sh). configure.py
builds a runner per mutant, build/mutants/kcs-NAME, whose copy of that kernel
file is the mutated one.

The file: comment lines (#) that say what the mutant breaks and what must catch
it, a line "kernel: opencl/FILE.cl" (from the source tree's root), then one or more hunks, each a line "@@"
followed by lines as in a unified diff without line numbers: " " context, "-"
a line removed, "+" a line added. The context and removed lines of a hunk must
appear, consecutively and exactly, once in the kernel file; a kernel edit that
moves them makes the build fail here, naming the mutant, rather than leave a
mutant that no longer plants its mistake.
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fail(mutant, message):
    sys.exit(f"{mutant}: {message}")


def read_mutant(path):
    """(kernel path, [(old lines, new lines)]) from a .mutant file."""
    kernel, hunks = None, []
    with open(path) as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, 1):
        if hunks:
            if line == "@@":
                hunks.append(([], []))
            elif line[:1] in (" ", "-", "+"):
                old, new = hunks[-1]
                if line[0] in (" ", "-"):
                    old.append(line[1:])
                if line[0] in (" ", "+"):
                    new.append(line[1:])
            else:
                fail(path, f"line {number}: a hunk line must start with ' ', '-' or '+'")
        elif line.startswith("#") or not line.strip():
            continue
        elif line.startswith("kernel:"):
            kernel = line[len("kernel:"):].strip()
        elif line == "@@":
            hunks.append(([], []))
        else:
            fail(path, f"line {number}: expected a comment, 'kernel: FILE' or '@@'")
    if not kernel:
        fail(path, "no 'kernel: opencl/FILE.cl' line")
    if not hunks or any(old == new for old, new in hunks):
        fail(path, "no hunk that changes anything")
    return kernel, hunks


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: opencl_mutant.py MUTANT OUT.cl")
    mutant, out = sys.argv[1], sys.argv[2]
    kernel, hunks = read_mutant(mutant)
    with open(os.path.join(ROOT, kernel)) as f:
        text = f.read().split("\n")
    for index, (old, new) in enumerate(hunks, 1):
        places = [i for i in range(len(text) - len(old) + 1) if text[i:i + len(old)] == old]
        if len(places) != 1:
            fail(mutant, f"hunk {index} matches {len(places)} places in {kernel}, not one: "
                         "the kernel changed, so update the mutant")
        text[places[0]:places[0] + len(old)] = new
    with open(out, "w") as f:
        f.write("\n".join(text))


if __name__ == "__main__":
    main()
