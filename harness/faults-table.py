#!/usr/bin/env python3
"""The table and JSON of make faults, from a guest console.

    harness/faults-table.py CONSOLE_LOG OUT_JSON

nowait_faults prints one line per filesystem, path and phase:
    # faults FS PATH PHASE calls=N injected=N bad=N [data=N short=N ...] [note=...]
after "nowait-test: begin nowait_faults.ABI". Prints a table with a row per
filesystem, path and phase (the two ABIs side by side) and the totals, and
writes every row to OUT_JSON.
"""
import json
import re
import sys

log, out = sys.argv[1], sys.argv[2]
rows = []
leaks = []
abi = None
with open(log, errors="replace") as f:
    for line in f:
        line = line.rstrip("\r\n")
        m = re.match(r"nowait-test: begin nowait_faults\.(\w+)", line)
        if m:
            abi = m.group(1)
            continue
        if line.startswith("nowait-test: end"):
            abi = None
            continue
        if abi is None:
            continue
        m = re.match(r"# faults (\S+) kmemleak leaks=(-?\d+)", line)
        if m:
            leaks.append({"abi": abi, "fs": m.group(1), "leaks": int(m.group(2))})
            continue
        m = re.match(r"# faults (\S+) (\S+) (caller|worker) (.*)", line)
        if not m:
            continue
        row = {"abi": abi, "fs": m.group(1), "path": m.group(2), "phase": m.group(3)}
        for kv in m.group(4).split():
            k, _, v = kv.partition("=")
            row[k] = int(v) if re.fullmatch(r"-?\d+", v) else v
        rows.append(row)

with open(out, "w") as f:
    json.dump({"rows": rows, "kmemleak": leaks}, f, indent=1)
    f.write("\n")

# One line per fs/path/phase; each ABI's calls/injected/bad side by side.
abis = sorted({r["abi"] for r in rows})
keyed = {}
for r in rows:
    keyed.setdefault((r["fs"], r["path"], r["phase"]), {})[r["abi"]] = r
head = f"{'filesystem':<10} {'path':<18} {'phase':<7}"
for a in abis:
    head += f" | {a + ' calls':>12} {'injected':>8} {'bad':>4} {'outcomes (data/short/EAGAIN/ENOMEM)':>36}"
print(head)
print("-" * len(head))
for (fs, path, phase), per in keyed.items():
    line = f"{fs:<10} {path:<18} {phase:<7}"
    for a in abis:
        r = per.get(a)
        if r is None:
            line += f" | {'-':>12} {'-':>8} {'-':>4} {'':>36}"
            continue
        if "note" in r and str(r["note"]).startswith("n/a"):
            outc = r["note"]
        elif "data" in r:
            outc = f"{r['data']}/{r['short']}/{r['eagain']}/{r['enomem']}"
            if r.get("mtime_moved"):
                outc += f" (mtime moved {r['mtime_moved']})"
            if r.get("note"):
                outc += f" {r['note']}"
        else:
            outc = ""
        line += f" | {r['calls']:>12} {r['injected']:>8} {r['bad']:>4} {outc:>36}"
    print(line)
# Per filesystem, both ABIs summed: caller paths, worker windows, disk errors.
print()
print(f"{'filesystem':<10} | {'caller: calls':>13} {'injected':>8} {'bad':>4} | "
      f"{'worker: windows':>15} {'injected':>8} {'bad':>4} | {'eio: calls':>10} {'bad':>4}")
fss = []
for r in rows:
    if r["fs"] not in fss:
        fss.append(r["fs"])
for fs in fss:
    def tot(pred, key):
        return sum(r[key] for r in rows if r["fs"] == fs and pred(r))
    caller = lambda r: r["phase"] == "caller"
    worker = lambda r: r["phase"] == "worker" and not r["path"].startswith("eio_")
    eio = lambda r: r["path"].startswith("eio_")
    print(f"{fs:<10} | {tot(caller, 'calls'):>13} {tot(caller, 'injected'):>8} {tot(caller, 'bad'):>4} | "
          f"{tot(worker, 'calls'):>15} {tot(worker, 'injected'):>8} {tot(worker, 'bad'):>4} | "
          f"{tot(eio, 'calls'):>10} {tot(eio, 'bad'):>4}")
print()
for a in abis:
    sel = [r for r in rows if r["abi"] == a]
    print(f"total {a}: {sum(r['calls'] for r in sel)} calls, "
          f"{sum(r['injected'] for r in sel)} failures injected, "
          f"{sum(r['bad'] for r in sel)} bad outcomes "
          f"({len({r['fs'] for r in sel})} filesystems, {len(sel)} rows)")
if leaks:
    print("kmemleak: " + ", ".join(f"{l['fs']}.{l['abi']} {l['leaks']}" for l in leaks))
else:
    print("kmemleak: not checked (make faults-debug checks it, on the debug kernel)")
