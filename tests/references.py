#!/usr/bin/python3
"""references.py: nothing in the tree points to a file or a branch that does not exist.

    /usr/bin/python3 tests/references.py [ROOT]          ROOT: the tree to scan (default: this one)
    /usr/bin/python3 tests/references.py --list [ROOT]   every file of the tree, one a line

Scans the text files of ROOT (C, CUDA and OpenCL sources and headers, Python, shell, Markdown:
those git tracks or would, where ROOT is a git work tree, else every such file under it) for
references that name nothing, prints each as FILE:LINE: what is missing, and exits 1 when there
is one (0 when none, 2 on a usage error). tests/references_test.sh runs it on the tree, and on a copy with
bad references planted, which it must name.

Where it looks: the prose, where a reference goes stale unnoticed. That is every line of a
Markdown file, and the comments and docstrings of the sources; not their code, which is checked
by running it (a path in code that names nothing fails the build or its test), and whose strings
are often made-up paths in a test's temporary folder ("cases/bad.md").

What it takes for a reference:
- a repository path: a word that begins with one of the tree's top-level folders (harness/,
  ops/, cuda/, docs/, tests/, ...) or is a top-level file (README.md, configure.py). It must be a
  file or folder of ROOT;
- a bare source file name (`run.c`, `lanes.c`): a file of that name must be in the referring
  file's folder or in some folder of the tree (in Markdown, outside code blocks, which hold
  commands with a reader's own files: `cc prog.c`; a capitalised name, `OUT.cl`, is a
  placeholder);
- a Markdown link `[text](target)` that is no URL: target, without its #anchor, must exist
  relative to the Markdown file's folder;
- a development branch, "<name> branch" where the name looks like one (with a hyphen, an
  underscore or a digit, or in backquotes: "gemm-modes branch"; "the branch" names none): a
  branch of that name must exist in ROOT's repository.

What is deliberately no reference to a file of the tree:
- generated paths, build/...: configure.py makes them (build/ops.c); the pattern of a path
  does not even match them;
- patterns: a path with a placeholder or a glob (`docs/<op>.md`, `cuda/*.cu`, `$dir/x`), or a
  capitalised placeholder (`opencl/FILE.cl`), which names a kind of file, not one;
- a path inside another one (`/usr/local/cuda/lib64`) or a URL: not the tree's;
- the names in NOT_IN_TREE: each one a file that the text says is not in the tree, with why;
- the bare names in BARE_NAMES_ELSEWHERE: headers of the system and the libraries;
- the files in NOT_SCANNED: this one, whose examples name nothing on purpose.
"""

import io
import os
import re
import subprocess
import sys
import tokenize

C_LIKE = (".c", ".h", ".cu", ".cuh", ".cl", ".cpp")
EXTENSIONS = C_LIKE + (".py", ".sh", ".md")

# The top-level folders and files that a path may start with: these, and every folder the tree
# has (a path into a folder that is gone is still read as one).
FOLDERS = ("harness", "ops", "ref", "opencl", "cuda", "runner", "lib", "tests", "examples", "docs",
           "report", "tools", "fuzz", "cases", "golden", "expectations")
TOP_FILES = ("README.md", "configure.py")


def path_pattern(folders):
    """A path: a word that starts with one of folders and a slash, or is a top-level file; not
    preceded by what would make it part of a longer path or word (so /usr/local/cuda/lib64 and
    ocl-icd/cuda are not read as cuda/...)."""
    return re.compile(r"(?<![\w./~$-])((?:%s)/[\w./<>*?{}\[\]$%%+-]*|(?:%s)\b)" %
                      ("|".join(sorted(folders)), "|".join(re.escape(f) for f in TOP_FILES)))

# A bare file name of a source kind, not part of a path or of a pattern (`*_test.c`).
BARE = re.compile(r"(?<![\w./<>*$-])([A-Za-z][\w-]*\.(?:c|h|cu|cuh|cl|py|sh|md))\b(?![\w/(<*-])")
# [text](target).
LINK = re.compile(r"\]\(([^()\s]+)\)")
# "<name> branch": the name as written, backquotes and all.
BRANCH = re.compile(r"(`[^`\s]+`|[\w.-]+) branch\b")

# Files that the text names and says are not in the tree, each with why.
NOT_IN_TREE = {
    "negate": "docs/adding-an-op.md's op made from scratch to count the files a new op takes, "
              "then dropped: its files are named as the measurement made them",
    "cuda/canaries.cu": "docs/canaries.md: where a first CUDA canary would go; there is none yet",
}

# Files not scanned, each for a reason.
NOT_SCANNED = {"tests/references.py": "this file: its examples of what the scan finds name nothing on purpose"}

