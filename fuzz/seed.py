#!/usr/bin/env python3
"""Builds the fuzz targets' seed corpora from ../shared/corpus (other projects' files: read at run
time, never committed; fuzz/corpus/ is git-ignored):

- fuzz/corpus/crd_document/: the corpus's CRD files of at most 64 KiB;
- fuzz/corpus/policy_document/: its ValidatingAdmissionPolicy and MutatingAdmissionPolicy files;
- fuzz/corpus/cel_expression/: every CEL expression in them (`rule`, `messageExpression`,
  `expression`, `valueExpression`), one a file;
- fuzz/corpus/yaml_bound_edit/: each CRD file of at most 64 KiB behind a prefix whose first two
  bytes choose the keyword and the value and that YAML reads as nothing (`---` and a line break,
  two line breaks, a comment line): one seed per keyword;
- fuzz/corpus/unified_diff/: pairs of CRD files of at most 16 KiB, NUL between them, and each
  such file against itself with one line dropped;
- fuzz/corpus/go_declarations/: this repository's Go test files (tests/data/**/*.go).

Usage: fuzz/seed.py [CORPUS_DIR] (default ../shared/corpus, or $CELCOST_CORPUS). Stdlib only: the
expressions are read from the YAML with a scanner of the scalar styles the corpus uses (plain,
quoted, block), not a YAML parser; a seed need not be exact, the fuzzer mutates it anyway.
"""

import hashlib
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MAX_DOCUMENT = 64 << 10
MAX_EXPRESSION = 4 << 10
MAX_DIFF_SIDE = 16 << 10
# Prefixes that YAML reads as nothing, whose first byte modulo 3 picks maxLength, maxItems and
# maxProperties (fuzzing.rs: yaml_bound_edit) and whose second byte is the value.
BOUND_PREFIXES = (b"---\n", b"\n\n", b"# x\n")
KEY = re.compile(
    r"^(\s*)(?:-\s+)?(rule|messageExpression|expression|valueExpression)\s*:\s?(.*)$"
)


def block(lines, i, indent, folded):
    """The block scalar after line i (more indented than `indent`)."""
    body = []
    j = i + 1
    while j < len(lines):
        line = lines[j]
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        body.append(line)
        j += 1
    while body and not body[-1].strip():
        body.pop()
    cut = min((len(x) - len(x.lstrip()) for x in body if x.strip()), default=0)
    body = [x[cut:] for x in body]
    return (" " if folded else "\n").join(body)


def quoted(lines, i, rest, quote):
    """A quoted scalar starting at `rest` on line i, possibly over several lines."""
    text = rest
    j = i
    while True:
        if quote == '"':
            m = re.match(r'"((?:[^"\\]|\\.)*)"', text, re.S)
        else:
            m = re.match(r"'((?:[^']|'')*)'", text, re.S)
        if m:
            break
        j += 1
        if j >= len(lines) or j > i + 200:
            return None
        text += " " + lines[j].strip()
    body = m.group(1)
    if quote == "'":
        return body.replace("''", "'")
    try:
        return json.loads('"' + body.replace("\t", "\\t") + '"')
    except ValueError:
        return body


def expressions(text):
    lines = text.split("\n")
    for i, line in enumerate(lines):
        m = KEY.match(line)
        if not m:
            continue
        indent, rest = len(m.group(1)), m.group(3).strip()
        if rest.startswith(("|", ">")):
            yield block(lines, i, indent, rest.startswith(">"))
        elif rest.startswith(('"', "'")):
            e = quoted(lines, i, rest, rest[0])
            if e is not None:
                yield e
        elif rest:
            yield re.sub(r"\s+#.*$", "", rest)


def files(root, sub):
    for d, _, names in os.walk(os.path.join(root, sub)):
        for n in sorted(names):
            if n.endswith((".yaml", ".yml", ".json")):
                yield os.path.join(d, n)


def write(target, data):
    out = os.path.join(HERE, "corpus", target)
    os.makedirs(out, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)


def main():
    root = (
        sys.argv[1]
        if len(sys.argv) > 1
        else os.environ.get("CELCOST_CORPUS", os.path.join(HERE, "..", "..", "shared", "corpus"))
    )
    if not os.path.isdir(os.path.join(root, "crds")):
        sys.exit(f"seed.py: no corpus at {root} (give its path)")
    counts = {
        "crd_document": 0,
        "policy_document": 0,
        "cel_expression": 0,
        "yaml_bound_edit": 0,
        "unified_diff": 0,
        "go_declarations": 0,
    }
    seen = set()
    small = []
    for target, subs in (("crd_document", ["crds"]), ("policy_document", ["vaps", "maps"])):
        for sub in subs:
            for path in files(root, sub):
                with open(path, "rb") as f:
                    data = f.read()
                if len(data) <= MAX_DOCUMENT:
                    write(target, data)
                    counts[target] += 1
                    if target == "crd_document":
                        for prefix in BOUND_PREFIXES:
                            write("yaml_bound_edit", prefix + data)
                            counts["yaml_bound_edit"] += 1
                if target == "crd_document" and len(data) <= MAX_DIFF_SIDE:
                    small.append(data)
                for e in expressions(data.decode("utf-8", "replace")):
                    b = e.encode()
                    if 0 < len(b) <= MAX_EXPRESSION and b not in seen:
                        seen.add(b)
                        write("cel_expression", b)
                        counts["cel_expression"] += 1
    for a, b in zip(small, small[1:]):
        lines = a.split(b"\n")
        dropped = b"\n".join(lines[: len(lines) // 2] + lines[len(lines) // 2 + 1 :])
        for pair in (a + b"\0" + b, a + b"\0" + dropped):
            write("unified_diff", pair)
            counts["unified_diff"] += 1
    for d, _, names in os.walk(os.path.join(HERE, "..", "tests", "data")):
        for n in sorted(names):
            if n.endswith(".go"):
                with open(os.path.join(d, n), "rb") as f:
                    write("go_declarations", f.read())
                counts["go_declarations"] += 1
    print(" ".join(f"{t}: {n} seeds" for t, n in counts.items()))


if __name__ == "__main__":
    main()
