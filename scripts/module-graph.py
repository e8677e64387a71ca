#!/usr/bin/env python3
"""The module graph of the crate under src/, from what each module names: fails on a cycle.

    scripts/module-graph.py [--dot]      (run by scripts/test.sh; --dot prints the graph)

Each .rs file under src/ is a module (src/a.rs and src/a/mod.rs are `a`, src/a/b.rs is
`a::b`). A module depends on another when its code names it: `crate::x::y` paths (in `use`
items, brace groups included, and inline) and `super::` paths, resolved to the longest
existing module. Edges between a module and its own ancestors or descendants are not
counted: a folder's mod.rs and its files are one unit, as `pub use child::X` and
`use super::helper` make them. Comments and string literals are ignored.

Two rules, each a failure with the modules named:
1. no cycle: no module reaches itself through dependencies on other modules;
2. nothing below the API names it: only the crate root (lib.rs, main.rs), `cli`, `health`
   and `state` (the HTTP application and its state) may depend on `api`.
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
MAY_USE_API = {"", "cli", "health", "state", "main"}


def module_of(path):
    rel = os.path.relpath(path, ROOT)[:-3].split(os.sep)
    if rel[-1] == "mod":
        rel = rel[:-1]
    if rel in (["lib"], ["main"]):
        return "" if rel == ["lib"] else "main"
    return "::".join(rel)


def strip(text):
    """The code without comments and string literals (raw strings included)."""
    text = re.sub(r'r(#*)"(?:.|\n)*?"\1', '""', text)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    text = re.sub(r"'(?:\\.|[^'\\])'", "' '", text)
    text = re.sub(r"/\*(?:.|\n)*?\*/", "", text)
    return re.sub(r"//[^\n]*", "", text)


def expand_groups(path):
    """`a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e] (only the module part matters)."""
    m = re.match(r"^([\w:]*?)\{(.*)\}$", path.strip())
    if not m:
        return [path.strip()]
    prefix, inner = m.group(1), m.group(2)
    parts, depth, cur = [], 0, ""
    for ch in inner:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    parts.append(cur)
    out = []
    for p in parts:
        p = p.strip()
        if p:
            out.extend(expand_groups(prefix + p))
    return out


def references(code):
    refs = []
    for m in re.finditer(r"\buse\s+((?:crate|super|self)[^;]*);", code, re.S):
        refs.extend(expand_groups(re.sub(r"\s+", "", m.group(1))))
    for m in re.finditer(r"\b((?:crate|super)(?:::\w+)+)", code):
        refs.append(m.group(1))
    return refs


def resolve(ref, here, modules):
    parts = ref.split("::")
    base = here.split("::") if here else []
    if parts[0] == "crate":
        path, rest = [], parts[1:]
    elif parts[0] in ("super", "self"):
        path = list(base)
        rest = parts
        while rest and rest[0] in ("super", "self"):
            if rest[0] == "super":
                path = path[:-1]
            rest = rest[1:]
    else:
        return None
    best = "::".join(path)
    for p in rest:
        cand = "::".join(path + [p])
        if cand in modules:
            path.append(p)
            best = cand
        else:
            break
    return best


def related(a, b):
    if a == b:
        return True
    if a == "" or b == "":
        return True
    return a.startswith(b + "::") or b.startswith(a + "::")


def main():
    files = {}
    for d, _, names in os.walk(ROOT):
        for n in names:
            if n.endswith(".rs"):
                p = os.path.join(d, n)
                files[module_of(p)] = p
    modules = set(files)
    edges = {m: set() for m in modules}
    for m, p in files.items():
        with open(p, encoding="utf-8") as f:
            code = strip(f.read())
        for ref in references(code):
            t = resolve(ref, m, modules)
            if t is None or t not in modules or related(m, t):
                continue
            edges[m].add(t)
    if "--dot" in sys.argv:
        print("digraph modules {")
        for a in sorted(edges):
            for b in sorted(edges[a]):
                print('  "%s" -> "%s";' % (a or "crate", b or "crate"))
        print("}")
        return 0
    failures = []
    # Rule 1: strongly connected components (Tarjan).
    index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(modules):
        if v not in index:
            visit(v)
    for comp in sccs:
        inside = ["%s -> %s" % (a, b) for a in comp for b in sorted(edges[a]) if b in comp]
        failures.append("cycle among %s: %s" % (", ".join(comp), "; ".join(inside)))
    # Rule 2.
    for m in sorted(modules):
        top = m.split("::")[0]
        if top == "api" or m in MAY_USE_API:
            continue
        for t in sorted(edges[m]):
            if t == "api" or t.startswith("api::"):
                failures.append("%s (below the API) depends on %s" % (m, t))
    for f in failures:
        print("module-graph: " + f, file=sys.stderr)
    if not failures:
        n = sum(len(e) for e in edges.values())
        print("module-graph: %d modules, %d dependencies, no cycle, nothing below the API "
              "depends on it" % (len(modules), n))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
