#!/bin/sh
# The report step of bench/run on two tiny synthetic benchmark files (no real
# benchmark runs): results.json and results.md are made and well formed, goals
# are judged, an entry that was not built is listed, plots are PNGs where
# gnuplot is installed, and publishing rewrites only the marked section of
# performance.md, twice in a row.
set -eu
report=$1
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
mkdir -p "$d/run/raw" "$d/docs"
cat >"$d/run/raw/one.json" <<'J'
{"bench": "one", "quick": true,
 "figures": [
  {"id": "one.cycle", "what": "a cycle", "unit": "us", "value": 2, "spread": [1.5, 3],
   "repeats": 3, "higher_is_better": false, "baseline": 10, "baseline_what": "the old way",
   "ratio": null, "goal": "ratio >= 4", "met": null},
  {"id": "one.lookup", "what": "a lookup", "unit": "ns", "value": 60, "spread": [55, 70],
   "repeats": 3, "higher_is_better": false, "baseline": null, "goal": "value < 50", "met": null}],
 "series": {"pin_throughput": [{"label": "shim", "x": [65536, 1048576, 67108864], "y": [1, 2, 4],
   "y_min": [0.9, 1.8, 3.5], "y_max": [1.1, 2.2, 4.5], "x_unit": "bytes", "y_unit": "GB/s"}]}}
J
cat >"$d/run/raw/two.json" <<'J'
{"bench": "two", "quick": true,
 "figures": [{"id": "limits.memcpy", "what": "memcpy", "unit": "GB/s", "value": 12.5,
   "spread": [12, 13], "repeats": 3, "higher_is_better": true, "baseline": null}],
 "series": {"limits": [{"label": "memcpy", "x": [67108864], "y": [12.5], "x_unit": "bytes",
   "y_unit": "GB/s"}],
  "io_throughput": [{"label": "direct via shim", "x": [4096, 1048576], "y": [800, 1300],
   "x_unit": "bytes", "y_unit": "MB/s"}]}}
J
# Figures whose goals the report judges (met left out), as malloc_bench and
# cufile_bench write them.
cat >"$d/run/raw/malloc.json" <<'J'
{"bench": "malloc_bench", "quick": true,
 "figures": [{"id": "malloc.loop64_ns", "what": "loop64", "unit": "ns", "value": 10.5,
   "baseline": 10.0, "higher_is_better": false, "repeats": 3, "goal": "ratio >= 0.952"},
  {"id": "malloc.startup_ms", "what": "startup", "unit": "ms", "value": 1.9, "baseline": 1.2,
   "higher_is_better": false, "repeats": 3, "goal": "delta <= 0.5"}], "series": {}}
J
cat >"$d/run/raw/cufile.json" <<'J'
{"bench": "cufile_bench", "quick": true,
 "figures": [{"id": "cufile.pinned_host_buffer_dev_shm", "what": "pinned host buffer, /dev/shm",
   "unit": "GB/s", "value": 6.0, "baseline": 3.0, "higher_is_better": true, "repeats": 3}],
 "series": {}}
J
# Missed goals and why: a note, a miss inside the figure's own spread, one
# far outside it, and fio's pairs.
cat >"$d/run/raw/why.json" <<'J'
{"bench": "why", "quick": true,
 "figures": [{"id": "why.noisy", "what": "noisy", "unit": "ms", "value": 1.9, "spread": [1.0, 3.0],
   "baseline": 4, "baseline_spread": [3.9, 4.1], "higher_is_better": false, "repeats": 5,
   "goal": "ratio >= 2.2"},
  {"id": "why.clear", "what": "clear", "unit": "ms", "value": 3, "spread": [2.95, 3.05],
   "baseline": 4, "baseline_spread": [3.98, 4.02], "higher_is_better": false, "repeats": 5,
   "goal": "ratio >= 2"},
  {"id": "why.noted", "what": "noted", "unit": "ms", "value": 3, "spread": [2.95, 3.05],
   "baseline": 4, "baseline_spread": [3.98, 4.02], "higher_is_better": false, "repeats": 5,
   "goal": "ratio >= 2", "note": "two threads on two CPUs"},
  {"id": "why.pairs", "what": "pairs", "unit": "IOPS", "value": 97, "spread": [96, 98],
   "baseline": 100, "higher_is_better": true, "repeats": 12, "ratio": 0.97,
   "pair_spread": [0.9, 1.05], "goal": "median ratio >= 0.98, no pair below 0.95",
   "met": false},
  {"id": "why.rounded", "what": "rounded", "unit": "IOPS", "value": 99, "spread": [98, 100],
   "baseline": 100, "higher_is_better": true, "repeats": 12, "ratio": 0.985,
   "pair_spread": [0.95, 1.06], "goal": "median ratio >= 0.98, no pair below 0.95",
   "met": false},
  {"id": "why.delta", "what": "delta", "unit": "ms", "value": 8.8, "spread": [8.1, 10],
   "baseline": 8.65, "higher_is_better": false, "repeats": 5, "goal": "delta <= 0.1",
   "delta_spread": [0.02, 0.3]},
  {"id": "why.delta_far", "what": "delta_far", "unit": "ms", "value": 9.25, "spread": [8.1, 10],
   "baseline": 8.65, "higher_is_better": false, "repeats": 5, "goal": "delta <= 0.1",
   "delta_spread": [0.55, 0.65]}], "series": {}}