# Bare names that are no file of the tree: the system's headers and the libraries', named in
# comments and prose (an #include <...> line is skipped as a whole).
BARE_NAMES_ELSEWHERE = {"cl.h", "cl_ext.h", "cublas_v2.h", "cublasLt.h", "cuda_fp16.h", "cuda_bf16.h",
                        "cuda_fp8.h", "cuda_runtime.h", "mma.h", "cmocka.h", "jansson.h", "sha2.h"}


def all_files(root):
    """Every file of the tree: where root is a git work tree, those git tracks and those it would
    (new, not ignored); else every file under root but .git and the build folders (build-*)."""
    try:
        listing = subprocess.run(["git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                                 capture_output=True, check=True)
        return sorted(n for n in listing.stdout.decode().split("\0") if n)
    except (OSError, subprocess.CalledProcessError):
        names = []
        for folder, subfolders, files in os.walk(root):
            subfolders[:] = [s for s in subfolders if s != ".git" and not s.startswith("build")]
            names += [os.path.relpath(os.path.join(folder, f), root) for f in files]
        return sorted(names)


def branches(root):
    """Every branch name of root's repository (local and remote), or None outside one."""
    try:
        refs = subprocess.run(["git", "-C", root, "for-each-ref", "--format=%(refname)",
                               "refs/heads", "refs/remotes"], capture_output=True, check=True, text=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    names = set()
    for ref in refs.stdout.split():
        parts = ref.split("/")
        names.add("/".join(parts[2:]) if parts[1] == "heads" else "/".join(parts[3:]))
    return names


def c_comments(text):
    """The comments of C-like source, line by line (code blanked), string and character
    literals skipped so that a "/*" in a string opens nothing."""
    lines, current = [], []
    state = "code"  # code, block, line, string, char
    i = 0
    while i < len(text):
        c, pair = text[i], text[i:i + 2]
        if c == "\n":
            lines.append("".join(current))
            current = []
            state = "code" if state in ("line", "string", "char") else state
            i += 1
            continue
        if state == "code":
            if pair == "/*":
                state, i = "block", i + 2
                current.append("  ")
                continue
            if pair == "//":
                state, i = "line", i + 2
                current.append("  ")
                continue
            if c == '"':
                state = "string"
            elif c == "'":
                state = "char"
            current.append(" ")
        elif state == "block":
            if pair == "*/":
                state, i = "code", i + 2
                current.append("  ")
                continue
            current.append(c)
        elif state == "line":
            current.append(c)
        else:  # a literal: skip it, with its escapes
            if c == "\\":
                current.append("  ")
                i += 2
                continue
            if (state == "string" and c == '"') or (state == "char" and c == "'"):
                state = "code"
            current.append(" ")
        i += 1
    lines.append("".join(current))
    return lines


def python_prose(text):
    """The comments and docstrings of Python source, line by line (code blanked)."""
    lines = [""] * (text.count("\n") + 1)

    def put(start, end, string):
        for offset, piece in enumerate(string.split("\n")):
            lines[start[0] - 1 + offset] += " " + piece

    previous = tokenize.NEWLINE
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                put(token.start, token.end, token.string)
            elif token.type == tokenize.STRING and previous in (tokenize.NEWLINE, tokenize.INDENT,
                                                                  tokenize.DEDENT):
                put(token.start, token.end, token.string)  # a string on its own: a docstring
            if token.type not in (tokenize.COMMENT, tokenize.NL):
                previous = token.type
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    return lines


def shell_comments(text):
    """The comments of a shell script, line by line: from a # that starts a word, outside quotes."""
    lines = []
    for line in text.split("\n"):
        quote, comment = None, ""
        for i, c in enumerate(line):
            if quote:
                quote = None if c == quote else quote
            elif c in "'\"":
                quote = c
            elif c == "#" and (i == 0 or line[i - 1] in " \t;"):
                comment = line[i:]
                break
        lines.append(comment)
    return lines


def is_pattern(path):
    """Whether a path names a kind of file rather than one: a placeholder, a glob, a variable."""
    return any(c in path for c in "<>*?{}[]$%") or re.search(r"/[A-Z][A-Z_]+\b", path) is not None


def looks_like_branch(word):
    """Whether the word before "branch" names a development branch rather than being English."""
    if word.startswith("`"):
        return True
    return re.search(r"[a-z]", word) is not None and re.search(r"[-_0-9]", word) is not None


def clean(path):
    """A path as written, without the punctuation a sentence puts after it."""
    return path.rstrip(".,:;'\"`)")


def not_in_tree(path):
    """Whether path is one of NOT_IN_TREE's: by its whole path or by its op's name."""
    stem = os.path.basename(path).split(".")[0]
    return path in NOT_IN_TREE or any(stem in (name, f"kcs_ref_{name}") for name in NOT_IN_TREE)


class Scanner:
    """Checks the references of one tree; each problem is kept as "FILE:LINE: text"."""

    def __init__(self, root):
        self.root = root
        self.problems = []
        self.branch_names = branches(root)
        everything = all_files(root)
        self.files = [n for n in everything if n.endswith(EXTENSIONS) and n not in NOT_SCANNED]
        self.names = {os.path.basename(n) for n in everything}
        self.path = path_pattern(set(FOLDERS) | {n.split("/")[0] for n in everything if "/" in n})

    def exists(self, path):
        return os.path.exists(os.path.join(self.root, path))

    def problem(self, name, number, text):
        self.problems.append(f"{name}:{number}: {text}")

    def scan(self):
        for name in self.files:
            try:
                with open(os.path.join(self.root, name), encoding="utf-8", errors="replace") as f:
                    text = f.read()
            except OSError as e:
                self.problem(name, 0, f"cannot be read ({e.strerror})")
                continue
            if name.endswith(C_LIKE):
                prose = c_comments(text)
            elif name.endswith(".py"):
                prose = python_prose(text)
            elif name.endswith(".sh"):
                prose = shell_comments(text)
            else:
                prose = text.split("\n")
            fenced = False
            for number, line in enumerate(prose, 1):
                if name.endswith(".md") and line.lstrip().startswith("```"):
                    fenced = not fenced
                    continue
                # Markdown's code, fenced or indented by four spaces, holds commands and
                # listings with a reader's own files (`cc prog.c`): its bare names are not the tree's
                code = name.endswith(".md") and (fenced or line.startswith(("    ", "\t")))
                self.scan_line(name, number, line, bare_names=not code)
        return self.problems

    def scan_line(self, name, number, line, bare_names):
        if re.match(r"\s*#\s*include\s*<", line):
            return  # a system header
        line = re.sub(r"\w+://\S+", " ", line)  # URLs
        if name.endswith(".md"):
            for match in LINK.finditer(line):
                self.check_link(name, number, match.group(1))
            line = LINK.sub("]", line)  # a link's target is checked as a link, relative to the file
        for match in self.path.finditer(line):
            path = clean(match.group(1))
            if path and not is_pattern(path) and not not_in_tree(path) and not self.exists(path):
                self.problem(name, number, f"{path} does not exist")
        if bare_names:
            for match in BARE.finditer(line):
                self.check_bare(name, number, match.group(1))
        for match in BRANCH.finditer(line):
            word = match.group(1)
            if looks_like_branch(word) and self.branch_names is not None and word.strip("`") not in self.branch_names:
                self.problem(name, number, f"the {word.strip('`')} branch does not exist")

    def check_bare(self, name, number, bare):
        """A bare file name: the referring file's folder, else some folder of the tree, holds it."""
        if bare in BARE_NAMES_ELSEWHERE or not_in_tree(bare) or re.fullmatch(r"[A-Z_]+\.\w+", bare):
            return  # a capitalised name is a placeholder (OUT.cl)
        if bare in self.names or self.exists(os.path.join(os.path.dirname(name), bare)):
            return
        self.problem(name, number, f"{bare} is no file of the tree")

    def check_link(self, name, number, target):
        """A Markdown link: relative to the file's folder, without its #anchor; URLs are left alone."""
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            return
        path = target.split("#")[0]
        if not path or is_pattern(path) or not_in_tree(path):
            return
        if not os.path.exists(os.path.join(self.root, os.path.dirname(name), path)):
            self.problem(name, number, f"link {target} does not exist (relative to {os.path.dirname(name) or '.'}/)")


def main(argv):
    args = argv[1:]
    listing = args[:1] == ["--list"]
    if listing:
        args = args[1:]
    if len(args) > 1 or (args and args[0].startswith("-")):
        print("usage: /usr/bin/python3 tests/references.py [--list] [ROOT]", file=sys.stderr)
        return 2
    root = args[0] if args else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not os.path.isdir(root):
        print(f"references.py: {root} is no folder", file=sys.stderr)
        return 2
    if listing:  # every file of the tree, scanned or not (tests/references_test.sh copies them)
        print("\n".join(all_files(root)))
        return 0
    scanner = Scanner(root)
    problems = scanner.scan()
    for p in problems:
        print(p)
    print(f"references.py: {len(scanner.files)} files scanned, {len(problems)} references to nothing")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
