#!/usr/bin/env python3
"""Markdown tables of stock against patched, from the JSON that
harness/compare.sh collected: the capability probe, the blocking detector's
reads (ext4 and network filesystems) and its flagged writes (every local
filesystem, also as build/compare-write.json).

    compare-tables.py OUT_DIR READ_IOPS [WRITE_BPS]
"""
import json
import sys

out, iops = sys.argv[1], sys.argv[2]
wbps = int(sys.argv[3]) if len(sys.argv) > 3 else 0
kernels = ("stock", "patched")


def load(kind):
    """Both kernels' JSON of one kind; None when a file is missing (a run made
    before that kind existed, or one that left it out): its tables are skipped."""
    try:
        res = {}
        for k in kernels:
            with open(f"{out}/{kind}-{k}.json") as f:
                res[k] = json.load(f)
        return res
    except FileNotFoundError as e:
        print(f"compare-tables: no {e.filename}: its tables left out", file=sys.stderr)
        return None


def us(v):
    return "-" if v is None else f"{v:.0f}"


def probe_tables(probe):
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


def read_tables(block):
    print(f"\n### Flagged 16 KiB reads on fragmented ext4, disk throttled to {iops} reads/s\n")
    print("| kernel | phase | calls | hits | EAGAIN | calls that slept | miss p50 µs "
          "| miss p99 µs | miss max µs | hit p50 µs | hit p99 µs |")
    print("|---" * 11 + "|")
    for k in kernels:
        for ph in block[k]["phases"]:
            m, h = ph["eagain_us"], ph["hit_us"]
            print(f"| {k} | {ph['name']} | {ph['calls']} | {ph['hits']} | {ph['eagain']} | "
                  f"**{ph['slept']}** | {us(m['p50'])} | {us(m['p99'])} | {us(m['max'])} | "
                  f"{us(h['p50'])} | {us(h['p99'])} |")

    replay = {k: next((ph["hits"] for ph in block[k]["phases"] if ph["name"] == "replay"), None)
              for k in kernels}
    if None not in replay.values() and replay["stock"]:
        print(f"\nThe cold phase's offsets read again with the flag after the settle time "
              f"(replay): patched hits {replay['patched']}, stock {replay['stock']}, "
              f"ratio **{replay['patched'] / replay['stock']:.2f}** (goal: at least 0.90, "
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


def netfs_tables(netfs):
    print(f"\n### Flagged 16 KiB reads on network filesystems, slow server "
          f"(its disk at {iops} reads/s; nfs, cifs and ceph also 50 ms netem delay)\n")
    print("| filesystem | kernel | phase | calls | hits | EAGAIN | calls that slept | miss p99 µs "
          "| hit p99 µs |")
    print("|---" * 9 + "|")
    for fs in ("nfs3", "nfs4", "cifs", "fuse", "9p", "ocfs2", "ceph"):
        for k in kernels:
            if fs not in netfs[k]:
                print(f"| {fs} | {k} | - | RWF_NOWAIT refused (EOPNOTSUPP) or not mounted "
                      "| | | | | |")
                continue
            for ph in netfs[k][fs]["phases"]:
                m, h = ph["eagain_us"], ph["hit_us"]
                print(f"| {fs} | {k} | {ph['name']} | {ph['calls']} | {ph['hits']} | "
                      f"{ph['eagain']} | **{ph['slept']}** | {us(m['p99'])} | {us(h['p99'])} |")


LOCAL_FS = ("ext4", "xfs", "btrfs", "tmpfs", "vfat", "exfat", "ext2", "ovl", "ovl-tmpfs")


def pressure(ph):
    """Share of the dirty samples over the freerun line, across phases; None with
    fewer than 10 (phases refused at once), or from a run that did not count them."""
    n = sum(p.get("pressure_samples", 0) for p in ph)
    over = sum(p.get("pressure_over", 0) for p in ph)
    return round(100 * over / n, 1) if n >= 10 else None


def wsum(r):
    """One filesystem's three write phases, added up."""
    ph = r["phases"]
    s = {key: sum(p[key] for p in ph)
         for key in ("calls", "written", "short", "eagain", "other", "slept")}
    s["by_phase"] = {p["name"]: p["written"] for p in ph}
    s["other_errno"] = sorted({p["other_errno"] for p in ph if p["other_errno"]})
    p50 = [p["written_us"]["p50"] for p in ph if p["written_us"]["p50"] is not None]
    p99 = [p["written_us"]["p99"] for p in ph if p["written_us"]["p99"] is not None]
    s["written_p50_us"] = max(p50) if p50 else None
    s["written_p99_us"] = max(p99) if p99 else None
    s["pressure_pct"] = pressure(ph)
    return s


def other(n, errnos):
    return f"{n} ({', '.join(errnos)})" if n else "0"


def pct(v):
    return "-" if v is None else f"{v:.0f}%"


def write_cells(r):
    """One filesystem's write phases and cost rounds as table cells."""
    s = wsum(r)
    bp = s["by_phase"]
    c = r["cost"]
    if c["ratio_median"] is None:
        cost = f"refused ({c['refused'] or 'no flagged write succeeded'})"
    else:
        cost = (f"{c['ratio_median']:.2f} ({c['ratio_min']:.2f}–{c['ratio_max']:.2f}, "
                f"{c['valid_rounds']} rounds)")
    return {"calls": str(s["calls"]),
            "written": f"{s['written']} ({bp.get('overwrite', 0)} / {bp.get('append', 0)} / "
                       f"{bp.get('extend', 0)})",
            "short": str(s["short"]), "eagain": str(s["eagain"]),
            "other": other(s["other"], s["other_errno"]), "slept": str(s["slept"]),
            "p50": us(s["written_p50_us"]), "p99": us(s["written_p99_us"]),
            "pressure": pct(s["pressure_pct"]),
            "cost": cost, "plain": us(c["plain_p50_us"]), "flagged": us(c["flagged_p50_us"])}


def log_cells(lg):
    """One filesystem's logger run as table cells."""
    c = lg["calls"]
    return {"records": f"{c['calls']} in {lg['seconds']:.0f} s",
            "inline": f"{lg['inline_pct']:.1f}%",
            "eagain": str(c["eagain"]),
            "other": other(c["other"], [c["other_errno"]] if c["other_errno"] else []),
            "slept": str(c["slept"]), "p99": us(c["written_us"]["p99"]),
            "pressure": pct(pressure([c]))}


def arrow_table(head, rows, keys):
    """One row a filesystem, each cell stock → patched (one value where they agree);
    rows[fs][kernel] is None where that kernel's run has no such filesystem."""
    print("| filesystem | " + " | ".join(head) + " |")
    print("|---" * (len(head) + 1) + "|")
    for fs, cells in rows.items():
        row = []
        for key in keys:
            a, b = (("-" if cells[k] is None else cells[k][key]) for k in kernels)
            row.append(a if a == b else f"{a} → **{b}**")
        print(f"| {fs} | " + " | ".join(row) + " |")


def write_tables(wr):
    wfs = [fs for fs in LOCAL_FS if any(fs in wr[k] for k in kernels)]
    if not wfs:
        return
    run = next(wr[k][fs] for k in ("patched", "stock") for fs in wfs if fs in wr[k])
    cells = {fs: {k: write_cells(wr[k][fs]) if fs in wr[k] else None for k in kernels}
             for fs in wfs}
    logs = {fs: {k: log_cells(wr[k][fs]["log"]) if fs in wr[k] else None for k in kernels}
            for fs in wfs}

    disk = f", disk writes at {wbps >> 20} MiB/s" if wbps else ""
    print(f"\n### Flagged 16 KiB writes under dirty pressure, stock → patched (vm.dirty_bytes "
          f"{run['dirty_bytes'] >> 20} MiB, another process writing{disk})\n")
    arrow_table(["calls", "written (overwrite / append / extend)", "short", "EAGAIN", "other",
                 "calls that slept", "written p50 µs", "written p99 µs", "dirty pressure"], cells,
                ["calls", "written", "short", "eagain", "other", "slept", "p50", "p99", "pressure"])
    print("\nThe latency columns are the highest of the three phases'; dirty pressure is the share "
          "of 10 ms samples of /proc/vmstat, during the phases, with dirty + writeback pages at or "
          "over balance_dirty_pages()' freerun line (where writers start to be throttled); - where "
          "the phases were over in less than 0.1 s (refused at once).")

    print("\n### The cost of a flagged 16 KiB overwrite that succeeds, stock → patched\n")
    arrow_table(["flagged / plain p50: median of rounds (min–max)", "plain p50 µs",
                 "flagged p50 µs"], cells, ["cost", "plain", "flagged"])
    print(f"\nEach round: {run['cost']['pairs']} pairs of a plain and a flagged pwritev2() "
          "of 16 KiB over cached data, which first alternating, before the dirty pressure starts; "
          "the ratio of the two medians. A pair whose flagged call did not write all is left out, "
          "and a round with fewer than half its pairs has no ratio.")

    lr = run["log"]
    print(f"\n### A logger: 4 KiB O_APPEND records, {lr['rate']}/s for "
          f"{lr['calls']['calls'] // lr['rate']} s, under dirty pressure, stock → patched\n")
    arrow_table(["records", "written inline by the flagged call", "EAGAIN", "other",
                 "calls that slept", "inline p99 µs", "dirty pressure"], logs,
                ["records", "inline", "eagain", "other", "slept", "p99", "pressure"])
    print("\nWhat the flagged call did not write (EAGAIN, EOPNOTSUPP, a short write) went to a "
          "thread that wrote it blocking, as a logger's would. A run that took longer than "
          f"{lr['calls']['calls'] // lr['rate']} s could not keep the rate (a starved guest).")

    summary = {fs: {k: None if fs not in wr[k] else
                    dict(wsum(wr[k][fs]), cost=wr[k][fs]["cost"], log=wr[k][fs]["log"])
                    for k in kernels} for fs in wfs}
    took = [fs for fs in wfs if (summary[fs]["patched"] or {}).get("written")]
    if took:
        print("\nPatched, the filesystems that took flagged writes: " + ", ".join(
            f"{fs} {summary[fs]['patched']['slept']} slept in {summary[fs]['patched']['calls']}"
            for fs in took) + " (goal: 0 in at least 10,000 each).")
    with open(f"{out}/compare-write.json", "w") as f:
        json.dump({"release": {k: next(iter(wr[k].values()))["release"] if wr[k] else None
                               for k in kernels},
                   "dirty_bytes": run["dirty_bytes"], "write_bps": wbps or None,
                   "io_bytes": run["io_bytes"], "filesystems": summary}, f, indent=1)
        f.write("\n")


def median_range(vals, fmt):
    vals = sorted(vals)
    mid = vals[len(vals) // 2] if len(vals) % 2 else (vals[len(vals) // 2 - 1] + vals[len(vals) // 2]) / 2
    return f"{fmt.format(mid)} ({fmt.format(vals[0])}-{fmt.format(vals[-1])})"


def uring_tables(runs):
    """Cold buffered io_uring reads at queue depth (tools/nowait-uring-qd.c):
    medians of the repetitions, with their range."""
    print("\n### Cold buffered io_uring reads at queue depth: random 4 KiB, "
          "median (min-max) of the repetitions\n")
    print("| filesystem | QD | kernel | reads/s | latency p50 µs | p99 µs | submit p99 µs "
          "| submit max µs | submits that slept | io-wq workers | CPU µs/read |")
    print("|---" * 11 + "|")
    keys = sorted({(r["dir"], r["qd"]) for k in kernels for r in runs[k]})
    for d, qd in keys:
        for k in kernels:
            rs = [r for r in runs[k] if r["dir"] == d and r["qd"] == qd]
            if not rs:
                continue
            bad = sum(r["errors"] for r in rs)
            warm = sum(1 for r in rs if r["resident_pages"])
            note = (f" ({bad} errors)" if bad else "") + (f" ({warm} runs not cold)" if warm else "")
            print(f"| {d.removeprefix('/mnt/')} | {qd} | {k}{note} | "
                  + " | ".join(median_range([r[f] for r in rs], fmt) for f, fmt in (
                      ("reads_per_s", "{:.0f}"), ("lat_p50_us", "{:.0f}"), ("lat_p99_us", "{:.0f}"),
                      ("submit_p99_us", "{:.0f}"), ("submit_max_us", "{:.0f}"),
                      ("submits_slept", "{:.0f}"), ("iowq_peak", "{:.0f}"),
                      ("cpu_us_per_read", "{:.1f}"))) + " |")


def hostile_tables(runs):
    """The blocking detector's hostile phases: flagged calls that slept, per
    phase and filesystem, stock → patched."""
    print("\n### Flagged 16 KiB calls in hostile setups: done / EAGAIN / slept, stock → patched\n")
    print("| phase/filesystem | used % | read | overwrite | append |")
    print("|---" * 5 + "|")
    keys = sorted({key for k in kernels for key in runs[k]},
                  key=lambda x: (x.split("/")[0], x.split("/")[1]))
    for key in keys:
        cells = []
        for kind in ("read", "overwrite", "append"):
            parts = []
            for k in kernels:
                c = runs[k].get(key, {}).get("calls", {}).get(kind)
                parts.append("-" if c is None else f"{c['done']}/{c['eagain']}/{c['slept']}"
                             + (f" ({c['other']} {c['other_errno']})" if c["other"] else ""))
            cells.append(" → ".join(parts))
        used = runs["patched"].get(key, runs["stock"].get(key, {})).get("used_pct")
        thawed = [k for k in kernels if runs[k].get(key, {}).get("thawed_by_watchdog")]
        note = f" (thawed by the watchdog on {', '.join(thawed)})" if thawed else ""
        print(f"| {key}{note} | {used if used is not None else '-'} | " + " | ".join(cells) + " |")
    slept = sum(c["slept"] for r in runs["patched"].values() for c in r["calls"].values())
    calls = sum(c["calls"] for r in runs["patched"].values() for c in r["calls"].values())
    print(f"\nPatched: {slept} of {calls} flagged calls slept in the hostile phases (goal: 0).")


for kind, tables in (("probe", probe_tables), ("blockstat", read_tables),
                    ("blockstat-netfs", netfs_tables), ("blockstat-write", write_tables),
                    ("uring-qd", uring_tables), ("blockstat-hostile", hostile_tables)):
    runs = load(kind)
    if runs:
        tables(runs)