J
printf 'one\tok\t1\tone --quick\tone\ntwo\tok\t2\ttwo --quick\ttwo\nthree\tnot built\t0\tthree\tbuild/three\n' \
  >"$d/run/status.tsv"
printf 'malloc\tok\t1\tm\tm\ncufile\tok\t1\tc\tc\n' >>"$d/run/status.tsv"
printf 'why\tok\t1\tw\tw\n' >>"$d/run/status.tsv"
python3 "$report" merge "$d/run"
printf '# Performance\n\nIntro kept.\n\n## Older section\n\nKept too.\n' >"$d/docs/performance.md"
python3 "$report" publish "$d/run" --docs "$d/docs"
python3 "$report" publish "$d/run" --docs "$d/docs"
python3 - "$d" <<'PY'
import glob, json, os, shutil, sys
d = sys.argv[1]
res = json.load(open(f"{d}/run/results.json"))
figs = {f["id"]: f for f in res["figures"]}
assert set(figs) == {"one.cycle", "one.lookup", "limits.memcpy", "malloc.loop64_ns",
                     "malloc.startup_ms", "cufile.pinned_host_buffer_dev_shm", "why.noisy",
                     "why.clear", "why.noted", "why.pairs", "why.rounded", "why.delta", "why.delta_far"}, figs.keys()
assert figs["malloc.loop64_ns"]["met"] is True and figs["malloc.startup_ms"]["met"] is False
assert figs["cufile.pinned_host_buffer_dev_shm"]["ratio"] == 2
assert figs["one.cycle"]["ratio"] == 5 and figs["one.cycle"]["met"] is True, figs["one.cycle"]
assert figs["one.lookup"]["met"] is False and figs["one.lookup"]["ratio"] is None
assert [b["status"] for b in res["benchmarks"]] == ["ok", "ok", "not built", "ok", "ok", "ok"]
for k in ("cpu", "cores", "kernel", "thp", "glibc", "date"):
    assert res["machine"].get(k) not in (None, ""), k
assert json.load(open(f"{d}/run/machine.json"))["cores"] >= 1
md = open(f"{d}/run/results.md").read()
rows = [l for l in md.splitlines() if l.startswith("| ")]
header = "| benchmark | figure | value | baseline | ratio | spread | goal | met? |"
assert header in md, md
assert all(l.count("|") == header.count("|") for l in rows[:5]), rows
assert "5.00x" in md and "**met**" in md and "**NOT met**" in md, md
assert "| three | - | not built (build/three missing)" in md, md
why = {l.split(":")[1].strip(): l for l in md.splitlines() if l.startswith("- **NOT met**")}
assert "Why: load-sensitive: short by 4.3%" in why["noisy"], why["noisy"]
assert "Why" not in why["clear"], why["clear"]
assert "Why: two threads on two CPUs" in why["noted"] and "load" not in why["noted"], why["noted"]
assert "Why: load-sensitive: short by 1.0%, less than the spread of its pairs" in why["pairs"], why["pairs"]
# A pair just under its floor, written rounded onto it.
assert "Why: load-sensitive: short by less than 0.1%" in why["rounded"], why["rounded"]
# A delta in its unit, against the spread of the per-round deltas; a delta
# goal without them (malloc.startup_ms above) is not judged.
assert "Why: load-sensitive: short by 0.05 ms" in why["delta"], why["delta"]
assert "Why" not in why["delta_far"], why["delta_far"]
assert "Why" not in why["startup"], why["startup"]
assert "Why" not in "".join(l for l in md.splitlines() if l.startswith("- **met**")), md
if shutil.which("gnuplot"):
    pngs = sorted(os.path.basename(p) for p in glob.glob(f"{d}/run/*.png"))
    assert pngs == ["io_throughput.png", "pin_throughput.png"], pngs
    for p in pngs:
        assert open(f"{d}/run/{p}", "rb").read(8) == b"\x89PNG\r\n\x1a\n", p
    day = res["date"][:10]
    assert os.path.exists(f"{d}/docs/perf/{day}-pin_throughput.png")
perf = open(f"{d}/docs/performance.md").read()
assert perf.startswith("# Performance\n") and "Intro kept." in perf and "Kept too." in perf, perf
assert perf.count("<!-- bench:begin -->") == 1 and perf.count("<!-- bench:end -->") == 1, perf
assert perf.index("<!-- bench:begin -->") < perf.index("Intro kept.") and header in perf, perf
print("report: ok")
PY
