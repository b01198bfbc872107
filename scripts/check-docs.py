#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""scripts/check-docs.py — the user docs stand alone and their links resolve.

Checks README.md and docs/*.md: every relative link (and its #anchor) points at a file and
heading that exist, and nothing points at the design notes, which are not part of the
repository. Exit 1 with one line per problem. Run by scripts/test.sh."""
import glob
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"```.*?```", re.S)
DESIGN_NOTES = re.compile(r"REDIS_LAYOUT\.md|ARCHITECTURE\.md|BENCHMARKS\.md|\.\./shared")


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path):
    text = FENCE.sub("", open(path, encoding="utf-8").read())
    return {slug(m.group(1)) for m in re.finditer(r"^#+\s+(.*)$", text, re.M)}


def problems(path):
    text = FENCE.sub("", open(path, encoding="utf-8").read())
    rel = os.path.relpath(path, ROOT)
    if DESIGN_NOTES.search(text):
        yield f"{rel}: points at a design note outside the repository"
    for m in LINK.finditer(text):
        target = m.group(1)
        if re.match(r"^[a-z]+:", target):
            continue  # an absolute URL
        file_part, _, fragment = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
        if not os.path.exists(dest):
            yield f"{rel}: link to missing {target}"
        elif fragment and dest.endswith(".md") and fragment not in anchors(dest):
            yield f"{rel}: link to missing anchor {target}"


def main():
    files = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    found = [p for f in files for p in problems(f)]
    for p in found:
        print(p)
    print(f"check-docs: {len(found)} problem(s) in {len(files)} files")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
