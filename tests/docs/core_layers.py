"""The core calls in one direction: every file of src/ calls (or reads the
data of) only files on a lower layer, as docs/design.md's "Layers of the
core" lists them. Reads the core library (libdsp_core.a) with nm, so
what is checked is what the compiler emitted, inline functions included.

Its headers too: no file of src/ includes a header of the layers above the
core (preload/, io/; by where the include leads, not how it is spelt),
the headers of src/ include each other without a
cycle, and includes point down the layers as calls do: a file includes no
header whose own .c is on its layer or above. A header without a .c of its
name (internal.h, span.h, block.h, reentry.h, ...) belongs to no layer and
anyone may include it, but what it includes counts as included by its
includer; the few headers a lower file needs for a type or a constant only
are named, with why, in UPWARD_INCLUDES.

usage: core_layers.py SOURCE_ROOT CORE_ARCHIVE"""
import os
import re
import subprocess
import sys


def layers(design):
    """{file: layer number, 1 the top} from the numbered list under the heading."""
    out, inside = {}, False
    with open(design, encoding="utf-8") as f:
        for line in f:
            if line.startswith("## "):
                inside = line.strip() == "## Layers of the core"
                continue
            m = re.match(r"(\d+)\.\s+(.*)", line) if inside else None
            if m:
                for name in re.findall(r"`([\w.]+)\.c`", m.group(2)):
                    out[name] = int(m.group(1))
    return out


def symbols(archive):
    """({symbol: defining file}, {file: symbols it uses}) of the core's members."""
    defs, uses, name = {}, {}, None
    nm = subprocess.run(["nm", archive], capture_output=True, text=True, check=True)
    for line in nm.stdout.splitlines():
        member = re.match(r"(?:.*/)?([^/]+)\.c\.o:$", line)
        if member:
            m = re.match(r"src_(\w+)$", member.group(1))
            name = m.group(1) if m else None
            if name:
                uses[name] = set()
            continue
        p = line.split()
        if not name:
            continue
        if len(p) == 3 and p[1] in "TDBRVW":
            defs[p[2]] = name
        elif len(p) == 2 and p[0] == "U":
            uses[name].add(p[1])
    return defs, uses


# Where an include is found, in the build's order (meson.build, inc): a quoted
# one in the including file's own folder first, then these. "" is the source
# root, which meson adds for the core (implicit_include_directories of the
# top meson.build's targets): "io/dio.h" from src/ compiles through it.
INCLUDE_DIRS = ["", "include", "src", "io", "preload"]


def resolve(root, own, h, quoted):
    """(top folder of the tree, path inside it) of the file include h of a
    file in folder own reaches, or (None, h) where it reaches none of ours
    (a system header). Paths are normalised, so "../io/dio.h" from src/ is
    io's dio.h, not src's."""
    for d in ([own] if quoted else []) + INCLUDE_DIRS:
        p = os.path.normpath(os.path.join(root, d, h))
        if os.path.isfile(p):
            rel = os.path.relpath(p, root).split(os.sep)
            return (rel[0], "/".join(rel[1:])) if len(rel) > 1 else ("", rel[0])
    return None, h


def includes(root):
    """{src file name: [(folder, header) it includes]} for src/*.c and src/*.h."""
    out = {}
    src = os.path.join(root, "src")
    for name in sorted(os.listdir(src)):
        if not name.endswith((".c", ".h")):
            continue
        with open(os.path.join(src, name), encoding="utf-8") as f:
            wanted = re.findall(r'^\s*#\s*include\s+(["<])([^">]+)[">]', f.read(), re.M)
        out[name] = [resolve(root, "src", h, q == '"') for q, h in wanted]
    return out


def cycle(graph):
    """One include cycle of graph ({header: headers it includes}) as a list
    of headers, the first repeated at the end; None when there is none."""
    state = {}

    def visit(n, path):
        state[n] = 1
        for m in graph.get(n, ()):
            if state.get(m) == 1:
                return path[path.index(m):] + [m]
            if m not in state:
                c = visit(m, path + [m])
                if c:
                    return c
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            c = visit(n, [n])
            if c:
                return c
    return None


