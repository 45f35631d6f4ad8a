#!/usr/bin/env python3
"""check-json-schema.py - docs/json-schema.md against the binary.

    python3 scripts/check-json-schema.py [--memplan PATH] [DOC]

Each table of DOC (default docs/json-schema.md) follows a marker

    <!-- schema: NAME
    memplan COMMAND ... --json            # exit N (default 0)
    ...
    -->

(a line "setup: COMMAND" is run first and not checked: it makes a file
the next command reads) and lists members as rows `| `path` | type | present | meaning |`. Every
command is run (as scripts/gen-samples.py runs them: in a scratch folder
that holds examples/, with `memplan` on the PATH) and must exit as said
and print one JSON object in which:

- every member whose "present" is `always` is there (when its parent
  is), and every member whose "present" is `on success` is there when the
  object has no `error`;
- every member has one of the types of its row (`integer`, `number`,
  `string`, `boolean`, `object`, `array`, `null`, joined by "or");
- every member is a row of the table: nothing undocumented.

Exit 1, naming each difference, when one is found.
"""
import argparse
import importlib.util
import json
import os
import re
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
spec = importlib.util.spec_from_file_location(
    "gen_samples", os.path.join(ROOT, "scripts", "gen-samples.py"))
gen = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen)

MARK = re.compile(r"<!-- schema: (\S+)\n(.*?)-->\n(.*?)(?=\n<!-- schema: |\n## |\Z)",
                  re.S)
ROW = re.compile(r"^\| `([^`]+)` \| ([a-z ]+) \| ([^|]+) \|", re.M)


def type_of(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def members(v, path=""):
    """(path, value) of every member, depth first; a[] for elements."""
    if isinstance(v, dict):
        for k, x in v.items():
            p = path + "." + k if path else k
            yield p, x
            yield from members(x, p)
    elif isinstance(v, list):
        for x in v:
            yield from members(x, path + "[]")


def missing(obj, parts):
    """Is the member at parts missing somewhere its parent is there?"""
    if not parts:
        return False
    part = parts[0]
    arr = part.endswith("[]")
    key = part[:-2] if arr else part
    if not isinstance(obj, dict):
        return False
    if key not in obj:
        return len(parts) == 1  # else the parent is absent: not checked
    v = obj[key]
    if arr:
        return isinstance(v, list) and any(missing(x, parts[1:]) for x in v)
    return missing(v, parts[1:])


def check(doc, memplan):
    with open(doc, encoding="utf-8") as f:
        text = f.read()
    problems = []
    sections = MARK.findall(text)
    if not sections:
        return ["%s: no <!-- schema: ... --> table" % doc]
    for name, cmds, table in sections:
        rows = {p: (set(t.split(" or ")), w.strip())
                for p, t, w in ROW.findall(table)}
        if not rows:
            problems.append("%s: section %s has no rows" % (doc, name))
            continue
        for p, (types, _) in rows.items():
            bad = types - {"integer", "number", "string", "boolean",
                           "object", "array", "null"}
            if bad:
                problems.append("%s: %s: %s: unknown type %s" %
                                (doc, name, p, ", ".join(sorted(bad))))
        cwd = gen.scratch(memplan)
        try:
            for line in cmds.strip().splitlines():
                if line.startswith("setup: "):  # run, not checked
                    gen.run(line[len("setup: "):], cwd)
                    continue
                want = 0
                m = re.search(r"#\s*exit (\d+)", line)
                if m:
                    want = int(m.group(1))
                cmd = line.split("#")[0].strip()
                problems += check_one(name, cmd, want, rows, cwd)
        finally:
            shutil.rmtree(cwd, ignore_errors=True)
    return problems


def missing_parent_ok(obj, path):
    """The member at path is missing where its parent object is there
    (a row's parent that is absent is not checked)."""
    parts = path.split(".")
    # walk down to the parent; absent parent: nothing to say
    return missing(obj, parts)


def check_one(name, cmd, want, rows, cwd):
    where = "%s: `%s`" % (name, cmd)
    out, rc = gen.run(cmd, cwd, stderr=False)
    if rc != want:
        return ["%s exits %d, not %d" % (where, rc, want)]
    try:
        obj = json.loads(out)
    except ValueError as e:
        return ["%s: not one JSON object (%s): %s" % (where, e, out[:300])]
    if not isinstance(obj, dict):
        return ["%s: not a JSON object" % where]
    problems = []
    for p, v in members(obj):
        if p not in rows:
            problems.append("%s: member %s (%s) is not in the table" %
                            (where, p, type_of(v)))
        elif type_of(v) not in rows[p][0] and not (
                type_of(v) == "integer" and "number" in rows[p][0]):
            problems.append("%s: member %s is %s, the table says %s" %
                            (where, p, type_of(v),
                             " or ".join(sorted(rows[p][0]))))
    failed = "error" in obj
    for p, (_, when) in rows.items():
        need = when == "always" or (when == "on success" and not failed)
        if not need:
            continue
        if missing_parent_ok(obj, p):
            problems.append("%s: member %s (present: %s) is missing" %
                            (where, p, when))
    if rc != 0 and not failed:
        problems.append("%s: exits %d without an \"error\" member" %
                        (where, rc))
    if failed and obj["error"].get("exit_code") != rc:
        problems.append("%s: error.exit_code %r, but the exit code is %d" %
                        (where, obj["error"].get("exit_code"), rc))
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--memplan", default=os.path.join(ROOT, "build",
                                                      "memplan"))
    ap.add_argument("doc", nargs="?",
                    default=os.path.join(ROOT, "docs", "json-schema.md"))
    a = ap.parse_args()
    memplan = os.path.abspath(a.memplan)
    if not os.access(memplan, os.X_OK):
        sys.exit("check-json-schema: %s is not an executable" % memplan)
    problems = check(a.doc, memplan)
    for p in problems:
        sys.stderr.write("check-json-schema: %s\n" % p)
    if problems:
        sys.stderr.write("check-json-schema: %s does not match what %s "
                         "prints: fix the table or the output\n" %
                         (a.doc, memplan))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
