#!/usr/bin/env python3
"""gen-samples.py - the sample outputs of README.md and docs/*.md, written
by the built memplan binary, and their examples run.

    python3 scripts/gen-samples.py [--check] [--memplan PATH] [FILE.md...]

Without FILE, every Markdown file with a marked block: README.md and
docs/*.md. PATH defaults to build/memplan.

A sample is a block between a marker and "<!-- end sample -->":

    <!-- sample: memplan plan examples/tiny.json -->
    ```
    (what the command prints, stdout and stderr)
    ```
    <!-- end sample -->

or, for a shell session (each command shown after "$ ", then its output;
`echo $?` shows an exit code):

    <!-- sample:
    $ memplan offsets examples/trace.csv -o placed.csv > /dev/null
    $ memplan verify placed.csv --capacity 512KiB
    $ echo $?
    -->
    ```
    ...
    ```
    <!-- end sample -->

An example block is a ```sh block right after "<!-- examples: run -->":
with --check every command in it is run (a line ending in a backslash
goes on), and must exit 0, or N when the line says "# exit N". In
README.md every ```sh block that runs memplan is one, or follows
"<!-- examples: not run: WHY -->".

Commands run with /bin/sh in a scratch folder per document that holds the
repository's examples/ (a link) and build/memplan (a link to PATH), with
`memplan` on the PATH: what a clone has, nothing more. Files a command
writes there (-o plan.json) are there for the next command of the same
document.

Without --check the blocks are rewritten in place. With --check nothing is
written: exit 1 naming each block that differs from what the binary
prints now (times, which change from run to run, are not compared), or an
example that fails, with the command that fixes the file.
"""
import argparse
import difflib
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
END = "<!-- end sample -->"
RUN = "<!-- examples: run -->"
STALE = "\0stale\0"  # marks a problem that regenerating fixes
# what changes from run to run: solver times
MASKS = [
    (re.compile(r"^(seconds\s+)[0-9.]+$", re.M), r"\1*"),
    (re.compile(r'^(\s*"[a-z_]*seconds": )[0-9.eE+-]+(,?)$', re.M), r"\1*\2"),
]


def mask(text):
    for rx, rep in MASKS:
        text = rx.sub(rep, text)
    return text


def scratch(memplan):
    d = tempfile.mkdtemp(prefix="memplan-samples-")
    os.symlink(os.path.join(ROOT, "examples"), os.path.join(d, "examples"))
    os.mkdir(os.path.join(d, "build"))
    os.mkdir(os.path.join(d, ".bin"))
    for link in (os.path.join(d, "build", "memplan"),
                 os.path.join(d, ".bin", "memplan")):
        os.symlink(memplan, link)
    return d


def run(cmd, cwd, stderr=True):
    """The command's output (with its standard error unless stderr is
    False) and exit code."""
    env = dict(os.environ)
    env["PATH"] = os.path.join(cwd, ".bin") + os.pathsep + env["PATH"]
    env["LC_ALL"] = "C"
    # a newline ends a trailing "# comment" before the redirection
    p = subprocess.run(["/bin/sh", "-c",
                        "{ " + cmd + "\n} " +
                        ("2>&1" if stderr else "2>/dev/null")],
                       cwd=cwd, env=env,
                       stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                       timeout=300)
    return p.stdout.decode("utf-8", "replace"), p.returncode


def render(spec, cwd):
    """The fenced block a marker's commands print."""
    spec = spec.strip()
    if not spec.startswith("$ "):
        out, _ = run(spec, cwd)
        body = out
    else:
        body = ""
        last = 0
        for line in spec.splitlines():
            cmd = line[2:].strip()
            body += "$ " + cmd + "\n"
            if cmd == "echo $?":
                body += "%d\n" % last
                continue
            out, last = run(cmd, cwd)
            body += out
    if body and not body.endswith("\n"):
        body += "\n"
    return "```\n" + body + "```\n"