# Includes that point up the layers for a type or a constant, not a call:
# {(including file, or "*.c" for every .c, header): why}. One no longer made is reported too.
UPWARD_INCLUDES = {
    ("*.c", "manager.h"): "struct dsp_manager, which the files below the manager "
                          "are handed as an argument; their headers declare it only (docs/design.md, \"Layers of the core\")",
    ("manager.h", "span_kind.h"): "struct dsp_span_kind, the hooks the manager keeps and calls",
    ("manager.c", "span_kind.h"): "struct dsp_span_kind and DSP_SPAN_KINDS",
    ("log.h", "config.h"): "the log levels, which the options table's DSP_LOG values name",
    ("reentry.h", "fork.h"): "dsp_fork_locks, which dsp_reentered reads inline for the "
                             "files above fork.c; defer.c, which reentry.h declares, "
                             "uses none of it (the symbol check holds it to that)",
}


def reached(found_by_file, name, order):
    """[(via, header)]: the headers of src/ that file name includes, those a
    header without a layer includes for it too (via: the header that makes
    the include), so that such a header is no way around the rule."""
    out, seen = [], set()
    todo = [(name, h) for where, h in found_by_file.get(name, ()) if where == "src"]
    while todo:
        via, h = todo.pop(0)
        if (via, h) in seen:
            continue
        seen.add((via, h))
        out.append((via, h))
        if h.rsplit(".", 1)[0] not in order:
            todo += [(h, g) for where, g in found_by_file.get(h, ()) if where == "src"]
    return out


def upward_problems(found_by_file, order):
    """Includes of a header whose .c is on the includer's layer or above."""
    bad, used = [], set()
    for name in sorted(found_by_file):
        own = name.rsplit(".", 1)[0]
        if own not in order:
            continue
        for via, h in reached(found_by_file, name, order):
            target = h.rsplit(".", 1)[0]
            if target == own or target not in order or order[target] > order[own]:
                continue
            keys = ((via, h), ("*" + name[-2:], h)) if via == name else ((via, h),)
            key = next((k for k in keys if k in UPWARD_INCLUDES), None)
            if key:
                used.add(key)
                continue
            through = f" through {via}" if via != name else ""
            bad.append(f"src/{name} (layer {order[own]}) includes {h} of src/{target}.c "
                       f"(layer {order[target]}){through}: includes point down the layers")
    for k in sorted(set(UPWARD_INCLUDES) - used):
        bad.append(f"core_layers.py: UPWARD_INCLUDES names {k[0]} -> {k[1]}, which no file makes")
    return bad


def header_problems(root, order):
    bad, graph = [], {}
    found_by_file = includes(root)
    for name, found in found_by_file.items():
        for where, h in found:
            if where is not None and where not in ("src", "include"):
                bad.append(f"src/{name} includes {where + '/' if where else ''}{h}: the core "
                           "includes no layer above it")
        if name.endswith(".h"):
            graph[name] = [h for where, h in found if where == "src"]
    c = cycle(graph)
    if c:
        bad.append("src/ headers include each other in a cycle: " + " -> ".join(c))
    return bad + upward_problems(found_by_file, order)


def main():
    root, archive = sys.argv[1], sys.argv[2]
    order = layers(os.path.join(root, "docs", "design.md"))
    defs, uses = symbols(archive)
    bad = []
    for f in sorted(uses):
        if f not in order:
            bad.append(f"src/{f}.c is in no layer of docs/design.md, \"Layers of the core\"")
            continue
        for s in sorted(uses[f]):
            g = defs.get(s)
            if g and g != f and g in order and order[g] <= order[f]:
                bad.append(f"src/{f}.c (layer {order[f]}) uses {s} of src/{g}.c (layer {order[g]})")
    for f in sorted(set(order) - set(uses)):
        bad.append(f"docs/design.md lists {f}.c, which the core does not build")
    bad += header_problems(root, order)
    for b in bad:
        print(b)
    print(f"{len(uses)} files, {len(bad)} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
