#!/usr/bin/env python3
"""What `cmake --install` puts where, against what the docs say.

    install_layout_test.py BUILD_DIR SOURCE_DIR [--keep DIR]

Installs BUILD_DIR with DESTDIR=<tmp>/root and --prefix /opt/tributary (DESTDIR catches a file
whose destination is absolute, so nothing is written outside the temporary directory), then checks:

1. every installed file is under the prefix (a destination computed from an empty variable, such as
   the Python package's "/python3/dist-packages" before GNUInstallDirs was included, is not);
2. the install table of docs/embedding.md ("This installs, under the prefix ...") is what is
   installed, both ways: every file a row names is there (a row saying "that was built" only when
   the build has it), and every installed file is named by a row;
3. what scripts/demo builds (its `--target` list) is enough for the install: every build output a
   non-OPTIONAL install rule copies is built by those targets, and so is every program that
   README.md, docs/ and examples/ name as build/release/<dir>/<program> (benchmarks and the Python
   package excepted: the docs say a full `scripts/build` makes them).

With --keep DIR the install tree is left in DIR (DIR/root/opt/tributary is the prefix), for
install_example_test.sh to build the examples against.
"""
import fnmatch
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

PREFIX = "/opt/tributary"


def fail(problems):
    for p in problems:
        print("[install-layout] " + p)
    print(f"[install-layout] FAILED: {len(problems)} problem(s)")
    sys.exit(1)


def install(build, root):
    env = dict(os.environ, DESTDIR=root)
    r = subprocess.run(["cmake", "--install", build, "--prefix", PREFIX], env=env,
                       capture_output=True, text=True)
    if r.returncode != 0:
        fail([f"cmake --install {build} --prefix {PREFIX} failed (exit {r.returncode}):",
              r.stdout[-4000:] + r.stderr[-4000:]])
    files = []
    for d, _, names in os.walk(root):
        for n in names:
            files.append(os.path.relpath(os.path.join(d, n), root))
    return sorted(files)


def expand_braces(pattern):
    m = re.search(r"\{([^{}]*)\}", pattern)
    if not m:
        return [pattern]
    out = []
    for alt in m.group(1).split(","):
        out += expand_braces(pattern[:m.start()] + alt + pattern[m.end():])
    return out


def install_table(source):
    """Rows of docs/embedding.md's install table: (patterns relative to the prefix, conditional)."""
    text = open(os.path.join(source, "docs", "embedding.md")).read()
    marker = "This installs, under the prefix"
    if marker not in text:
        fail([f"docs/embedding.md: no install table after '{marker}'"])
    start = text.index(marker)
    rows = []
    for line in text[start:].splitlines()[1:]:
        line = line.strip()
        if not line:
            if rows:
                break
            continue
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) < 2 or cells[0] in ("what", "---") or set(cells[0]) <= set("-"):
            continue
        where = re.findall(r"`([^`]+)`", cells[1])
        if len(where) != 1:
            fail([f"docs/embedding.md install table: row {line!r} needs one `dir/` as where"])
        names = [n for t in re.findall(r"`([^`]+)`", cells[0]) for n in expand_braces(t)]
        if not names:
            fail([f"docs/embedding.md install table: row {line!r} names no file"])
        conditional = "that was built" in cells[0] or "when it was built" in cells[0]
        rows.append(([os.path.join(where[0], n) for n in names], conditional))
    if not rows:
        fail([f"docs/embedding.md: no install table after '{marker}'"])
    return rows


def built(build, pattern):
    """True when the build tree has a file named like the pattern's last part (a program, the
    Python module)."""
    name = os.path.basename(pattern)
    for d, dirs, names in os.walk(build):
        dirs[:] = [x for x in dirs if x not in ("CMakeFiles", "Testing", "test-state")]
        if any(fnmatch.fnmatch(n, name) for n in names):
            return True
    return False


def check_layout(build, source, files):
    problems = []
    prefix = PREFIX.lstrip("/") + "/"
    outside = [f for f in files if not f.startswith(prefix)]
    for f in outside:
        problems.append(f"installed outside the prefix {PREFIX}: /{f}")
    inside = [f[len(prefix):] for f in files if f.startswith(prefix)]
    rows = install_table(source)
    for patterns, conditional in rows:
        for p in patterns:
            present = [f for f in inside if fnmatch.fnmatch(f, p)]
            if conditional:
                if built(build, p) and not present:
                    problems.append(f"built but not installed: {p} (docs/embedding.md)")
            elif not present:
                problems.append(f"documented but not installed: {p} (docs/embedding.md)")
    every = [p for patterns, _ in rows for p in patterns]
    for f in inside:
        if not any(fnmatch.fnmatch(f, p) for p in every):
            problems.append(f"installed but not in docs/embedding.md's install table: {f}")
    return problems, inside


