#!/bin/sh
# The GPU check rehearsed without a GPU (issue 17): tests/gpu/run.sh --rehearse
# with the project's doubles for libcudart and libcufile and a stand-in
# nvidia-smi. Proves that the script builds, runs every part with and without
# the shim, stays within the device tool's limits (at most 8 files back, the
# summary in the last 12 kB of output, the time budget) and writes a valid
# results JSON. Usage: rehearse.sh (from anywhere)
repo=$(cd "$(dirname "$0")/../.." && pwd)
fail() { echo "FAIL: $*"; exit 1; }
t=$(mktemp -d) && trap 'rm -rf "$t"' EXIT
mkdir "$t/out"
OUT=$t/out bash "$repo/tests/gpu/run.sh" --rehearse >"$t/stdout" 2>&1
rc=$?
tail -c 12000 "$t/stdout" >"$t/tail" # what the device tool brings back
[ $rc -eq 0 ] || { tail -60 "$t/stdout"; fail "run.sh --rehearse exited $rc"; }
n=$(find "$t/out" -type f | wc -l)
[ "$n" -le 8 ] || fail "$n files in \$OUT, the device tool brings back 8"
[ -s "$t/out/gpu-log.txt" ] && [ -s "$t/out/gpu-results.json" ] || fail "log or results missing: $(ls "$t/out")"
head -3 "$t/out/gpu-log.txt" | grep -q '=== diagnostics' || fail "diagnostics are not first: $(head -3 "$t/out/gpu-log.txt")"
tail -1 "$t/tail" | grep -q '^OK: 0 parts failed or timed out, 0 missing' || fail "summary not last: $(tail -3 "$t/tail")"
grep -q '^goals (a ratio' "$t/tail" || fail "the summary table is not within the last 12 kB"
cmp -s "$t/stdout" "$t/out/gpu-log.txt" || fail "the log in \$OUT differs from the output"
python3 - "$t/out/gpu-results.json" <<'PY' || fail "results JSON"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["mode"] == "rehearsal" and r["ok"] and not r["missing_parts"], r["missing_parts"]
assert r["elapsed_s"] < 300, r["elapsed_s"]
status = {(p["name"], p["variant"]): p["status"] for p in r["parts"]}
# Every C part runs against the doubles, with and without the shim.
for name in ["build", "cycle", "register", "cufile"] + ["semantics_" + m for m in (
        "freehost_wait", "nonblocking_reuse", "d2h_hinted", "fork_time", "capture")]:
    for v in ("plain", "shim"):
        assert status[(name, v)] == "PASS", (name, v, status[(name, v)])
# The Python parts say why they did not run (torch here has no CUDA).
for (name, v), s in status.items():
    assert s in ("PASS", "NOT RUN"), (name, v, s)
figs = {(p["name"], p["variant"]): p["figures"] for p in r["parts"]}
# Every goal of a C part finds its figure (the names the programs print are
# the names summary.py looks for); 16 GiB is too much to register here.
c_parts = ("cycle", "register", "cufile")
for g in r["goals"]:
    if g["part"].startswith(c_parts + ("semantics_",)) and g["figure"] != "register_16GiB_GBps":
        assert g["value"] is not None, ("no figure", g["part"], g["figure"], figs.get((g["part"], "shim")))
    if g["part"].startswith(("torch", "cupy", "jax")):
        assert g["verdict"] == "NOT RUN", g
assert r["diagnostics"]["mode"] == "rehearsal" and "vm.max_map_count" in r["diagnostics"]
print("rehearsal: %d parts, %ds" % (len(status), r["elapsed_s"]))
PY
# What must never read OK: a shim that does not build (every other part NOT
# RUN), and a part that runs without the shim but not with it.
printf 'date: x\nmode: real\n' >"$t/diag"
python3 - "$repo/tests/gpu/summary.py" "$t" <<'PY' || fail "summary verdicts"
import subprocess, sys
summary, t = sys.argv[1], sys.argv[2]
parts = ["build", "cycle", "torch"]
def verdict(rows):
    with open(t + "/rec", "w") as f:
        f.writelines("%s\t%s\t%s\t0\t\n" % r for r in rows)
    p = subprocess.run([sys.executable, summary, t + "/rec", t + "/diag", t + "/r.json", "0", "1"],
                       capture_output=True, text=True)
    return p.returncode, p.stdout.strip().splitlines()[-1]
import json
# Every part present, so only the verdicts decide.
from importlib.util import spec_from_file_location
all_parts = [l.split('"')[1::2] for l in open(summary) if l.startswith("PARTS")]
rows = lambda st: [(p, v, st(p, v)) for p in ["build", "cycle", "semantics_freehost_wait",
    "semantics_nonblocking_reuse", "semantics_d2h_hinted", "semantics_fork_time", "semantics_capture",
    "semantics_numa",
    "register", "torch", "torch_hints", "torch_loader", "torch_capture", "cupy", "jax", "cufile"]
    for v in ("plain", "shim")]
rc, last = verdict(rows(lambda p, v: "FAIL" if p == "build" else "NOT RUN"))
assert rc == 1 and last.startswith("NOT OK"), ("a broken build read OK", rc, last)
rc, last = verdict(rows(lambda p, v: "NOT RUN" if (p, v) == ("torch", "shim") else "PASS"))
assert rc == 1 and last.startswith("NOT OK"), ("plain PASS, shim NOT RUN read OK", rc, last)
rc, last = verdict(rows(lambda p, v: "PASS"))
assert rc == 0 and last.startswith("OK"), ("all PASS without figures", rc, last)
PY
echo PASS
