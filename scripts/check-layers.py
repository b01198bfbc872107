#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check-layers.py — the calls between the files of src/core keep to their layers.

The layers are the table in src/core/core.h's opening comment ("layer <name>: <files>", the files
may go on over indented lines;
lowest first). This script reads every src/core/*.c, with comments and string literals
taken out, finds the functions each file defines (an identifier followed by its
parameters and a body, at the file's top level) and the identifiers each file uses, and
so the calls (or function references, for hooks) from one file into another. It fails
when
  - a file calls a file of a higher layer,
  - files call one another around a circle (within a layer too),
  - a .c file of src/core is missing from the table.
It also reads the #include lines of everything built on the core (the primitives'
folders under src/, tools/, examples/, bench/) and fails when one of them includes a core
header other than the core's doors (DOORS below): the primitives, the tool and the examples
reach the core through those, never through core.h, a topology header (cluster.h,
sentinel.h) or the loop's.
Usage: scripts/check-layers.py [repo root]   (prints the graph; exit 1 on a violation)
"""
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
core = os.path.join(root, "src", "core")


def strip(text):
    """The C text without comments, string and character literals (same line count)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def layers_table():
    with open(os.path.join(core, "core.h")) as f:
        text = f.read()
    start = text.find("core.h —")  # the opening comment, after the license line
    head = text[start:].split("*/", 1)[0] if start >= 0 else ""
    # a layer's files may go on over lines indented under them (" *" and 10+ spaces)
    head = re.sub(r"\n \*\s{10,}(?=[\w ]+\n)", " ", head)
    order, layer_of = [], {}
    for name, files in re.findall(r"layer (\w+):\s*([\w ]+)", head):
        order.append(name)
        for stem in files.split():
            layer_of[stem] = len(order) - 1
    return order, layer_of


IDENT = re.compile(r"\b(dlock_\w+)\b")


def definitions_and_uses(code):
    """Functions defined at top level, and every dlock_* identifier used in a body."""
    defined, used = set(), set()
    depth, i, n = 0, 0, len(code)
    top = []  # top-level text since the last ';' or '}' at depth 0
    body_start = None
    while i < n:
        c = code[i]
        if c == "{":
            if depth == 0:
                head = "".join(top)
                m = re.search(r"\(?\s*(\w+)\s*\)?\s*\([^;{}]*\)\s*$", head)
                if m and not re.search(r"\b(struct|union|enum)\s*\w*\s*$", head.split("(")[0]):
                    defined.add(m.group(1))
                else:  # an initializer or a type: its references count as uses
                    used.update(IDENT.findall(head))
                top = []
                body_start = i
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                used.update(IDENT.findall(code[body_start:i]))
        elif depth == 0:
            top.append(c)
            if c == ";":
                used.update(IDENT.findall("".join(top).split("=", 1)[1]) if "=" in "".join(top) else [])
                top = []
        i += 1
    return defined, used


def find_cycle(edges):
    state, stack = {}, []

    def visit(u):
        state[u] = 1
        stack.append(u)
        for v in sorted(edges.get(u, ())):
            if state.get(v) == 1:
                return stack[stack.index(v):] + [v]
            if v not in state:
                found = visit(v)
                if found:
                    return found
        stack.pop()
        state[u] = 2
        return None

    for u in sorted(edges):
        if u not in state:
            found = visit(u)
            if found:
                return found
    return None


# The core headers code outside src/core may include, and who may include the generated
# script table (the benchmark that measures the scripts' own cost on the server).
DOORS = {"dlock_int.h", "dlock_object.h", "reply_shape.h"}
SCRIPT_TABLE_USERS = ("bench/",)
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def include_problems():
    """Files built on the core that include a core header other than its doors."""
    core_headers = {f for f in os.listdir(core) if f.endswith(".h")}
    problems = []
    tops = [os.path.join("src", d) for d in sorted(os.listdir(os.path.join(root, "src")))
            if d != "core"] + ["tools", "examples", "bench"]
    for top in tops:
        for dirpath, _, names in sorted(os.walk(os.path.join(root, top))):
            for name in sorted(names):
                if not name.endswith((".c", ".h", ".cpp", ".hpp")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                with open(path, errors="replace") as f:
                    for header in INCLUDE.findall(f.read()):
                        base = os.path.basename(header)
                        if header == "dlock_scripts.h" and rel.startswith(SCRIPT_TABLE_USERS):
                            continue
                        if (base in core_headers or base == "dlock_scripts.h") and base not in DOORS:
                            problems.append(f"{rel} includes {header}, a core-only header "
                                            f"(outside src/core only {', '.join(sorted(DOORS))})")
    return problems


def main():
    order, layer_of = layers_table()
    if not order:
        print("check-layers: no 'layer <name>: <files>' table in src/core/core.h")
        return 1
    files = sorted(f[:-2] for f in os.listdir(core) if f.endswith(".c"))
    defs, uses = {}, {}
    for stem in files:
        with open(os.path.join(core, stem + ".c")) as f:
            defs[stem], uses[stem] = definitions_and_uses(strip(f.read()))
    owner = {}
    for stem in files:
        for fn in defs[stem]:
            owner.setdefault(fn, stem)
    edges = {stem: {} for stem in files}
    for stem in files:
        for fn in sorted(uses[stem] - defs[stem]):
            callee = owner.get(fn)
            if callee and callee != stem:
                edges[stem].setdefault(callee, []).append(fn)
    problems = []
    for stem in files:
        if stem not in layer_of:
            problems.append(f"src/core/{stem}.c is in no layer of core.h's table")
    for stem in files:
        for callee, fns in sorted(edges[stem].items()):
            if stem in layer_of and callee in layer_of and layer_of[callee] > layer_of[stem]:
                problems.append(
                    f"{stem}.c ({order[layer_of[stem]]}) calls up into {callee}.c "
                    f"({order[layer_of[callee]]}): {', '.join(fns)}")
    problems += include_problems()
    cycle = find_cycle({s: set(e) for s, e in edges.items()})
    if cycle:
        problems.append("a circle of calls: " + " -> ".join(c + ".c" for c in cycle))
    for level, name in enumerate(order):
        print(f"{name}:")
        for stem in files:
            if layer_of.get(stem) == level:
                callees = sorted(edges[stem], key=lambda s: (layer_of.get(s, 99), s))
                print(f"  {stem:9} -> {' '.join(callees) if callees else '(nothing)'}")
    for p in problems:
        print("check-layers: " + p)
    if not problems:
        print(f"check-layers: ok ({len(files)} files, {sum(len(e) for e in edges.values())} "
              "file-to-file dependencies, no upward call, no circle; outside src/core only "
              "the core's doors are included)")
    return 1 if problems else 0


sys.exit(main())
