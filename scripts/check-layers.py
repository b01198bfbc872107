#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check-layers.py — src/core stands in floors, and each floor leans only on the ones below.

The floors are the folders of src/core, lowest first (FLOORS below: the order is the one
thing this script is told; which file is on which floor it reads from the tree):

  base      memory, errors, the log, owners and names, URLs, counters: no loop, no server
  loop      the one libev adapter and the client's timers on it
  net       one Redis: bytes, TLS, replies, a connection, the command and subscriber
            connections, scripts, replica acknowledgement
  topology  which Redis: Sentinel, Cluster, and the router that picks a connection
  engine    what a primitive's call runs on: ops, handles, waiting, the watchdog
  client    the client assembled from the floors' parts; the public faces

and src/core/include/ holds the core's doors: the only core headers a primitive, the tool,
an example or a benchmark may include. Every core file may include them (they declare; the
calls below are what is checked). This script reads every .c and .h of src/core, with
comments and string literals taken out, finds the functions each .c defines and the
identifiers each uses, and so the calls (or function references, for hooks) between
files. It fails when
  - a .c file of src/core is not in a floor's folder (none at the top, no unknown folder),
  - a file calls a file of a higher floor,
  - files call one another around a circle (within a floor too),
  - a core file includes a header of a higher floor, or a door includes a floor's header
    (the doors would hand the floors to everyone),
  - code built on the core (the primitives' folders under src/, tools/, examples/,
    bench/) includes a core header other than a door, or declares a core function
    (dlock__*) itself instead of including the door that declares it.
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


FLOORS = ["base", "loop", "net", "topology", "engine", "client"]
DOORS_DIR = "include"


def floor_files():
    """{floor: [file names]} of src/core's floor folders, and the problems of the tree's
    shape (a .c at the top, a folder that is no floor)."""
    files, problems = {}, []
    for entry in sorted(os.listdir(core)):
        path = os.path.join(core, entry)
        if os.path.isfile(path) and entry.endswith((".c", ".h")):
            problems.append(f"src/core/{entry} is on no floor (move it into one of "
                            f"{', '.join(FLOORS)} or, a door, into include/)")
        elif os.path.isdir(path) and entry not in FLOORS + [DOORS_DIR, "lua"]:
            problems.append(f"src/core/{entry}/ is no floor (the floors: {', '.join(FLOORS)})")
    for floor in FLOORS:
        d = os.path.join(core, floor)
        files[floor] = sorted(f for f in os.listdir(d) if f.endswith((".c", ".h"))) \
            if os.path.isdir(d) else []
        if not files[floor]:
            problems.append(f"src/core/{floor}/ is missing or empty")
    return files, problems


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


# Who may include the generated script table besides the core (the benchmark that measures
# the scripts' own cost on the server).
SCRIPT_TABLE_USERS = ("bench/",)
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# A prototype of a core function at a file's top level (a line that starts with its type).
REDECLARED = re.compile(r"^[A-Za-z_][\w \t*]*?\b(dlock__\w+)\s*\([^;{}]*\)\s*;", re.M)


def core_include_problems(files):
    """Core files that include a header of a floor above their own, and doors that include
    a floor's header."""
    floor_of_header = {f"{floor}/{name}": level for level, floor in enumerate(FLOORS)
                       for name in files[floor] if name.endswith(".h")}
    problems = []
    places = [(level, floor) for level, floor in enumerate(FLOORS)] + [(None, DOORS_DIR)]
    for level, floor in places:
        d = os.path.join(core, floor)
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            if not name.endswith((".c", ".h")):
                continue
            with open(os.path.join(d, name), errors="replace") as f:
                for header in INCLUDE.findall(f.read()):
                    target = floor_of_header.get(header)
                    if target is None:
                        if header.split("/")[0] in FLOORS:
                            problems.append(f"src/core/{floor}/{name} includes {header}, "
                                            "which is no header of that floor")
                        continue
                    if level is None:
                        problems.append(f"src/core/include/{name} (a door) includes {header}: "
                                        "a door may include only doors and public headers")
                    elif target > level:
                        problems.append(f"src/core/{floor}/{name} ({floor}) includes {header} "
                                        f"({FLOORS[target]}), a floor above it")
    return problems


def include_problems(core_functions):
    """Files built on the core that include a core header other than its doors."""
    doors = set(os.listdir(os.path.join(core, DOORS_DIR)))
    floor_headers = {f"{floor}/{name}" for floor in FLOORS
                     if os.path.isdir(os.path.join(core, floor))
                     for name in os.listdir(os.path.join(core, floor)) if name.endswith(".h")}
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
                    text = f.read()
                    for name in REDECLARED.findall(strip(text)):
                        if name not in core_functions:
                            continue  # a primitive's own dlock__ function
                        problems.append(f"{rel} declares the core's {name} itself: a core "
                                        "function is reached through a door's declaration")
                    for header in INCLUDE.findall(text):
                        if header == "dlock_scripts.h" and rel.startswith(SCRIPT_TABLE_USERS):
                            continue
                        core_only = (header in floor_headers or header == "dlock_scripts.h"
                                     or "src/core" in header)
                        if core_only and header not in doors:
                            problems.append(f"{rel} includes {header}, a core-only header "
                                            f"(outside src/core only the doors of "
                                            f"src/core/include/: {', '.join(sorted(doors))})")
    return problems


def main():
    files, problems = floor_files()
    level_of, path_of = {}, {}
    for level, floor in enumerate(FLOORS):
        for name in files[floor]:
            if name.endswith(".c"):
                level_of[name[:-2]] = level
                path_of[name[:-2]] = os.path.join(core, floor, name)
    stems = sorted(level_of, key=lambda s: (level_of[s], s))
    defs, uses = {}, {}
    for stem in stems:
        with open(path_of[stem]) as f:
            defs[stem], uses[stem] = definitions_and_uses(strip(f.read()))
    owner = {}
    for stem in stems:
        for fn in defs[stem]:
            owner.setdefault(fn, stem)
    edges = {stem: {} for stem in stems}
    for stem in stems:
        for fn in sorted(uses[stem] - defs[stem]):
            callee = owner.get(fn)
            if callee and callee != stem:
                edges[stem].setdefault(callee, []).append(fn)
    for stem in stems:
        for callee, fns in sorted(edges[stem].items()):
            if level_of[callee] > level_of[stem]:
                problems.append(
                    f"{FLOORS[level_of[stem]]}/{stem}.c calls up into "
                    f"{FLOORS[level_of[callee]]}/{callee}.c: {', '.join(fns)}")
    problems += core_include_problems(files)
    problems += include_problems(set(owner))
    cycle = find_cycle({s: set(e) for s, e in edges.items()})
    if cycle:
        problems.append("a circle of calls: " + " -> ".join(c + ".c" for c in cycle))
    for level, name in enumerate(FLOORS):
        print(f"{name}/:")
        for stem in stems:
            if level_of[stem] == level:
                callees = sorted(edges[stem], key=lambda s: (level_of[s], s))
                print(f"  {stem:9} -> {' '.join(callees) if callees else '(nothing)'}")
    for p in problems:
        print("check-layers: " + p)
    if not problems:
        print(f"check-layers: ok ({len(stems)} files on {len(FLOORS)} floors, "
              f"{sum(len(e) for e in edges.values())} file-to-file dependencies, no upward call "
              "or include, no circle; outside src/core only the doors of src/core/include/)")
    return 1 if problems else 0


sys.exit(main())
