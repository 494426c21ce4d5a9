#!/usr/bin/env python3
"""The benchmark report of bench/run: one folder, one page of numbers.

  report.py machine DIR            machine.json/.txt (CPU, RAM, kernel, THP, filesystems, ...)
  report.py merge DIR              raw/*.json -> results.json, results.md, *.png (gnuplot)
  report.py publish DIR [--docs D] copies to D/perf/DATE-* and rewrites the table section of
                                   D/performance.md between <!-- bench:begin --> and
                                   <!-- bench:end --> (D defaults to the repository's docs/)

Each benchmark writes DIR/raw/NAME.json in the common format (bench/schema.h):
{"bench", "quick", "figures": [{"id", "what", "unit", "value", "spread": [min, max],
"repeats", "higher_is_better", "baseline", "baseline_what", "ratio", "goal", "met"}],
"series": {PLOT: [{"label", "x", "y", "y_min", "y_max", "x_unit", "y_unit"}]}}.
ratio is how many times better than the baseline (above 1: better); a goal is
"ratio OP N", "value OP N" or "delta OP N" (value - baseline), OP one of >= > <= <.
bench/run records each entry's outcome in DIR/status.tsv (name, status, seconds,
command, needs); an entry that did not run is listed as such, never dropped.
"""
import datetime
import glob
import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"


def sh(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def read(path, default=""):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


# --- machine ---------------------------------------------------------------


def machine(d):
    cpu = next((l.split(":", 1)[1].strip() for l in read("/proc/cpuinfo").splitlines()
                if l.startswith("model name")), platform.processor() or "unknown")
    mem = re.search(r"MemTotal:\s+(\d+) kB", read("/proc/meminfo"))
    fs = {}
    for p in ("/tmp", "/dev/shm", "/var/tmp"):
        out = sh("findmnt", "-n", "-o", "FSTYPE,SOURCE", "-T", p)
        fs[p] = " ".join(out.splitlines()[0].split()) if out else "?"
    gcc = sh("gcc", "--version").splitlines()
    m = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "host": platform.node(),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "ram_gib": round(int(mem.group(1)) / 2**20, 1) if mem else None,
        "kernel": platform.release(),
        "os": next((l.split("=", 1)[1].strip('"') for l in read("/etc/os-release").splitlines()
                    if l.startswith("PRETTY_NAME=")), platform.system()),
        "thp": read("/sys/kernel/mm/transparent_hugepage/enabled", "?"),
        "filesystems": fs,
        "glibc": " ".join(os.confstr("CS_GNU_LIBC_VERSION").split()[1:]) if hasattr(os, "confstr") else "?",
        "gcc": gcc[0] if gcc else "?",
        "memlock": sh("sh", "-c", "ulimit -l"),
        "loadavg_start": read("/proc/loadavg").split()[:3],
        "commit": sh("git", "-C", ROOT, "describe", "--always", "--dirty"),
    }
    write_json(os.path.join(d, "machine.json"), m)
    with open(os.path.join(d, "machine.txt"), "w") as f:
        f.write(machine_text(m) + "\n")
    return m


def machine_line(m):
    return (f"{m['cpu']}, {m['cores']} cores, {m['ram_gib']} GiB RAM, {m['os']}, kernel "
            f"{m['kernel']}, THP {thp_mode(m['thp'])}")


def thp_mode(s):
    b = re.search(r"\[(\w+)\]", s or "")
    return b.group(1) if b else s


def machine_text(m):
    lines = [f"{k}: {' '.join(v) if isinstance(v, list) else v}" for k, v in m.items()
             if k != "filesystems"]
    lines += [f"filesystem {p}: {v}" for p, v in m["filesystems"].items()]
    return "\n".join(lines)


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")


def ratio(f):
    v, b = f.get("value"), f.get("baseline")
    if f.get("ratio") is not None:
        return f["ratio"]
    if v in (None, 0) or b in (None, 0):
        return None
    return v / b if f.get("higher_is_better") else b / v


def goal_met(f):
    if f.get("met") is not None:
        return f["met"]
    g = re.fullmatch(r"\s*(ratio|value|delta)\s*(>=|<=|>|<)\s*([-+0-9.eE]+)\s*", f.get("goal") or "")
    if not g:
        return None
    what, op, bound = g.group(1), g.group(2), float(g.group(3))
    v = {"ratio": ratio(f), "value": f.get("value"),
         "delta": None if f.get("baseline") is None or f.get("value") is None
         else f["value"] - f["baseline"]}[what]
    if v is None:
        return None
    return {">=": v >= bound, ">": v > bound, "<=": v <= bound, "<": v < bound}[op]


