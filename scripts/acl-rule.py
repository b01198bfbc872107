#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""scripts/acl-rule.py — the ACL rule a dlock user needs, read off the sources.

A rule written by hand went stale as the scripts grew (a fair lock's SADD, a waiter's turn
channel). This one is computed from what dlock sends:

- every command the Lua scripts call (src/*/*.lua and the preludes each uses from
  src/core/lua/: redis.call / redis.pcall, and the local helpers that pass their arguments
  on to them), read with the rules cmake/embed_lua.cmake applies to build the same list
  into the library; a call whose command is not written out as a string, or is no command
  of cmake/redis_script_commands.txt, fails the run;
- every command the C code sends (src/**/*.c, tools/*.c): each upper-case string literal
  there is looked up in C_WORDS below, and a literal the table does not know fails the run,
  so a new command cannot slip past the rule;
- the keys and channels: every prefix the C code names objects with
  (dlock__name_prefixed("P", ...), {DLOCK__KEY_PREFIXED|BRACED, "P"}); a name set on a
  line that speaks of a channel is a channel (granted with & and, as the scripts receive it
  as a key, with ~), the others are keys.

Usage:
  acl-rule.py                      print the rules as docs/operations.md shows them
  acl-rule.py --check FILE.md      exit 1 unless FILE.md shows exactly those rules
  acl-rule.py --words single|cluster [--prefix P --user U --password PW]
                                   the words of ACL SETUSER, one a line, for a test to
                                   apply (cluster: the words added to the single rule)
  acl-rule.py --script-commands    each script and the commands it calls, a line each
                                   ("lock/acquire del exists ..."): what the build embeds
                                   as dlock__scripts[id].commands (unit_script_commands)
"""
import argparse
import glob
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

# The groups of commands, in the order the rule lists them; a command goes to the first
# group that has it. The docs' table says what each group is for.
GROUPS = ["connection", "reads", "scripts", "inspect", "replicas"]

# Every upper-case string literal of the C sources: the command (or ACL subcommand) it
# stands for and its group, or None for a literal that is no command (an error prefix, a
# column title, a word of a subcommand named on its own). "cluster" and "sentinel" are
# not in GROUPS: the first goes to the Cluster rule, the second to the sentinels' user.
C_WORDS = {
    "PING": ("ping", "connection"),
    "SELECT": ("select", "connection"),
    "AUTH": None,  # every user may AUTH
    "EVALSHA": ("evalsha", "connection"),
    "EVAL": ("eval", "connection"),  # a script again after a SCRIPT FLUSH
    "SCRIPT": ("script|load", "connection"),
    "LOAD": None,
    "SUBSCRIBE": ("subscribe", "connection"),
    "UNSUBSCRIBE": ("unsubscribe", "connection"),
    "GET": ("get", "reads"),
    "EXISTS": ("exists", "reads"),
    "HEXISTS": ("hexists", "reads"),
    "HGET": ("hget", "reads"),
    "PTTL": ("pttl", "reads"),
    "TYPE": ("type", "inspect"),
    "TIME": ("time", "inspect"),
    "HGETALL": ("hgetall", "inspect"),
    "LRANGE": ("lrange", "inspect"),
    "ZRANGE": ("zrange", "inspect"),
    "PUBSUB": None,  # its subcommands below
    "NUMSUB": ("pubsub|numsub", "inspect"),
    "ROLE": ("role", "replicas"),
    "WAIT": ("wait", "replicas"),
    "CLUSTER": ("cluster|slots", "cluster"),
    "SLOTS": None,
    "ASKING": ("asking", "cluster"),
    "SSUBSCRIBE": ("ssubscribe", "cluster"),
    "SUNSUBSCRIBE": ("sunsubscribe", "cluster"),
    "SHARDNUMSUB": ("pubsub|shardnumsub", "cluster"),
    "SENTINEL": ("sentinel|get-master-addr-by-name", "sentinel"),
    # dlock doctor's reads (tools/doctor_*.c), for an admin's URL: the dlock user needs none
    "INFO": None, "CONFIG": None, "COMMAND": None, "ACL": None, "WHOAMI": None, "DRYRUN": None,
    # not commands
    "WITHSCORES": None, "NOPERM": None, "NOAUTH": None, "WRONGPASS": None, "WRONGTYPE": None,
    "NOSCRIPT": None, "READONLY": None, "TRYAGAIN": None, "CLUSTERDOWN": None, "MOVED": None,
    "ASK": None, "OK": None, "OBJECT": None, "MEMORY": None, "OWNER": None, "HOLDS": None,
}
# A container command's literal stands for one subcommand only; a file that names the
# container must name that subcommand too, else it sends another one the rule lacks.
CONTAINERS = {"SCRIPT": "LOAD", "CLUSTER": "SLOTS"}

# Lua commands a Cluster client's scripts send in another form (src/core/net/script.c writes
# every ('publish', as ('spublish',).
CLUSTER_FORMS = {"publish": "spublish"}

C_LITERAL = re.compile(r'"([A-Z][A-Z_]+)"')
LUA_CALL = re.compile(r"redis\.p?call\(\s*'([a-zA-Z]+)'")
LUA_FORWARDER = re.compile(r"local\s+function\s+(\w+)\(\.\.\.\)[^\n]*\n(?:[^\n]*\n){0,3}?[^\n]*redis\.p?call\(\.\.\.\)")
NAME_PREFIX = re.compile(
    r'(?:dlock__name_prefixed\(\s*"([a-z_]+)"|\{\s*DLOCK__KEY_(PREFIXED|BRACED)\s*,\s*"([a-z_]+)"\s*\})')


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def text_commands(text, where):
    """(commands, unknown calls) of one Lua text: the rules cmake/embed_lua.cmake applies."""
    found, unknown = set(), []
    found.update(c.lower() for c in LUA_CALL.findall(text))
    forwarded = len(LUA_FORWARDER.findall(text))
    for m in re.finditer(r"redis\.p?call\(\s*(?!')([^)\s,]*)", text):
        if m.group(1) == "..." and forwarded:
            continue  # the helper's callers name the command
        line = text.count("\n", 0, m.start()) + 1
        unknown.append(f"{where}:{line}: redis.call({m.group(1)}...)")
    for helper in LUA_FORWARDER.findall(text):  # side('get', key) -> get
        found.update(c.lower() for c in re.findall(r"(?<![\w.:])%s\(\s*'([a-zA-Z]+)'" % helper, text))
    return found, unknown


def script_commands():
    """{"folder/stem": sorted commands} of every script, its preludes' text included (the
    "-- uses:" lines of its header, and theirs), as the build embeds it."""
    def uses(path):
        header = re.match(r"(?:[ \t]*(?:--[^\n]*)?\n)*", read(path)).group(0)
        return [w for line in re.findall(r"(?:^|\n)-- uses:([^\n]*)", header) for w in line.split()]

    def preludes(names, out):
        for name in names:
            if name not in out:
                preludes(uses(os.path.join(ROOT, "src", "core", "lua", name + ".lua")), out)
                out.append(name)
        return out

    known = known_commands()
    result, unknown, misspelt = {}, [], []
    for p in sorted(glob.glob(os.path.join(ROOT, "src", "*", "*.lua"))):
        rel = os.path.relpath(p, ROOT)
        text = "".join(read(os.path.join(ROOT, "src", "core", "lua", n + ".lua"))
                       for n in preludes(uses(p), [])) + read(p)
        found, bad = text_commands(text, rel)
        unknown += bad
        misspelt += [f"{rel}: '{c}'" for c in sorted(found - known)]
        folder, stem = rel[len("src/"):-len(".lua")].split("/")
        result[f"{folder}/{stem}"] = sorted(found)
    if unknown:
        sys.exit("acl-rule: a call whose command is not written out (name it as a string, or "
                 "pass it through a local function f(...) whose callers do):\n  " + "\n  ".join(unknown))
    if misspelt:
        sys.exit("acl-rule: commands no script may run on Redis 7.0 "
                 "(cmake/redis_script_commands.txt):\n  " + "\n  ".join(misspelt))
    return result


def known_commands():
    path = os.path.join(ROOT, "cmake", "redis_script_commands.txt")
    return {l.strip() for l in read(path).splitlines() if l.strip() and not l.startswith("#")}


def lua_commands():
    found = set()
    for commands in script_commands().values():
        found.update(commands)
    if not found:
        sys.exit("acl-rule: no redis.call in src/*/*.lua: run from the repository")
    return found


def c_sources():
    return sorted(glob.glob(os.path.join(ROOT, "src", "**", "*.c"), recursive=True) +
                  glob.glob(os.path.join(ROOT, "tools", "*.c")))


def c_commands():
    """{group: set of commands} from the C sources."""
    by_group = {}
    unknown = []
    for p in c_sources():
        text = read(p)
        words = set(C_LITERAL.findall(text))
        for w in sorted(words):
            if w.startswith("DLOCK_"):
                continue  # an environment variable, an error name
            if w not in C_WORDS:
                unknown.append(f"{os.path.relpath(p, ROOT)}: \"{w}\"")
                continue
            if w in CONTAINERS and CONTAINERS[w] not in words:
                unknown.append(f"{os.path.relpath(p, ROOT)}: \"{w}\" without \"{CONTAINERS[w]}\"")
                continue
            if C_WORDS[w]:
                command, group = C_WORDS[w]
                by_group.setdefault(group, set()).add(command)
    if unknown:
        sys.exit("acl-rule: upper-case literals scripts/acl-rule.py does not know (a command "
                 "the ACL rule must grant, or add it to C_WORDS as None):\n  " + "\n  ".join(unknown))
    return by_group


def name_prefixes():
    """(keys, channels): the patterns of the object's side keys and channels, {N} for the name."""
    keys, channels = set(), set()
    for p in c_sources():
        for line in read(p).splitlines():
            for m in NAME_PREFIX.finditer(line):
                prefix = m.group(1) or m.group(3)
                pattern = prefix + ("{N" if m.group(2) == "BRACED" else ":{N")
                (channels if "channel" in line else keys).add(pattern)
    return sorted(keys), sorted(channels)


def computed():
    """The single rule's groups and the Cluster rule's commands."""
    groups = {g: set() for g in GROUPS}
    c = c_commands()
    for g in GROUPS:
        groups[g] |= c.get(g, set())
    groups["scripts"] |= lua_commands()
    placed = set()
    for g in GROUPS:  # each command in its first group
        groups[g] -= placed
        placed |= groups[g]
    cluster = c.get("cluster", set()) | {CLUSTER_FORMS[x] for x in placed if x in CLUSTER_FORMS}
    cluster -= placed
    return groups, sorted(cluster)


def wrap(words, indent="  ", width=92):
    lines, line = [], ""
    for w in words:
        if line and len(indent) + len(line) + 1 + len(w) + 2 > width:
            lines.append(line)
            line = w
        else:
            line = f"{line} {w}" if line else w
    if line:
        lines.append(line)
    return [indent + l for l in lines]


def single_words(prefix, user, password):
    groups, _ = computed()
    keys, channels = name_prefixes()
    pats = [p.replace("{N", "{" + prefix + "*") for p in keys + channels]
    chans = [p.replace("{N", "{" + prefix + "*") for p in channels]
    out = {
        "head": ["ACL", "SETUSER", user, "on", ">" + password, "resetkeys", "resetchannels"],
        "names": ["~" + prefix + "*", "~{" + prefix + "*"],
        "keys": ["~" + p for p in pats],
        "channels": ["&" + p for p in chans],
    }
    for i, g in enumerate(GROUPS):
        out[g] = (["-@all"] if i == 0 else []) + ["+" + c for c in sorted(groups[g])]
    return out


def cluster_words(user):
    _, cluster = computed()
    return ["ACL", "SETUSER", user] + ["+" + c for c in cluster]


def doc_rules(prefix="app:", user="dlock", password="secret"):
    s = single_words(prefix, user, password)
    lines = [" ".join(s["head"])]
    for part in ["names", "keys", "channels"] + GROUPS:
        lines += wrap(s[part])
    single = " \\\n".join(lines)
    cluster = " \\\n".join([" ".join(cluster_words(user))])
    return single, cluster


def check(path):
    text = read(path)
    blocks = re.findall(r"```\n(ACL SETUSER dlock .*?)\n```", text, re.S)
    single, cluster = doc_rules()
    problems = []
    for name, want in (("single-node", single), ("Cluster", cluster)):
        if want not in blocks:
            problems.append(f"{os.path.relpath(path, ROOT)} does not show the {name} rule as the "
                            f"sources need it; it should read:\n```\n{want}\n```")
    for b in blocks:
        if b not in (single, cluster):
            problems.append(f"{os.path.relpath(path, ROOT)} shows a dlock rule the sources do "
                            f"not make:\n```\n{b}\n```")
    for p in problems:
        print(p)
    return 1 if problems else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", metavar="FILE.md")
    ap.add_argument("--words", choices=["single", "cluster"])
    ap.add_argument("--prefix", default="app:")
    ap.add_argument("--user", default="dlock")
    ap.add_argument("--password", default="secret")
    ap.add_argument("--script-commands", action="store_true")
    a = ap.parse_args()
    if a.script_commands:
        for name, commands in script_commands().items():
            print(" ".join([name] + commands))
        return 0
    if a.check:
        return check(a.check)
    if a.words == "single":
        s = single_words(a.prefix, a.user, a.password)
        print("\n".join(w for part in ["head", "names", "keys", "channels"] + GROUPS for w in s[part]))
    elif a.words == "cluster":
        print("\n".join(cluster_words(a.user)))
    else:
        single, cluster = doc_rules()
        print(f"{single}\n\n{cluster}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
