#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/package/cli_docs_agree.py DLOCK SOURCE_DIR — dlock's three references agree (ctest
`cli_docs_agree`, label `docs`).

`dlock --help` (with each `dlock COMMAND --help`), docs/cli.md and the manual page
docs/dlock.1 are written by hand, side by side; this checks that they say the same:

  - every command of `dlock --help` has its line in the man page's SYNOPSIS, its section
    there (.SS "dlock CMD ...") and in docs/cli.md (## `dlock CMD ...`), and the man page has no command the tool lacks;
  - every option a `--help` defines is in the man page's section of that command (global
    options: GLOBAL OPTIONS) and in docs/cli.md's (global options: Connecting);
  - every option the man page defines is accepted by the tool (`dlock [CMD] OPT [ARG]
    --help` exits 0: options are parsed left to right, an unknown one is exit 64), and every
    action word it lists under a command (set, add, await...) is in that command's --help;
  - the exit statuses of `dlock --help`, the man page's EXIT STATUS and docs/cli.md's
    Exit codes table are the same set; every URL scheme --help names is in both;
  - the man page's version (.TH) is `dlock --version`'s, and the page formats without a
    warning (groff -man -ww -z, and man --warnings when man is installed).

Exit 1 with one line per disagreement."""
import os
import re
import shutil
import subprocess
import sys

DLOCK = sys.argv[1]
ROOT = sys.argv[2]
MAN = os.path.join(ROOT, "docs", "dlock.1")
CLI_MD = os.path.join(ROOT, "docs", "cli.md")
# a value the tool accepts for each metavar the man page gives an option
SAMPLE_ARG = {"ms": "5", "n": "1", "url": "redis://127.0.0.1:1", "kind": "latch", "name": "x"}

problems = []


def tool(*args):
    r = subprocess.run([DLOCK, *args], capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout, r.stderr


def help_text(*command):
    code, out, err = tool(*command, "--help")
    if code != 0:
        sys.exit(f"dlock {' '.join(command)} --help exited {code}: {err}")
    return out


def help_options(text):
    """(command options, global options) a --help text defines: lines that start with
    an option, split at its 'Global options' heading."""
    own, _, glob = text.partition("\nGlobal options")
    pick = lambda part: set(re.findall(r"^ {2,}((?:-[a-z], )?--?[a-z][a-z-]*)", part, re.M))
    flat = lambda found: {o for item in found for o in item.split(", ")}
    return flat(pick(own)), flat(pick(glob))


def unroff(s):
    return s.replace("\\-", "-").replace("\\%", "").replace("\\fB", "").replace(
        "\\fI", "").replace("\\fR", "").replace("\\fP", "").replace('"', "")


def man_sections(page):
    """{section title: [lines]} for each .SH and .SS of the page (titles unroffed)."""
    sections, title = {}, ""
    for line in page.splitlines():
        m = re.match(r"^\.(SH|SS) (.*)$", line)
        if m:
            title = unroff(m.group(2)).strip()
            sections[title] = []
        elif title:
            sections[title].append(line)
    return sections


def man_items(lines):
    """[(words, metavar or None)] of each .TP item of a section: '.BI \\-\\-wait " ms"' gives
    (['--wait'], 'ms'); '.BR \\-v ", " \\-\\-verbose' gives (['-v', '--verbose'], None)."""
    items = []
    for i, line in enumerate(lines[:-1]):
        if line.strip() != ".TP":
            continue
        tag = lines[i + 1]
        m = re.match(r'^\.(B|BI|BR)\s+(.*)$', tag)
        if not m:
            continue
        macro, rest = m.group(1), m.group(2)
        parts = re.findall(r'"[^"]*"|\S+', rest)
        if macro == "BI":
            items.append(([unroff(parts[0])], unroff(parts[1]).strip() if len(parts) > 1 else None))
        elif macro == "BR":
            items.append(([unroff(p) for p in parts if unroff(p).strip(", ")], None))
        else:
            items.append(([unroff(rest).strip()], None))
    return items


def md_sections(text):
    sections, title = {}, ""
    for line in text.splitlines():
        m = re.match(r"^## (.*)$", line)
        if m:
            title = m.group(1).strip()
            sections[title] = []
        elif title:
            sections[title].append(line)
    return {t: "\n".join(lines) for t, lines in sections.items()}


def in_md(option, section_text):
    """the option as a word of the section: in its tables, prose or usage lines"""
    return re.search(r"(?<![\w-])" + re.escape(option) + r"(?![\w-])", section_text) is not None


page = open(MAN, encoding="utf-8").read()
cli_md = open(CLI_MD, encoding="utf-8").read()
man = man_sections(page)
md = md_sections(cli_md)
top = help_text()

# ---- commands -------------------------------------------------------------------------------
commands_block = re.search(r"^Commands:\n(.*?)\n\n", top, re.M | re.S)
if not commands_block:
    sys.exit("dlock --help has no 'Commands:' list")
commands = re.findall(r"^ {2}([a-z][a-z-]*)\s", commands_block.group(1), re.M)
man_commands = {t.split()[1]: t for t in man if t.startswith("dlock ")}
md_commands = {t.strip("`").split()[1]: t for t in md if t.startswith("`dlock ")}
for c in commands:
    if c not in man_commands:
        problems.append(f"docs/dlock.1: no section .SS \"dlock {c} ...\" (dlock --help lists {c})")
    if c not in md_commands:
        problems.append(f"docs/cli.md: no section ## `dlock {c} ...` (dlock --help lists {c})")
synopsis = [unroff(line) for line in man.get("SYNOPSIS", [])]
for c in commands:
    if not any(re.match(r"^\.B " + re.escape(c) + r"( |$)", line) for line in synopsis):
        problems.append(f"docs/dlock.1: SYNOPSIS has no 'dlock ... {c}' line (dlock --help lists {c})")
for c in man_commands:
    if c not in commands:
        problems.append(f"docs/dlock.1: section for '{c}', which dlock --help does not list")

# ---- options --------------------------------------------------------------------------------
_, global_options = help_options(top)
man_global = {w for words, _ in man_items(man.get("GLOBAL OPTIONS", [])) for w in words}
for o in sorted(global_options):
    if o not in man_global:
        problems.append(f"docs/dlock.1: GLOBAL OPTIONS lacks {o} (in dlock --help)")
    if not in_md(o, md.get("Connecting", "")):
        problems.append(f"docs/cli.md: Connecting lacks {o} (in dlock --help)")

for c in commands:
    text = help_text(c)
    own, glob = help_options(text)
    if glob != global_options - {"--version"}:  # --version comes before a command only
        problems.append(f"dlock {c} --help: global options {sorted(glob)} differ from dlock --help's")
    section = man.get(man_commands.get(c, ""), [])
    items = man_items(section)
    man_own = {w for words, _ in items for w in words}
    for o in sorted(own):
        if o not in man_own:
            problems.append(f"docs/dlock.1: dlock {c} lacks {o} (in dlock {c} --help)")
        if not in_md(o, md.get(md_commands.get(c, ""), "")):
            problems.append(f"docs/cli.md: `dlock {c}` lacks {o} (in dlock {c} --help)")
    for words, metavar in items:
        for w in words:
            if w.startswith("-"):
                args = [c, w] + ([SAMPLE_ARG.get(metavar.lower(), "1")] if metavar else [])
                code, _, err = tool(*args, "--help")
                if code != 0:
                    problems.append(
                        f"docs/dlock.1: dlock {c} {w}: the tool refuses it (exit {code}: {err.strip()})")
            elif not re.search(r"(^|\s)" + re.escape(w) + r"(\s|$)", text):
                problems.append(f"docs/dlock.1: dlock {c}: '{w}' is not in dlock {c} --help")

for words, metavar in man_items(man.get("GLOBAL OPTIONS", [])):
    for w in words:
        args = [w] + ([SAMPLE_ARG.get(metavar.lower(), "1")] if metavar else [])
        code, _, err = tool(*args, "--help")
        if code != 0:
            problems.append(f"docs/dlock.1: dlock {w}: the tool refuses it (exit {code}: {err.strip()})")

# ---- exit statuses, URL schemes --------------------------------------------------------------
exit_block = re.search(r"^Exit codes:\n(.*?)(\n\n|\Z)", top, re.M | re.S)
help_codes = set()
for first in re.findall(r"^ {2}(\S+)", exit_block.group(1) if exit_block else "", re.M):
    help_codes.update(first.split("/"))
man_codes = {"".join(words).replace(" ", "") + (metavar.upper() if metavar else "")
             for words, metavar in man_items(man.get("EXIT STATUS", []))}
md_codes = set(re.findall(r"^\| (\d+(?:\+N)?) \|", md.get("Exit codes", ""), re.M))
if not help_codes:
    problems.append("dlock --help: no 'Exit codes:' list")
if man_codes != help_codes:
    problems.append(f"docs/dlock.1: EXIT STATUS {sorted(man_codes)} != dlock --help {sorted(help_codes)}")
if md_codes != help_codes:
    problems.append(f"docs/cli.md: Exit codes {sorted(md_codes)} != dlock --help {sorted(help_codes)}")

plain_page = unroff(page)
for scheme in sorted(set(re.findall(r"\b([a-z][a-z-]*://)", top))):
    if scheme not in plain_page:
        problems.append(f"docs/dlock.1: no {scheme} (dlock --help names it)")
    if scheme not in cli_md:
        problems.append(f"docs/cli.md: no {scheme} (dlock --help names it)")

# ---- version, formatting ---------------------------------------------------------------------
_, version_line, _ = tool("--version")
th = re.search(r'^\.TH \S+ 1 "[^"]*" "([^"]*)"', page, re.M)
if not th or th.group(1) != version_line.strip():
    problems.append(f"docs/dlock.1: .TH says {th.group(1) if th else None!r}, "
                    f"dlock --version {version_line.strip()!r}")

groff = subprocess.run(["groff", "-man", "-ww", "-z", MAN], capture_output=True, text=True)
if groff.returncode != 0 or groff.stderr.strip():
    problems.append(f"docs/dlock.1: groff -man -ww -z: {groff.stderr.strip()}")
if shutil.which("man"):
    env = dict(os.environ, LC_ALL="C.UTF-8", MANWIDTH="80")
    out = subprocess.run(["man", "--warnings", "-l", MAN], capture_output=True, text=True, env=env)
    if out.returncode != 0 or out.stderr.strip():
        problems.append(f"docs/dlock.1: man --warnings: {out.stderr.strip()}")

for p in problems:
    print(p)
if problems:
    sys.exit(1)
print(f"cli_docs_agree: {len(commands)} commands, {len(global_options)} global options, "
      f"{len(help_codes)} exit statuses: dlock --help, docs/dlock.1 and docs/cli.md agree")
