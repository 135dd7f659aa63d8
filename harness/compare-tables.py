#!/usr/bin/env python3
"""Markdown tables of stock against patched, from the JSON that
harness/compare.sh collected: the capability probe and the blocking
detector."""
import json
import sys

out, iops = sys.argv[1], sys.argv[2]
kernels = ("stock", "patched")


def load(kind, name):
    with open(f"{out}/{kind}-{name}.json") as f:
        return json.load(f)


probe = {k: load("probe", k) for k in kernels}
cols = [("read_hit", "read hit"), ("read_miss", "read miss"), ("write", "write"),
        ("odirect_read", "O_DIRECT read"), ("odirect_write", "O_DIRECT write")]
print(f"### RWF_NOWAIT per target, stock → patched ({probe['stock']['kernel']}, "
      f"{probe['patched']['kernel']})\n")
print("| target | " + " | ".join(c[1] for c in cols) + " |")
print("|---" * (len(cols) + 1) + "|")
stock = {t["label"]: t for t in probe["stock"]["targets"]}
patched = {t["label"]: t for t in probe["patched"]["targets"]}
labels = [t["label"] for t in probe["stock"]["targets"]]
labels += [t["label"] for t in probe["patched"]["targets"] if t["label"] not in stock]
for label in labels:
    t, p = stock.get(label, {}), patched.get(label, {})
    cells = []
    for key, _ in cols:
        a = t.get(key, {}).get("text", "-")
        b = p.get(key, {}).get("text", "-")
        cells.append(a if a == b else f"{a} → **{b}**")
    print(f"| {label} | " + " | ".join(cells) + " |")

print(f"\n### Flagged 16 KiB reads on fragmented ext4, disk throttled to {iops} reads/s\n")
print("| kernel | phase | calls | hits | EAGAIN | calls that slept | miss p50 µs | miss p99 µs "
      "| miss max µs | hit p50 µs | hit p99 µs |")
print("|---" * 11 + "|")


def us(v):
    return "-" if v is None else f"{v:.0f}"


block = {k: load("blockstat", k) for k in kernels}
for k in kernels:
    for ph in block[k]["phases"]:
        m, h = ph["eagain_us"], ph["hit_us"]
        print(f"| {k} | {ph['name']} | {ph['calls']} | {ph['hits']} | {ph['eagain']} | "
              f"**{ph['slept']}** | {us(m['p50'])} | {us(m['p99'])} | {us(m['max'])} | "
              f"{us(h['p50'])} | {us(h['p99'])} |")



def replay_hits(k):
    return next((ph["hits"] for ph in block[k]["phases"] if ph["name"] == "replay"), None)


if None not in (replay_hits("stock"), replay_hits("patched")) and replay_hits("stock"):
    print(f"\nThe cold phase's offsets read again with the flag after the settle time "
          f"(replay): patched hits {replay_hits('patched')}, stock {replay_hits('stock')}, "
          f"ratio **{replay_hits('patched') / replay_hits('stock'):.2f}** (goal: at least 0.90, "
          f"the readahead a miss hands off is done).")

print("\n### Does the miss help the blocking retry? (16 KiB pread after drop_caches, µs)\n")
print("| kernel | cold pread p50 | flagged miss p50 | pread right after the miss p50 "
      "| pread 1 ms after the miss p50 | ratio (1 ms) to cold |")
print("|---" * 6 + "|")
for k in kernels:
    r = block[k]["retry"]
    print(f"| {k} | {us(r['cold_us']['p50'])} | {us(r['flagged_miss_us']['p50'])} | "
          f"{us(r['after_miss_us']['p50'])} | {us(r['after_miss_1ms_us']['p50'])} | "
          f"{r['ratio_1ms_p50']:.2f} |")

print("\n### Cold buffered io_uring reads: sleeps inside the submitting io_uring_enter()\n")
print("| kernel | reads | completed in submit | by io-wq | submits that slept "
      "| submit p50 µs | submit p99 µs | submit max µs |")
print("|---" * 8 + "|")
for k in kernels:
    u = block[k].get("uring")
    if u is None:
        continue
    s = u["submit_us"]
    print(f"| {k} | {u['calls']} | {u['in_submit']} | {u['by_worker']} | **{u['slept']}** | "
          f"{us(s['p50'])} | {us(s['p99'])} | {us(s['max'])} |")


netfs = {k: load("blockstat-netfs", k) for k in kernels}
print(f"\n### Flagged 16 KiB reads on network filesystems, slow server "
      f"(its disk at {iops} reads/s; nfs, cifs and ceph also 50 ms netem delay)\n")
print("| filesystem | kernel | phase | calls | hits | EAGAIN | calls that slept | miss p99 µs "
      "| hit p99 µs |")
print("|---" * 9 + "|")
for fs in ("nfs3", "nfs4", "cifs", "fuse", "9p", "ocfs2", "ceph"):
    for k in kernels:
        if fs not in netfs[k]:
            print(f"| {fs} | {k} | - | RWF_NOWAIT refused (EOPNOTSUPP) or not mounted | | | | | |")
            continue
        for ph in netfs[k][fs]["phases"]:
            m, h = ph["eagain_us"], ph["hit_us"]
            print(f"| {fs} | {k} | {ph['name']} | {ph['calls']} | {ph['hits']} | {ph['eagain']} | "
                  f"**{ph['slept']}** | {us(m['p99'])} | {us(h['p99'])} |")
