#!/usr/bin/env python3
"""The table of harness/cost.sh: instructions per cached 16 KiB call, stock
against patched, from the boots' JSON (cost-KERNEL-BOOT.json in OUT).
Writes OUT/cost.json and prints markdown.

Per kernel, a cell's figure is the median over its boots of each boot's
median over its loops. "boots" is the largest spread, (max - min) / median,
of either kernel's per-boot figures; "loops" the largest spread of the
loops within one boot. Unflagged rows (pread, pwrite) meet the goal when
patched is within 1% of stock. TCG counts each byte of a "rep movsb" as one
instruction, so a 16 KiB copy is about 16384 of each call's: "ratio
beyond the copy" takes the guest's measured 16 KiB rep movsb off both
sides, the stricter view of what the series adds."""
import glob
import json
import re
import statistics
import sys

out = sys.argv[1]
kernels = ("stock", "patched")
GOAL = 1.01
OPS = {"pread": "plain pread", "nowait": "flagged preadv2 hit", "pwrite": "plain pwrite overwrite",
       "getppid": "getppid (control)"}

runs = {k: [] for k in kernels}
for path in sorted(glob.glob(f"{out}/cost-*-*.json")):
    m = re.search(r"cost-(stock|patched)-(\d+)\.json$", path)
    if m:
        with open(path) as f:
            runs[m.group(1)].append(json.load(f))
for k in kernels:
    if not runs[k]:
        sys.exit(f"cost-table: no {k} boots in {out}")


def spread(v):
    """None for one boot: nothing to compare it with."""
    return (max(v) - min(v)) / statistics.median(v) if len(v) > 1 else None


def version(k):
    try:
        with open(f"{out}/{k}/version") as f:
            return f.read().strip()
    except OSError:
        return runs[k][0]["kernel"]


allruns = runs["stock"] + runs["patched"]
copy = statistics.median(r["rep_movsb_16k"] for r in allruns)
keys = [(c["fs"], c["op"]) for c in runs["stock"][0]["cells"]]
rows = []
for fs, op in keys:
    row = {"fs": fs, "op": op, "unflagged": op in ("pread", "pwrite")}
    loops = 0.0
    for k in kernels:
        cells = [c for r in runs[k] for c in r["cells"] if (c["fs"], c["op"]) == (fs, op)]
        errors = sorted({c["error"] for c in cells if "error" in c})
        if errors:
            row[k] = None
            row[k + "_error"] = "/".join(errors)
            continue
        per_boot = [c["insn_per_call"] for c in cells]
        row[k] = statistics.median(per_boot)
        row[k + "_boots"] = per_boot
        row[k + "_spread_boots"] = spread(per_boot)
        loops = max([loops] + [c["spread"] for c in cells])
    row["spread_loops"] = loops
    if row["stock"] and row["patched"]:
        row["ratio"] = row["patched"] / row["stock"]
        row["delta"] = row["patched"] - row["stock"]
        if op != "getppid":
            row["ratio_beyond_copy"] = (row["patched"] - copy) / (row["stock"] - copy)
        if len(runs["stock"]) > 1 and len(runs["patched"]) > 1:
            row["spread_boots"] = max(row["stock_spread_boots"], row["patched_spread_boots"])
        if row["unflagged"]:
            row["within_goal"] = row["ratio"] <= GOAL
    rows.append(row)

calib = [x for r in allruns for x in r["ns_per_insn"]]
lin = [c["linearity"] for r in allruns for c in r["cells"] if "linearity" in c]
summary = {
    "kernels": {k: version(k) for k in kernels},
    "boots": {k: len(runs[k]) for k in kernels},
    "calls": runs["stock"][0]["calls"], "reps": runs["stock"][0]["reps"],
    "clocksource": sorted({r["clocksource"] for r in allruns}),
    "ns_per_known_insn": [min(calib), max(calib)],
    "linearity_2n_over_n": [min(lin), max(lin)],
    "rep_movsb_16k": copy,
    "goal": "unflagged ratio <= %.2f" % GOAL,
    "rows": rows,
}
with open(f"{out}/cost.json", "w") as f:
    json.dump(summary, f, indent=1)
    f.write("\n")


def cell(row, k):
    return f"{row[k]:.0f}" if row[k] is not None else row[k + "_error"]


print("### Instructions per cached 16 KiB call, stock → patched\n")
for k in kernels:
    print(f"- {k}: {summary['kernels'][k]}; {summary['boots'][k]} boots")
print(f"- {summary['calls']} calls per loop, {summary['reps']} loops per boot (median), "
      f"clocksource {', '.join(summary['clocksource'])}")
print(f"- check of the count: a loop of known instructions read {min(calib):.4f} to {max(calib):.4f} "
      f"ns per instruction (1: icount; above 1 by the interrupts it took); a loop of 2N calls "
      f"cost {min(lin):.4f} to {max(lin):.4f} times a loop of N")
print(f"- a 16 KiB rep movsb counts as {copy:.0f} instructions under TCG: that much of each "
      f"call is its copy, the same on both kernels\n")
print("| fs | call | stock | patched | patched − stock | ratio | ratio beyond the copy "
      "| spread (boots) | spread (loops) | goal ≤ 1% |")
print("|---" * 10 + "|")
for row in rows:
    ratio = f"{row['ratio']:.4f}" if "ratio" in row else "-"
    delta = f"{round(row['delta']):+d}" if "delta" in row else "-"
    beyond = f"{row['ratio_beyond_copy']:.4f}" if "ratio_beyond_copy" in row else "-"
    boots = f"{100 * row['spread_boots']:.2f}%" if "spread_boots" in row else "-"
    goal = ("ok" if row["within_goal"] else "**missed**") if "within_goal" in row else "-"
    print(f"| {row['fs']} | {OPS[row['op']]} | {cell(row, 'stock')} | {cell(row, 'patched')} | "
          f"{delta} | {ratio} | {beyond} | {boots} | {100 * row['spread_loops']:.2f}% | {goal} |")
missed = [f"{r['fs']} {r['op']}" for r in rows if r.get("within_goal") is False]
print("\nUnflagged paths: " + ("all within 1% of stock." if not missed
                              else "over 1% on " + ", ".join(missed) + "."))