def rel_spread(lo_hi, mid):
    """(max - min) / mid of a [min, max] pair, or None."""
    if not lo_hi or None in lo_hi or not mid:
        return None
    return abs(lo_hi[1] - lo_hi[0]) / abs(mid)


def shortfall(f):
    """How far a missed goal is from being met, and the spread of the run's
    own repeats in the same terms: (short, noise), either None where the run
    cannot tell. Ratio and value goals are relative to the bound, against the
    relative spread of the figure and of its baseline; fio's paired goals
    against the spread of the pairs' ratios alone (the pairing cancels the
    sides' own swings); a delta goal in the figure's unit, against the spread
    of the per-round deltas."""
    goal = f.get("goal") or ""
    m = re.match(r"\s*median ratio >= ([0-9.]+), no pair below ([0-9.]+)", goal)
    if m:
        pair, med, floor = f.get("pair_spread"), float(m.group(1)), float(m.group(2))
        if f.get("ratio") is None or not pair or None in pair or not med or not floor:
            return None, None
        short = 1 - f["ratio"] / med if f["ratio"] < med else 1 - pair[0] / floor
        return short, pair[1] - pair[0]
    g = re.fullmatch(r"\s*(ratio|value|delta)\s*(>=|<=|>|<)\s*([-+0-9.eE]+)\s*", goal)
    if not g:
        return None, None
    what, op, bound = g.group(1), g.group(2), float(g.group(3))
    up = op in (">=", ">")  # the goal asks for more
    if what == "delta":
        ds, v, b = f.get("delta_spread"), f.get("value"), f.get("baseline")
        if not ds or None in ds or v is None or b is None:
            return None, None
        d = v - b
        return (bound - d if up else d - bound), ds[1] - ds[0]
    v = f.get("ratio") if what == "ratio" else f.get("value")
    if v is None or not bound:
        return None, None
    short = (1 - v / bound) if up else (v / bound - 1)
    noise = [rel_spread(f.get("spread"), f.get("value")),
             rel_spread(f.get("baseline_spread"), f.get("baseline"))]
    noise = [x for x in noise if x is not None]
    return short, max(noise) if noise else None


def why_missed(f):
    """Why a goal was missed, as far as the run itself can tell: the benchmark's
    note, and whether the miss is smaller than the spread of the figure's own
    repeats (shortfall), which is what a figure that depends on the machine's
    load looks like on a shared VM."""
    out = [f["note"]] if f.get("note") else []
    short, noise = shortfall(f)
    delta = "delta" in (f.get("goal") or "") and "median" not in f["goal"]
    if short is not None and short <= 0 and f.get("met") is False and not delta:
        short = 0.0  # missed by less than the rounding of the figures written
    if short is not None and noise is not None and 0 <= short < noise:
        by = (f"{num(short)} {f.get('unit', '')}" if delta
              else f"{short:.1%}" if short >= 0.001 else "less than 0.1%")
        of = f"{num(noise)} {f.get('unit', '')}" if delta else f"{noise:.0%}"
        whose = "its pairs" if f.get("pair_spread") else "its own repeats"
        out.append(f"load-sensitive: short by {by}, less than the spread of {whose} "
                   f"in this run ({of})")
    return "; ".join(out)


# --- merge -----------------------------------------------------------------


def load_status(d):
    rows = []
    p = os.path.join(d, "status.tsv")
    if os.path.exists(p):
        for line in read(p).splitlines():
            name, status, secs, cmd, needs = (line.split("\t") + [""] * 5)[:5]
            rows.append({"name": name, "status": status, "seconds": float(secs or 0),
                         "command": cmd, "needs": needs})
    else:  # no bench/run around it: every raw file counts as run
        for p in sorted(glob.glob(os.path.join(d, "raw", "*.json"))):
            rows.append({"name": os.path.basename(p)[:-5], "status": "ok", "seconds": 0,
                         "command": "", "needs": ""})
    return rows