MARK = re.compile(r"<!-- sample:(.*?)-->\n", re.S)


def process(path, memplan, check):
    """The file's new text and the problems found (with --check)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if "<!-- sample:" not in text and RUN not in text:
        return None, []
    cwd = scratch(memplan)
    problems = []
    out = []
    pos = 0
    try:
        for m in MARK.finditer(text):
            if m.start() < pos:
                continue
            end = text.find(END, m.end())
            if end < 0:
                problems.append("%s: a sample without %s" % (path, END))
                break
            old = text[m.end():end]
            new = render(m.group(1), cwd)
            if mask(old) == mask(new):
                new = old  # only times differ: the file stays as it is
            elif check:
                line = text.count("\n", 0, m.start()) + 1
                diff = "".join(difflib.unified_diff(
                    old.splitlines(True), new.splitlines(True),
                    "%s:%d (in the file)" % (path, line),
                    "what memplan prints now"))
                problems.append(STALE + diff)
            out.append(text[pos:m.end()])
            out.append(new)
            pos = end
        out.append(text[pos:])
        if check:
            problems += run_examples(path, text, cwd)
    finally:
        shutil.rmtree(cwd, ignore_errors=True)
    return "".join(out), problems


NOT_RUN = "<!-- examples: not run: "


def unmarked(path, text):
    """README's ```sh blocks that run memplan but are not marked: each
    must run (RUN) or say why not (NOT_RUN ... -->)."""
    if os.path.basename(path) != "README.md":
        return []
    problems = []
    for m in re.finditer(r"([^\n]*)\n```sh\n(.*?)```", text, re.S):
        if "memplan " not in m.group(2):
            continue
        if m.group(1) == RUN or m.group(1).startswith(NOT_RUN):
            continue
        line = text.count("\n", 0, m.start()) + 2
        problems.append("%s:%d: a ```sh block that runs memplan without %s "
                        "before it (or %s<why> -->)" %
                        (path, line, RUN, NOT_RUN))
    return problems


def run_examples(path, text, cwd):
    problems = unmarked(path, text)
    for m in re.finditer(re.escape(RUN) + r"\n```sh\n(.*?)```", text, re.S):
        block = m.group(1).replace("\\\n", " ")
        for cmd in block.splitlines():
            cmd = cmd.strip()
            if not cmd or cmd.startswith("#"):
                continue
            want = 0
            e = re.search(r"#\s*exit (\d+)", cmd)
            if e:
                want = int(e.group(1))
            out, rc = run(cmd, cwd)
            if rc != want:
                problems.append("%s: example `%s` exits %d, not %d:\n%s" %
                                (path, cmd, rc, want, out[-2000:]))
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--memplan", default=os.path.join(ROOT, "build",
                                                      "memplan"))
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    memplan = os.path.abspath(a.memplan)
    if not os.access(memplan, os.X_OK):
        sys.exit("gen-samples: %s is not an executable (build memplan "
                 "first, or give --memplan PATH)" % memplan)
    files = a.files or ([os.path.join(ROOT, "README.md")] +
                        sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))))
    failed = []
    for path in files:
        new, problems = process(path, memplan, a.check)
        if new is None:
            continue
        if a.check:
            failed += problems
        else:
            with open(path, encoding="utf-8") as f:
                old = f.read()
            if new != old:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(new)
                print("gen-samples: %s updated" % os.path.relpath(path, ROOT))
            failed += problems
    if failed:
        for p in failed:
            sys.stderr.write(p.replace(STALE, "").rstrip("\n") + "\n")
        if any(p.startswith(STALE) for p in failed):
            sys.stderr.write(
                "gen-samples: the samples above are out of date with %s; "
                "run: python3 scripts/gen-samples.py --memplan %s\n" %
                (memplan, memplan))
        if any(not p.startswith(STALE) for p in failed):
            sys.stderr.write(
                "gen-samples: the examples above do not run as their docs "
                "say: fix the example or memplan\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
