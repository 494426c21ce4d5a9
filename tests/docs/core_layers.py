"""The core calls in one direction: every file of src/ calls (or reads the
data of) only files on a lower layer, as docs/design.md's "Layers of the
core" lists them. Reads the core library (libdsp_core.a) with nm, so
what is checked is what the compiler emitted, inline functions included.

Its headers too: no file of src/ includes a header of the layers above the
core (preload/, io/), and the headers of src/ include each other without a
cycle.

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


# Where a quoted include is found, in the build's order (meson.build, inc):
# the including file's own folder, then these.
INCLUDE_DIRS = ["include", "src", "io", "preload"]


def includes(root):
    """{src file name: [(folder, header) it includes]} for src/*.c and src/*.h."""
    out = {}
    src = os.path.join(root, "src")
    for name in sorted(os.listdir(src)):
        if not name.endswith((".c", ".h")):
            continue
        with open(os.path.join(src, name), encoding="utf-8") as f:
            wanted = re.findall(r'^\s*#\s*include\s+"([^"]+)"', f.read(), re.M)
        found = []
        for h in wanted:
            where = next((d for d in ["src"] + INCLUDE_DIRS
                          if os.path.exists(os.path.join(root, d, h))), None)
            found.append((where, h))
        out[name] = found
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


def header_problems(root):
    bad, graph = [], {}
    for name, found in includes(root).items():
        for where, h in found:
            if where in ("io", "preload"):
                bad.append(f"src/{name} includes {where}/{h}: the core includes no layer above it")
        if name.endswith(".h"):
            graph[name] = [h for where, h in found if where == "src"]
    c = cycle(graph)
    if c:
        bad.append("src/ headers include each other in a cycle: " + " -> ".join(c))
    return bad


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
    bad += header_problems(root)
    for b in bad:
        print(b)
    print(f"{len(uses)} files, {len(bad)} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
