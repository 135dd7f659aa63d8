#!/usr/bin/env python3
"""Markdown table of nowait-bench in the guest, stock against patched, from
the JSON that harness/bench-guest.sh collected.

    bench-guest-table.py OUTDIR IOPS TARGET...
"""
import json
import sys

out, iops, targets = sys.argv[1], sys.argv[2], sys.argv[3:]
labels = {
    "tmpfs": "tmpfs (all cached)",
    "ovl": f"overlayfs, lower on xfs ({iops} reads/s)",
    "ext4": f"ext4, fragmented ({iops} reads/s)",
    "ext4-saturate": f"ext4, fragmented, saturated ({iops} reads/s)",
}


def us(v):
    return f"{v:.0f}" if v >= 10 else f"{v:.1f}"


runs = {}
for kernel in ("stock", "patched"):
    for fs in targets:
        with open(f"{out}/guest-{kernel}-{fs}.json") as f:
            runs[kernel, fs] = json.load(f)

first = runs["stock", targets[0]]
w = first["workload"]
print(f"### nowait-bench in the guest ({first['system']['kernel']}), stock tree against patched\n")
print(f"MiB {w['mib'][0]}/{w['mib'][1]}/{w['mib'][2]} (f1/f2/f3), {w['duration_s']:.0f} s per run, "
      f"{first['summary']['reps']} runs per mode (the row is the run with the median mix mean), "
      f"pool {w['threads']} threads, QEMU TCG, 2 vCPUs. Latency in µs from the scheduled arrival.\n")
for fs in targets:
    for kernel in ("stock", "patched"):
        rw = runs[kernel, fs]["workload"]
        ext = rw.get("extents")
        if ext and ext[1] >= 0:
            print(f"- {fs}, {kernel}: extents by FIEMAP f1 {ext[0]}, f2 {ext[1]}, f3 {ext[2]}"
                  + (f"; cold f2 reads added at {rw['saturate_rate']:.0f}/s" if rw.get("saturate_rate") else ""))
print()
print("| filesystem | kernel | req/s | mode | f1 p50 | f1 p99 | mix p50 | mix mean | mean vs pool "
      "| f1 inline hits | EOPNOTSUPP fallbacks | max in flight |")
print("|---" * 12 + "|")
for fs in targets:
    for kernel in ("stock", "patched"):
        r = runs[kernel, fs]
        for mode, m in r["modes"].items():
            f1, mix = m["classes"]["f1"], m["classes"]["all"]
            lib = f1.get("lib")
            vs = mix.get("mean_vs_pool")
            hits = lib["hits"] if lib and mode != "pool" else "-"
            eop = sum(m["classes"][c].get("lib", {}).get("fb_eopnotsupp", 0)
                      for c in ("f1", "f2", "f3")) if lib and mode != "pool" else "-"
            print(f"| {labels[fs]} | {kernel} | {r['workload']['rate']:.0f} | {mode} "
                  f"| {us(f1['lat']['p50_us'])} | {us(f1['lat']['p99_us'])} "
                  f"| {us(mix['lat']['p50_us'])} | {us(mix['lat']['mean_us'])} "
                  f"| {'-' if vs is None or mode == 'pool' else f'{vs:.2f}'} | {hits} | {eop} "
                  f"| {m['max_inflight']} |")