def demo_targets(source):
    text = open(os.path.join(source, "scripts", "demo")).read()
    m = re.search(r"^scripts/build release --target ([^\n;&|]+)$", text, re.M)
    if not m:
        fail(["scripts/demo: no `scripts/build release --target ...` line"])
    return m.group(1).split()


def ninja(build, *args):
    r = subprocess.run(["ninja", "-C", build, *args], capture_output=True, text=True)
    if r.returncode != 0:
        fail([f"ninja {' '.join(args)} failed: {r.stderr[-2000:]}"])
    return r.stdout.splitlines()


def check_demo(build, source):
    if not os.path.exists(os.path.join(build, "build.ninja")):
        print("[install-layout] not a Ninja build: the scripts/demo check is skipped")
        return []
    problems = []
    targets = demo_targets(source)
    # What building the targets builds: the targets, their direct inputs (a phony target such as
    # tributary-sim names sim/tributary-sim; `ninja -t inputs` leaves those out) and every input
    # of those.
    direct = set(targets)
    for t in targets:
        section = None
        for line in ninja(build, "-t", "query", t):
            if line.startswith("  input:"):
                section = "in"
            elif line.startswith("  outputs:"):
                section = None
            elif section == "in" and line.startswith("    "):
                direct.add(line.strip().lstrip("|").strip())
    direct.discard("")
    closure = set(ninja(build, "-t", "inputs", *sorted(direct))) | direct
    outputs = {line.rsplit(":", 1)[0] for line in ninja(build, "-t", "targets", "all")}
    build_abs = os.path.realpath(build)
    # The files non-OPTIONAL install rules copy out of the build tree.
    rule = re.compile(r'file\(INSTALL DESTINATION "[^"]*" TYPE (\w+)( OPTIONAL)?[^)]*?FILES ([^)]*)\)')
    required = set()
    for script in glob.glob(os.path.join(build, "**", "cmake_install.cmake"), recursive=True):
        for m in rule.finditer(open(script).read()):
            if m.group(2):
                continue
            for f in re.findall(r'"([^"]+)"', m.group(3)):
                f = os.path.realpath(f)
                if f.startswith(build_abs + os.sep):
                    required.add(os.path.relpath(f, build_abs))
    for f in sorted(required):
        if f in outputs and f not in closure:
            problems.append(f"a non-OPTIONAL install rule copies {f}, which scripts/demo "
                            f"(--target {' '.join(targets)}) does not build: the install fails "
                            "after the demo")
    # The programs the docs name under build/release/.
    named = set()
    docs = [os.path.join(source, "README.md")] + glob.glob(os.path.join(source, "docs", "*.md"))
    docs += glob.glob(os.path.join(source, "examples", "**", "*.*"), recursive=True)
    for path in docs:
        try:
            text = open(path, errors="replace").read()
        except (IsADirectoryError, OSError):
            continue
        for rel in re.findall(r"build/release/([A-Za-z0-9_./-]*[A-Za-z0-9_-])", text):
            if rel.startswith("bench/") or rel == "python" or rel.startswith("python/"):
                continue
            named.add((rel, os.path.relpath(path, source)))
    for rel, where in sorted(named):
        if rel not in closure:
            problems.append(f"{where} names build/release/{rel}, which scripts/demo does not build "
                            "(or which is not a build output at that path)")
    print(f"[install-layout] scripts/demo builds {' '.join(targets)}: {len(required)} required "
          f"install files, {len(named)} documented program paths checked")
    return problems


def main():
    args = sys.argv[1:]
    keep = None
    if "--keep" in args:
        i = args.index("--keep")
        keep = args[i + 1]
        del args[i:i + 2]
    if len(args) != 2:
        print(__doc__)
        sys.exit(2)
    build, source = args
    work = keep or tempfile.mkdtemp(prefix="trib_install_layout.")
    root = os.path.join(work, "root")
    if os.path.exists(root):
        shutil.rmtree(root)
    try:
        files = install(build, root)
        problems, inside = check_layout(build, source, files)
        problems += check_demo(build, source)
        if problems:
            fail(problems)
        print(f"[install-layout] {len(inside)} files installed, all under {PREFIX}, as "
              "docs/embedding.md lists them")
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