def merge(d, plots=True):
    m = json.loads(read(os.path.join(d, "machine.json"), "null")) or machine(d)
    m.setdefault("loadavg_end", read("/proc/loadavg").split()[:3])  # once: at the end of the run
    write_json(os.path.join(d, "machine.json"), m)
    with open(os.path.join(d, "machine.txt"), "w") as f:
        f.write(machine_text(m) + "\n")
    entries, figures, series, quick = load_status(d), [], {}, False
    for e in entries:
        p = os.path.join(d, "raw", e["name"] + ".json")
        if e["status"] != "ok":
            continue
        try:
            doc = json.loads(read(p))
        except (ValueError, KeyError, TypeError) as err:
            e["status"] = f"failed: {os.path.basename(p)}: {err}"
            continue
        quick |= bool(doc.get("quick"))
        for f in doc.get("figures", []):
            f = dict(f, bench=e["name"])
            f["ratio"] = ratio(f)
            f["met"] = goal_met(f)
            figures.append(f)
        for plot, ss in (doc.get("series") or {}).items():
            series.setdefault(plot, []).extend(ss)
    gpu = gpu_results()
    res = {"date": m["date"], "quick": quick, "machine": m, "benchmarks": entries,
           "figures": figures, "series": series, "gpu": gpu}
    made = make_plots(d, series) if plots else []
    res["plots"] = made
    write_json(os.path.join(d, "results.json"), res)
    with open(os.path.join(d, "results.md"), "w") as f:
        f.write(markdown(res, img_prefix=""))
    return res


def gpu_results():
    """The dated runs recorded in docs/gpu-results.md, if any (never invented)."""
    text = read(os.path.join(ROOT, "docs", "gpu-results.md"))
    runs = text.split("## Runs", 1)[1] if "## Runs" in text else ""
    dates = sorted(set(re.findall(r"\b(20\d\d-\d\d-\d\d)\b", runs)))
    pending = not dates or runs.strip().startswith("None yet")
    return {"file": "docs/gpu-results.md", "dates": [] if pending else dates}


# --- Markdown --------------------------------------------------------------


def num(v):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    a = abs(v)
    if a >= 1e4:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    return f"{v:.3g}"


def fig_row(f):
    u = f.get("unit", "")
    what = f.get("what") or f["id"]
    bw = f.get("baseline_what")
    if bw and bw not in what:
        what += f" (vs {bw})"
    r = f.get("ratio")
    sp = f.get("spread")
    spread = f"{num(sp[0])} - {num(sp[1])}" if sp and None not in sp else "-"
    met = {True: "**met**", False: "**NOT met**", None: "-"}[f.get("met")]
    base = f"{num(f['baseline'])} {u}" if f.get("baseline") is not None else "-"
    return (f"| {f['bench']} | {what} | {num(f.get('value'))} {u} | {base} | "
            f"{num(r) + 'x' if r is not None else '-'} | {spread} | {f.get('goal') or '-'} | {met} |")


def markdown(res, img_prefix="", heading="#"):
    m = res["machine"]
    out = [f"{heading} Benchmark report, {res['date']}{' (--quick)' if res['quick'] else ''}", "",
           f"Machine: {machine_line(m)}; glibc {m['glibc']}, {m['gcc']}; /tmp on "
           f"{m['filesystems'].get('/tmp', '?').split()[0]}, /dev/shm on "
           f"{m['filesystems'].get('/dev/shm', '?').split()[0]}; load average "
           f"{' '.join(m.get('loadavg_start') or [])} at the start, "
           f"{' '.join(m.get('loadavg_end') or [])} at the end; commit {m.get('commit') or '?'}.",
           "", "Every figure is the median of its repeats, against its baseline measured in the "
           "same run; ratio = how many times better than the baseline (above 1: better); "
           "spread = min - max of the repeats, in the figure's unit.", "",
           "| benchmark | figure | value | baseline | ratio | spread | goal | met? |",
           "|---|---|---|---|---|---|---|---|"]
    out += [fig_row(f) for f in res["figures"]]
    missing = [e for e in res["benchmarks"] if e["status"] != "ok"]
    for e in missing:
        why = e["status"] + (f" ({e['needs']} missing)" if e["status"] == "not built" else "")
        out.append(f"| {e['name']} | - | {why} | - | - | - | - | - |")
    goals = [f for f in res["figures"] if f.get("goal")]
    out += ["", f"{heading}# Goals", ""]
    for f in goals:
        state = {True: "met", False: "NOT met", None: "not measured"}[f.get("met")]
        why = why_missed(f) if f.get("met") is False else ""
        out.append(f"- **{state}**: {f.get('what') or f['id']}: {num(f.get('value'))} "
                   f"{f.get('unit', '')}, ratio {num(f.get('ratio'))}x (goal: {f['goal']})"
                   + (f". Why: {why}" if why else ""))
    for e in missing:
        out.append(f"- **not measured**: {e['name']} ({e['status']})")
    if not goals and not missing:
        out.append("- none of the figures has a goal")
    out += ["", f"{heading}# Benchmarks run", "", "| benchmark | status | seconds | command |",
            "|---|---|---|---|"]
    for e in res["benchmarks"]:
        out.append(f"| {e['name']} | {e['status']} | {e['seconds']:.0f} | `{e['command']}` |")
    gpu = res["gpu"]
    out += ["", f"{heading}# GPU", ""]
    where = "[gpu-results.md](gpu-results.md)" if heading == "##" else gpu["file"]
    if gpu["dates"]:
        out.append(f"Figures against a real GPU and driver from `tests/gpu/run.sh`, run "
                   f"{', '.join(gpu['dates'])}: see {where}.")
    else:
        out.append(f"No GPU run recorded yet ({where} says pending): the CUDA figures above "
                   "are against the libcudart test double.")
    if res.get("plots"):
        out += ["", f"{heading}# Plots", ""]
        for name, title in res["plots"]:
            out += [f"![{title}]({img_prefix}{name}.png)", ""]
    return "\n".join(out).rstrip() + "\n"


