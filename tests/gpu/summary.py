"""The end of tests/gpu/run.sh: every part's verdict and figures into one
results JSON, each figure against its goal, and the summary table as the last
lines of the output.

Usage: summary.py RECORDS DIAG RESULTS_JSON REHEARSE ELAPSED_S

RECORDS holds one line per run part: name, variant (plain: without the shim,
shim: with it), status (PASS, FAIL, TIMEOUT, NOT RUN), seconds, and its figures
as NAME=VALUE=UNIT words. Exit status: 1 when a part failed or timed out, or
(in a real run) a goal was missed; in a rehearsal the goals are shown but not
judged, since the doubles' figures mean nothing.
"""
import json
import sys

# The parts run.sh runs, in order: the rehearsal checks that none is missing.
PARTS = ["build", "cycle"] + ["semantics_" + m for m in
                     ("freehost_wait", "nonblocking_reuse", "d2h_hinted", "fork_time", "capture",
                      "numa")] + \
        ["register", "torch", "torch_hints", "torch_loader", "torch_capture", "cupy", "jax", "cufile"]

# (label, part, figure, how, goal) with how:
#   plain/shim  the figure without the shim over the one with it (times: faster is more)
#   shim/plain  with over without (rates)
#   shim, plain the value in that variant; both: the value in both variants
#   same        1 when the shim's value is the driver's (without the shim), else 0:
#               for the driver's behaviours, which the shim must keep, whatever
#               they turn out to be on the real machine
#   shim-plain  the value with the shim less the one without (times: ms added)
# and goal ">= x", "<= x", "== x" or None (reported, not judged).
GOALS = [
    ("64 MiB cudaHostAlloc+cudaFreeHost cycle", "cycle", "cycle_s", "plain/shim", ">= 3"),
    ("first cudaHostAlloc of 8 GiB (compass: 10x)", "cycle", "first_alloc_s", "plain/shim", ">= 3"),
    ("H2D bandwidth from served memory (C)", "cycle", "h2d_GBps", "shim/plain", ">= 0.98"),
    ("D2H bandwidth into served memory (C)", "cycle", "d2h_GBps", "shim/plain", ">= 0.98"),
    ("cudaFreeHost waits for a busy stream", "semantics_freehost_wait", "freehost_waits_for_device",
     "both", None),
    ("cudaFreeHost time against a busy stream", "semantics_freehost_wait", "freehost_ms", "both", None),
    ("non-blocking copy, free, reuse: data intact", "semantics_nonblocking_reuse",
     "nonblocking_reuse_intact", "same", "== 1"),
    ("D2H into malloc memory landed on return", "semantics_d2h_hinted",
     "d2h_pageable_landed_before_return", "same", "== 1"),
    ("fork with cudaHostAlloc memory: ms more", "semantics_fork_time", "fork_hostalloc_ms",
     "shim-plain", "<= 5"),
    ("fork with registered memory: time", "semantics_fork_time", "fork_registered_ms", "shim/plain", None),
    ("forked child reads the parent's data", "semantics_fork_time", "fork_child_reads_parent_data",
     "same", "== 1"),
    ("cudaHostAlloc memory shared as the driver's", "semantics_fork_time", "hostalloc_shared", "same",
     "== 1"),
    ("cudaHostAlloc memory out of core dumps", "semantics_fork_time", "hostalloc_dontdump", "same",
     "== 1"),
    ("device's NUMA node (-1: unknown)", "semantics_numa", "device_numa_node", "shim", None),
    ("node of a cudaHostAlloc block, first touch", "semantics_numa", "served_numa_node", "plain",
     None),
    ("served blocks on the device's node", "semantics_numa", "served_on_device_node", "shim",
     "== 1"),
    ("attributes during a global capture", "semantics_capture", "capture_attributes_ok", "same", "== 1"),
    ("capture still valid after them", "semantics_capture", "capture_still_valid", "same", "== 1"),
    ("captured graph replays", "semantics_capture", "capture_replay_ok", "same", "== 1"),
    ("cudaHostAlloc in a capture: the driver's code", "semantics_capture", "capture_hostalloc_rc",
     "same", "== 1"),
    ("... and the capture invalidated as the driver's", "semantics_capture",
     "capture_hostalloc_invalidates", "same", "== 1"),
    ("registration speed, 1 GiB", "register", "register_1GiB_GBps", "shim/plain", None),
    ("registration speed, 16 GiB", "register", "register_16GiB_GBps", "shim/plain", None),
    ("torch H2D, served vs torch's pinned", "torch", "h2d_GBps", "shim/plain", ">= 0.98"),
    ("torch D2H, served vs torch's pinned", "torch", "d2h_GBps", "shim/plain", ">= 0.98"),
    ("torch pin_memory+emptyCache cycle", "torch", "pin_empty_cycle_s", "plain/shim", None),
    ("pin_memory of 20.4 GiB: pinned GiB", "torch_hints", "pinned_GiB", "shim", "<= 21"),
    ("pin_memory of 20.4 GiB: pinned GiB, torch", "torch_hints", "pinned_GiB", "plain", None),
    ("pin_memory of 20.4 GiB: same storage", "torch_hints", "same_storage", "shim", "== 1"),
    ("DataLoader, 4 workers: batches/s", "torch_loader", "loader_batches_per_s", "shim/plain", ">= 0.95"),
    ("DataLoader data intact", "torch_loader", "loader_data_intact", "both", "== 1"),
    ("DataLoader pinned MiB", "torch_loader", "loader_pinned_MiB", "both", None),
    ("is_pinned during a captured graph", "torch_capture", "capture_is_pinned_ok", "both", "== 1"),
    ("torch graph replays", "torch_capture", "capture_replay_ok", "both", "== 1"),
    ("CuPy pinned memory served by the shim (issue 15)", "cupy", "cupy_served_by_shim", "shim", ">= 3"),
    ("CuPy data intact", "cupy", "cupy_data_intact", "both", "== 1"),
    ("JAX pinned_host served by the shim (issue 15)", "jax", "jax_served_by_shim", "shim", ">= 1"),
    ("JAX data intact", "jax", "jax_data_intact", "both", "== 1"),
    ("cuFile into pinned host memory", "cufile", "cufile_host_GBps", "shim/plain", ">= 0.98"),
    ("cuFile into device memory", "cufile", "cufile_device_GBps", "shim/plain", ">= 0.98"),
]


