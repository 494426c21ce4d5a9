"""The core calls in one direction: every file of src/ calls (or reads the
data of) only files on a lower layer, as docs/design.md's "Layers of the
core" lists them. Reads the core library (libdsp_core.a) with nm, so
what is checked is what the compiler emitted, inline functions included.

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
    for b in bad:
        print(b)
    print(f"{len(uses)} files, {len(bad)} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