# --- plots (gnuplot) ----------------------------------------------------------

PLOTS = {  # name: title, x label, y label, x in bytes, y scale of the limit lines (None: none)
    "pin_throughput": ("Pinning throughput against block size (first pin of fresh memory)",
                       "block size", "throughput (GB/s)", True, 1.0),
    "pin_cycle": ("Alloc+free cycle of a pinned block against block size",
                  "block size", "time per alloc+free (µs, log scale)", True, None),
    "lookup_latency": ("Is-this-pinned lookup against the number of pinned ranges",
                       "live pinned ranges", "time per lookup (ns, log scale)", False, None),
    "io_throughput": ("I/O throughput against block size", "block size", "throughput (MB/s)",
                      True, 1000.0),
}


def size_label(b):
    b = round(b / 1024) * 1024 if b >= 1024 else round(b)  # older files: 6 significant digits
    for unit, div in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if b >= div and b % div == 0:
            return f"{int(b // div)} {unit}"
    return f"{int(b)} B"


def make_plots(d, series):
    gp = shutil.which("gnuplot")
    made = []
    if not gp:
        print("report: gnuplot not found (apt install gnuplot-nox): no plots", file=sys.stderr)
        return made
    pdir = os.path.join(d, "plots")
    os.makedirs(pdir, exist_ok=True)
    limits = {s["label"]: s["y"][0] for s in series.get("limits", []) if s.get("y")}
    order = list(PLOTS) + sorted(set(series) - set(PLOTS))
    for name, ss in sorted(series.items(), key=lambda kv: order.index(kv[0])):
        ss = [s for s in ss if s.get("x") and s.get("y")]
        if name == "limits" or not ss:
            continue
        title, xl, yl, bytes_x, lim_scale = PLOTS.get(
            name, (name.replace("_", " "), ss[0].get("x_unit", "x"), ss[0].get("y_unit", "y"), False, None))
        xs = sorted({x for s in ss for x in s["x"]})
        ys = [y for s in ss for y in s["y"] + (s.get("y_min") or []) + (s.get("y_max") or [])
              if y is not None and y > 0]
        if lim_scale is not None:  # the limit lines are drawn too
            ys += [v * lim_scale for v in limits.values() if v and v > 0]
        logy = ys and max(ys) / min(ys) > 30
        cmds = [f'set terminal pngcairo size 1000,620 enhanced font "DejaVu Sans,11"',
                f'set output "{os.path.join(d, name + ".png")}"',
                f'set title "{title}" font ",13"', f'set xlabel "{xl}"', f'set ylabel "{yl}"',
                "set grid xtics ytics mytics lw 0.5 lc rgb '#dddddd'",
                "set key outside below horizontal maxcols 2 noenhanced", "set bmargin 7",
                "set xlabel offset 0,0.3", "set border 3", "set tics nomirror"]
        if xs and max(xs) / max(min(xs), 1e-9) > 30:
            cmds.append("set logscale x 2" if bytes_x else "set logscale x 10")
        if bytes_x:
            cmds.append("set xtics (" + ", ".join(f'"{size_label(x)}" {x:.0f}' for x in xs) + ")")
        elif xs and max(xs) / max(min(xs), 1e-9) > 30:
            cmds.append('set format x "10^{%L}"')
        if logy:
            cmds += ["set logscale y 10",
                     'set format y "%.0f"' if min(ys) >= 1 else 'set format y "%h"']
        else:
            cmds.append("set yrange [0:*]")
        if xs:
            lo, hi = min(xs), max(xs)
            cmds.append(f"set xrange [{lo / 1.4}:{hi * 1.4}]" if lo > 0 else "")
        parts = []
        for i, s in enumerate(ss):
            dat = os.path.join(pdir, f"{name}.{i}.dat")
            with open(dat, "w") as f:
                ymin, ymax = s.get("y_min") or s["y"], s.get("y_max") or s["y"]
                for x, y, a, b in zip(s["x"], s["y"], ymin, ymax):
                    if y is not None:
                        f.write(f"{x} {y} {a if a is not None else y} {b if b is not None else y}\n")
            label = s["label"].replace('"', "'")
            parts.append(f'"{dat}" using 1:2:3:4 with yerrorlines lw 2 pt 7 ps 0.8 '
                         f'title "{label}" noenhanced')
        if lim_scale is not None:
            for j, (lab, v) in enumerate(sorted(limits.items())):
                parts.append(f'{v * lim_scale} with lines dt {2 + j} lw 2 lc rgb "#555555" '
                             f'title "{lab} bandwidth (limit, {num(v * lim_scale)} {yl.split("(")[-1].rstrip(")")})"')
        cmds.append("plot " + ", \\\n  ".join(parts))
        script = os.path.join(pdir, name + ".gp")
        with open(script, "w") as f:
            f.write("\n".join(c for c in cmds if c) + "\n")
        r = subprocess.run([gp, script], capture_output=True, text=True)
        if r.returncode == 0 and os.path.exists(os.path.join(d, name + ".png")):
            made.append((name, title))
        else:
            print(f"report: gnuplot failed on {name}: {r.stderr.strip()[:500]}", file=sys.stderr)
    return made