def load(path):
    parts = {}
    for line in open(path):
        f = line.rstrip("\n").split("\t")
        if len(f) < 4:
            continue
        figs = {}
        for w in (f[4].split() if len(f) > 4 else []):
            k, v, u = w.split("=", 2)
            figs[k] = {"value": float(v), "unit": u}
        parts[(f[0], f[1])] = {"name": f[0], "variant": f[1], "status": f[2],
                               "seconds": int(f[3]), "figures": figs}
    return parts


def judge(value, goal):
    if goal is None:
        return "report"
    op, x = goal.split()
    x = float(x)
    ok = value >= x if op == ">=" else value <= x if op == "<=" else abs(value - x) < 1e-9
    return "PASS" if ok else "FAIL"


def fmt(v):
    return "%.0f" % v if abs(v) >= 100 else "%.3g" % v


def main():
    records, diag_path, out_path, rehearse, elapsed = sys.argv[1:6]
    rehearse = rehearse == "1"
    parts = load(records)
    diag = {}
    for line in open(diag_path):
        k, _, v = line.rstrip("\n").partition(": ")
        diag[k] = v
    fig = lambda p, var, n: parts.get((p, var), {}).get("figures", {}).get(n, {}).get("value")
    goals = []
    for label, p, name, how, goal in GOALS:
        a, b = fig(p, "plain", name), fig(p, "shim", name)
        if how in ("plain/shim", "shim/plain"):
            num, den = (a, b) if how == "plain/shim" else (b, a)
            value = num / den if num is not None and den else None
            shown = None if value is None else "%sx" % fmt(value)
        elif how in ("shim", "plain"):
            v = b if how == "shim" else a
            value, shown = v, None if v is None else fmt(v)
        elif how == "shim-plain":
            value = None if a is None or b is None else b - a
            shown = None if value is None else "%+.3g" % value
        elif how == "same":
            value = None if a is None or b is None else float(a == b)
            shown = None if value is None else "%s / %s" % (fmt(a), fmt(b))
        else:  # both: the worse of the two against the goal
            vals = [v for v in (a, b) if v is not None]
            value = None
            if vals:
                value = min(vals) if goal and goal.startswith((">=", "==")) else max(vals)
            shown = None if not vals else "%s / %s" % tuple("-" if v is None else fmt(v) for v in (a, b))
        verdict = "NOT RUN" if value is None else judge(value, goal)
        if rehearse and verdict in ("PASS", "FAIL"):
            verdict = "(%s)" % verdict  # the doubles' figures are not judged
        goals.append({"label": label, "part": p, "figure": name, "how": how, "value": value,
                      "shown": shown,
                      "goal": goal, "verdict": verdict})
    missing = [p for p in PARTS if (p, "plain") not in parts or (p, "shim") not in parts]
    broken = [k for k, v in parts.items() if v["status"] in ("FAIL", "TIMEOUT")]
    # A part that ran without the shim but not with it: the shim broke what
    # it needs (a CUDA start-up, an import), not the machine.
    broken += [(p, "shim") for p in PARTS
               if parts.get((p, "plain"), {}).get("status") == "PASS"
               and parts.get((p, "shim"), {}).get("status") == "NOT RUN"]
    missed = [g for g in goals if g["verdict"] == "FAIL"]
    result = {"mode": "rehearsal" if rehearse else "real", "date": diag.get("date"),
              "elapsed_s": int(elapsed), "diagnostics": diag,
              "parts": list(parts.values()), "goals": goals, "missing_parts": missing,
              "ok": not broken and not missing and not missed}
    with open(out_path, "w") as f:
        json.dump(result, f, indent=1)

    # The table: the last lines of the output.
    print("parts (plain = without the shim / shim = with it):")
    for p in PARTS:
        st = [parts.get((p, v), {}).get("status", "MISSING") for v in ("plain", "shim")]
        print("  %-30s %-8s / %s" % (p, st[0], st[1]))
    print("goals (a ratio Nx, or the value without / with the shim):")
    for g in goals:
        v = g["shown"] or "-"
        print("  %-46s %15s  %-8s %s" % (g["label"][:46], v, g["goal"] or "report", g["verdict"]))
    print("%s: %d parts failed or timed out, %d missing, %d goals missed; %ss (%s)" % (
        "OK" if result["ok"] else "NOT OK", len(broken), len(missing), len(missed), elapsed,
        "rehearsal" if rehearse else "real run"))
    sys.exit(0 if result["ok"] else 1)


main()