# --- publish -----------------------------------------------------------------


def publish(d, docs):
    res = json.loads(read(os.path.join(d, "results.json")))
    day = res["date"][:10]
    perf = os.path.join(docs, "perf")
    os.makedirs(perf, exist_ok=True)
    for name, _ in res.get("plots", []):
        shutil.copyfile(os.path.join(d, name + ".png"), os.path.join(perf, f"{day}-{name}.png"))
    shutil.copyfile(os.path.join(d, "results.json"), os.path.join(perf, f"{day}-results.json"))
    shutil.copyfile(os.path.join(d, "machine.txt"), os.path.join(perf, f"{day}-machine.txt"))
    with open(os.path.join(perf, f"{day}-results.md"), "w") as f:
        f.write(markdown(res, img_prefix=f"{day}-"))
    section = markdown(res, img_prefix=f"perf/{day}-", heading="##")
    section += (f"\nRaw figures: [perf/{day}-results.json](perf/{day}-results.json), machine: "
                f"[perf/{day}-machine.txt](perf/{day}-machine.txt). Regenerate with "
                "`bench/run --publish` (`--quick` for the two-minute run).\n")
    doc = os.path.join(docs, "performance.md")
    text = read(doc) + "\n"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
    else:  # first time: the report goes after the title
        lines = text.split("\n", 1)
        head, tail = lines[0] + "\n\n", "\n" + (lines[1] if len(lines) > 1 else "")
    with open(doc, "w") as f:
        f.write(f"{head}{BEGIN}\n{section}{END}{tail}".rstrip() + "\n")
    print(f"published: {doc}, {perf}/{day}-*")


def main(argv):
    if len(argv) < 2 or argv[0] not in ("machine", "merge", "publish"):
        print(__doc__, file=sys.stderr)
        return 2
    d = argv[1]
    os.makedirs(d, exist_ok=True)
    if argv[0] == "machine":
        machine(d)
    elif argv[0] == "merge":
        res = merge(d, plots="--no-plots" not in argv)
        print(f"report: {len(res['figures'])} figures, {len(res['plots'])} plots -> "
              f"{os.path.join(d, 'results.md')}")
    else:
        docs = argv[argv.index("--docs") + 1] if "--docs" in argv else os.path.join(ROOT, "docs")
        publish(d, docs)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
