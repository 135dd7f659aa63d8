#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Turns serve/bench.sh's runs into bench.txt, bench.json and bench.png.

    bench-report.py --runs RUNS --out OUT [--setup TEXT]
    bench-report.py --guest DIR [--setup TEXT]

--guest: harness/serve-bench-guest.sh's results, DIR/KERNEL/results/serve/FS/
(runs/, setup.txt, or "skipped" with the reason) for the kernels stock and
patched: one table with stock and patched side by side per filesystem and
mode, the target ratios per kernel and filesystem, as
DIR/serve-bench-guest.{md,json,png} (the PNG: a CDF panel per filesystem
and kernel), and each run set's own bench.{txt,json,png} beside its runs.

The first table (nowait-serve's modes only) is the server's own
per-request service time (request parsed to last byte handed to the
socket), split by whether the requested bytes were all in the page cache
when the request arrived (cachestat(2), logged by the server): "hit" and
"miss". The second puts every server, nginx included, on the client's
figures: wrk's requests/s and latency percentiles (closed loop), the open
loop of serve/pace.py (latency from the time a request was due, hit or miss
by the client's own cachestat just before sending it), and the CPU time
of the server's processes per request in each. Each figure is the median
over repetitions with the min-max spread; each target ratio is computed
within one repetition (same load, runs minutes apart) and then summarized
the same way.
"""
import argparse
import json
import os
import statistics
import subprocess

MODES = ["pool", "adaptive", "io_uring", "sendfile", "nginx-https", "nginx-aio", "nginx-http"]
NOWAIT_MODES = MODES[:4]


def pct(sorted_vals, p):
    if not sorted_vals:
        return None
    i = min(len(sorted_vals) - 1, int(p / 100.0 * len(sorted_vals)))
    return sorted_vals[i]


def load_client(runs, rep, mode, conns, cpu_ms, open_cpu_ms):
    """The client's figures of one run: wrk's zipf-lua line, pace.py's JSON."""
    tag = f"{mode}-c{conns}-r{rep}"
    r = {}
    try:
        with open(os.path.join(runs, tag + ".wrk")) as f:
            for line in f:
                if line.startswith("zipf-lua:"):
                    w = line.split()[1:]
                    v = {w[i]: int(w[i + 1]) for i in range(0, len(w) - 1, 2)}
                    r["req_per_s"] = v["requests"] / (v["duration_us"] / 1e6)
                    for k in ("p50_us", "p99_us", "p999_us"):
                        r[k] = float(v[k])
                    r["errors"] = v["errors"] + v["non2xx"]
                    r["cpu_us_per_req"] = cpu_ms * 1000.0 / v["requests"] if v["requests"] else None
    except OSError:
        pass
    try:
        with open(os.path.join(runs, tag + ".open")) as f:
            o = json.load(f)
        for k in ("p50_us", "p99_us", "p999_us", "hit_p50_us", "hit_p99_us", "hit_p999_us",
                  "miss_p50_us", "miss_p99_us", "pacer_late_p99_us", "completed_per_s"):
            r["open_" + k] = o.get(k)
        r["open_errors"] = o["errors"] + o["non_2xx"] + o["unfinished"]
        r["open_hit_pct"] = 100.0 * o["hits"] / max(1, o["hits"] + o["misses"])
        r["open_cpu_us_per_req"] = (open_cpu_ms * 1000.0 / o["completed"]
                                    if o["completed"] and open_cpu_ms is not None else None)
    except (OSError, ValueError, KeyError):
        pass
    return r


def load_run(runs, rep, mode, conns, t0, t1, cpu_ms):
    lat = {"hit": [], "miss": []}
    inline_hits = requests = body = 0
    with open(os.path.join(runs, f"{mode}-c{conns}-r{rep}.log")) as f:
        for line in f:
            if line.startswith("#"):
                continue
            start, service, _data, status, nbytes, cached, _ri, _rq, how = line.split()
            if not t0 <= int(start) <= t1 or status not in ("200", "206"):
                continue
            requests += 1
            body += int(nbytes)
            if cached == "-1":
                continue
            cls = "hit" if cached == "1" else "miss"
            lat[cls].append(int(service) / 1000.0)
            inline_hits += cls == "hit" and how == "inline"
    seconds = (t1 - t0) / 1e9
    r = {"requests": requests, "req_per_s": requests / seconds,
         "mib_per_s": body / seconds / 2**20, "cpu_s_per_s": cpu_ms / 1000.0 / seconds,
         "cpu_us_per_req": cpu_ms * 1000.0 / requests if requests else None,
         "hits": len(lat["hit"]), "misses": len(lat["miss"]),
         "hit_pct": 100.0 * len(lat["hit"]) / max(1, len(lat["hit"]) + len(lat["miss"])),
         "hits_inline_pct": 100.0 * inline_hits / max(1, len(lat["hit"]))}
    for cls in ("hit", "miss"):
        v = sorted(lat[cls])
        for p, name in ((50, "p50"), (99, "p99"), (99.9, "p999")):
            r[f"{cls}_{name}_us"] = pct(v, p)
    return r, lat


def summary(values):
    values = [v for v in values if v is not None]
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "n": len(values)}


def fmt(s, unit=""):
    if s is None:
        return "-"
    m, lo, hi = s["median"], s["min"], s["max"]
    digits = 0 if m >= 100 else 1 if m >= 10 else 2
    if s["n"] == 1:
        return f"{m:.{digits}f}{unit}"
    return f"{m:.{digits}f}{unit} [{lo:.{digits}f}-{hi:.{digits}f}]"


METRICS = ["req_per_s", "mib_per_s", "hit_pct", "hits_inline_pct",
           "hit_p50_us", "hit_p99_us", "hit_p999_us",
           "miss_p50_us", "miss_p99_us", "miss_p999_us", "cpu_s_per_s", "cpu_us_per_req"]


PEER_METRICS = ["req_per_s", "p50_us", "p99_us", "p999_us", "cpu_us_per_req", "errors",
                "open_completed_per_s", "open_p50_us", "open_p99_us", "open_p999_us",
                "open_hit_pct", "open_hit_p50_us", "open_hit_p99_us", "open_hit_p999_us",
                "open_miss_p50_us", "open_miss_p99_us",
                "open_cpu_us_per_req", "open_pacer_late_p99_us", "open_errors"]


def collect(runs_dir):
    """{(mode, conns): {rep: result}} of the server logs (nowait-serve's
    modes), the same of the client's figures (every mode), {(mode, cls):
    latencies at the largest connection count}, that count."""
    runs, client, cdf = {}, {}, {}
    with open(os.path.join(runs_dir, "index")) as f:
        index = [line.split() for line in f if line.strip()]
    top_conns = max(int(x[2]) for x in index)
    for fields in index:
        rep, mode, conns, t0, t1, cpu_ms = fields[:6]
        open_cpu = int(fields[8]) if len(fields) > 8 and fields[8] != "-" else None
        client.setdefault((mode, int(conns)), {})[int(rep)] = load_client(
            runs_dir, rep, mode, conns, int(cpu_ms), open_cpu)
        if mode not in NOWAIT_MODES:
            continue
        r, lat = load_run(runs_dir, rep, mode, conns, int(t0), int(t1), int(cpu_ms))
        runs.setdefault((mode, int(conns)), {})[int(rep)] = r
        if int(conns) == top_conns:
            for cls in lat:
                cdf.setdefault((mode, cls), []).extend(lat[cls])
    return runs, client, cdf, top_conns


def summaries(runs, metrics=METRICS):
    """[(conns, mode, {metric: summary})] in table order."""
    conns_list = sorted({c for _, c in runs})
    modes = [m for m in MODES if any(m == mm for mm, _ in runs)]
    return [(c, m, {k: summary([r.get(k) for r in runs[(m, c)].values()]) for k in metrics})
            for c in conns_list for m in modes if runs.get((m, c))]


def ratio_targets(runs):
    """A list of targets and target(c, num, den, metric, what, threshold,
    at_least), which adds the ratio of mode num's metric to mode den's, each
    within one repetition, at c connections, when both have it."""
    targets = []

    def target(c, num, den, metric, what, threshold, at_least):
        a, b = runs.get((num, c), {}), runs.get((den, c), {})
        ratios = [a[r][metric] / b[r][metric] for r in sorted(set(a) & set(b))
                  if a[r].get(metric) and b[r].get(metric)]
        if ratios:
            s = summary(ratios)
            met = s["median"] >= threshold if at_least else s["median"] <= threshold
            targets.append({"conns": c, "what": what, "ratio": s, "met": met})
    return targets, target


def targets_of(runs):
    """The target ratios, each within one repetition at one connection count."""
    targets, target = ratio_targets(runs)

    for c in sorted({c for _, c in runs}):
        target(c, "pool", "adaptive", "hit_p50_us", "hit p50: pool / adaptive (target >= 3)", 3, True)
        target(c, "adaptive", "pool", "req_per_s", "throughput: adaptive / pool (target >= 1)", 1, True)
        target(c, "adaptive", "io_uring", "hit_p50_us",
               "hit p50: adaptive / io_uring (target <= 1.10)", 1.10, False)
        target(c, "adaptive", "io_uring", "req_per_s",
               "throughput: adaptive / io_uring (target >= 0.90)", 0.90, True)
    return targets


def peer_targets_of(client):
    """The targets against nginx (issue 36), each within one repetition, on
    the client's figures: CPU per request in the closed loop, hit p99 in
    the open loop, plain HTTP throughput in the closed loop."""
    targets, target = ratio_targets(client)
    for c in sorted({c for _, c in client}):
        for m in ("adaptive", "io_uring", "pool"):
            for peer in ("nginx-https", "nginx-aio"):
                target(c, m, peer, "cpu_us_per_req",
                       f"HTTPS CPU/req: {m} / {peer} (target <= 1)", 1.0, False)
        for m in ("adaptive", "io_uring", "pool"):
            target(c, m, "nginx-aio", "open_hit_p99_us",
                   f"open-loop hit p99: {m} / nginx-aio (target < 1)", 0.999999, False)
        target(c, "sendfile", "nginx-http", "req_per_s",
               "HTTP throughput: sendfile / nginx-http (target >= 0.90)", 0.90, True)
    return targets


def cdf_series(cdf, runs_dir):
    """Writes each (mode, hit/miss) CDF as runs_dir/cdf-MODE-CLS.dat; returns
    gnuplot's plot clauses for them."""
    series = []
    for (m, cls), vals in sorted(cdf.items()):
        if not vals:
            continue
        vals.sort()
        path = os.path.join(runs_dir, f"cdf-{m}-{cls}.dat")
        step = max(1, len(vals) // 2000)
        with open(path, "w") as f:
            for i in range(0, len(vals), step):
                f.write(f"{vals[i]} {(i + 1) / len(vals)}\n")
            f.write(f"{vals[-1]} 1\n")
        lc = MODES.index(m) + 1
        dt = "dt 1" if cls == "hit" else "dt 2"
        series.append(f"'{path}' using 1:2 with lines lw 2 lc {lc} {dt} title '{m} {cls}'")
    return series


GNUPLOT_HEAD = ("set termoption noenhanced; set logscale x; set xlabel 'service time (µs)';"
                "set ylabel 'fraction of requests'; set key bottom right; set grid;")


def target_lines(targets):
    return [f"  c={t['conns']:<4} {t['what']:<56} {fmt(t['ratio'], 'x'):>22}  "
            f"{'met' if t['met'] else 'MISSED'}" for t in targets]


def report(runs_dir, out, setup):
    """bench.txt, bench.json and bench.png of one run set; returns what it
    found: runs, the summaries, the targets."""
    runs, client, cdf, top_conns = collect(runs_dir)
    rows = summaries(runs)
    peer_rows = summaries(client, PEER_METRICS)
    table, out_json = [], {"setup": setup, "results": [], "targets": []}
    for c, m, s in rows:
        out_json["results"].append({"mode": m, "conns": c, "summary": s, "runs": runs[(m, c)]})
        table.append(
            f"{c:>5} {m:<9} {fmt(s['req_per_s']):>18} {fmt(s['mib_per_s']):>16} "
            f"{fmt(s['hit_pct']):>16} "
            f"{fmt(s['hit_p50_us']):>17} {fmt(s['hit_p99_us']):>19} {fmt(s['hit_p999_us']):>19} "
            f"{fmt(s['miss_p50_us']):>19} {fmt(s['miss_p99_us']):>21} {fmt(s['cpu_us_per_req']):>16}")
    targets = targets_of(runs)
    peer_targets = peer_targets_of(client)
    out_json["targets"] = targets
    out_json["peer_targets"] = peer_targets
    out_json["peer_results"] = [{"mode": m, "conns": c, "summary": s, "runs": client[(m, c)]}
                                for c, m, s in peer_rows]
    peer_table = []
    for c, m, s in peer_rows:
        peer_table.append(
            f"{c:>5} {m:<11} {fmt(s['req_per_s']):>18} {fmt(s['p50_us']):>19} {fmt(s['p99_us']):>21} "
            f"{fmt(s['p999_us']):>21} {fmt(s['cpu_us_per_req']):>16} | "
            f"{fmt(s['open_completed_per_s']):>16} {fmt(s['open_p99_us']):>21} "
            f"{fmt(s['open_hit_p50_us']):>19} {fmt(s['open_hit_p99_us']):>21} {fmt(s['open_miss_p99_us']):>23} "
            f"{fmt(s['open_hit_pct']):>16} {fmt(s['open_cpu_us_per_req']):>16} {fmt(s['open_pacer_late_p99_us']):>16}")

    lines = [f"nowait-serve bench: {setup}", "",
             "Service time in µs, per request, from the server's log; hit = all requested bytes in the",
             "page cache on arrival (cachestat). Median over repetitions [min-max].", "",
             f"{'conns':>5} {'mode':<9} {'req/s':>18} {'MiB/s':>16} {'hit %':>16} "
             f"{'hit p50':>17} {'hit p99':>19} {'hit p99.9':>19} {'miss p50':>19} {'miss p99':>21} "
             f"{'CPU µs/req':>16}"]
    lines += table
    lines += ["", "Targets (ratio within one repetition, median [min-max]):"]
    lines += target_lines(targets)
    lines += ["", "Every server on the client's figures. Closed loop: wrk (same command for every server),",
              "latency in µs from request sent to response read (coordinated omission applies). Open",
              "loop: serve/pace.py, latency in µs from the time the request was due (queueing for one",
              "of the connections included), hit/miss by the client's cachestat; 'late p99' is the",
              "pacer's own lateness, left out of the latency. CPU µs/req: utime+stime of the server's",
              "processes over the window / requests. Median over repetitions [min-max].", "",
              f"{'conns':>5} {'mode':<11} {'req/s':>18} {'p50':>19} {'p99':>21} {'p99.9':>21} "
              f"{'CPU µs/req':>16} | {'open req/s':>16} {'open p99':>21} {'open hit p50':>19} {'open hit p99':>21} "
              f"{'open miss p99':>23} {'open hit %':>16} {'open CPU µs/req':>16} {'late p99':>16}"]
    lines += peer_table
    lines += ["", "Targets against nginx (ratio within one repetition, median [min-max]):"]
    lines += target_lines(peer_targets)
    with open(os.path.join(out, "bench.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(out, "bench.json"), "w") as f:
        json.dump(out_json, f, indent=1)

    # Latency CDF at the largest connection count, all repetitions pooled.
    series = cdf_series(cdf, runs_dir)
    if series:
        script = (f"set terminal png size 1100,700; set output '{out}/bench.png';"
                  f"set title 'nowait-serve service time CDF, {top_conns} connections';"
                  + GNUPLOT_HEAD + f"plot {', '.join(series)}")
        subprocess.run(["gnuplot", "-e", script], check=True)
    return {"rows": rows, "targets": targets, "top_conns": top_conns, "series": series,
            "peer_rows": peer_rows, "peer_targets": peer_targets}


KERNELS = ["stock", "patched"]
FSES = ["tmpfs", "ext4", "overlay"]


def guest_report(top, setup):
    """Stock against patched, per filesystem: serve-bench-guest.{md,json,png}."""
    found = {}   # (kernel, fs) -> report() or {"skipped": why}
    for k in KERNELS:
        base = os.path.join(top, k, "results", "serve")
        fses = [f for f in FSES if os.path.isdir(os.path.join(base, f))]
        fses += sorted(f for f in (os.listdir(base) if os.path.isdir(base) else []) if f not in fses)
        for fs in fses:
            d = os.path.join(base, fs)
            if os.path.exists(os.path.join(d, "skipped")):
                with open(os.path.join(d, "skipped")) as f:
                    found[(k, fs)] = {"skipped": f.read().strip()}
            elif os.path.exists(os.path.join(d, "runs", "index")):
                try:
                    with open(os.path.join(d, "setup.txt")) as f:
                        run_setup = f.read().strip()
                except OSError:
                    # bench.sh writes it at the end: the guest was stopped first.
                    with open(os.path.join(d, "runs", "index")) as f:
                        n = sum(1 for line in f if line.strip())
                    run_setup = (f"cut short: the guest ended before bench.sh did ({n} runs "
                                 "complete in runs/index, each as in the options above)")
                found[(k, fs)] = report(os.path.join(d, "runs"), d, run_setup)
                found[(k, fs)]["setup"] = run_setup
            else:
                found[(k, fs)] = {"skipped": "no runs came back (see the console)"}
    fses = [f for f in FSES if any(fs == f for _, fs in found)]
    fses += sorted({fs for _, fs in found} - set(fses))

    def cell(k, fs, c, m, key, rows="rows"):
        r = found.get((k, fs), {})
        for cc, mm, s in r.get(rows, []):
            if (cc, mm) == (c, m):
                return fmt(s[key])
        return "-"

    cols = [("req/s", "req_per_s"), ("hit %", "hit_pct"), ("hit p50 µs", "hit_p50_us"),
            ("hit p99 µs", "hit_p99_us"), ("miss p50 µs", "miss_p50_us"),
            ("miss p99 µs", "miss_p99_us"), ("CPU µs/req", "cpu_us_per_req")]
    md = [f"nowait-serve in the guest, stock kernel against patched: {setup}", "",
          "Each cell: stock / patched, median over repetitions. Service time from the server's log;",
          "hit = all requested bytes in the page cache on arrival (cachestat).", "",
          "| fs | conns | mode | " + " | ".join(n for n, _ in cols) + " |",
          "|---|---|---|" + "---|" * len(cols)]
    out_json = {"setup": setup, "filesystems": {}}
    for fs in fses:
        skipped = {k: found.get((k, fs), {"skipped": "not booted"}).get("skipped") for k in KERNELS}
        skipped = {k: why for k, why in skipped.items() if why}
        keys = sorted({(c, m) for k in KERNELS for c, m, _ in found.get((k, fs), {}).get("rows", [])},
                      key=lambda cm: (cm[0], MODES.index(cm[1]) if cm[1] in MODES else 99))
        for c, m in keys:
            md.append(f"| {fs} | {c} | {m} | " + " | ".join(
                f"{cell('stock', fs, c, m, key)} / {cell('patched', fs, c, m, key)}" for _, key in cols) + " |")
        for k, why in skipped.items():
            md.append(f"| {fs} | - | skipped on {k}: {why} |" + " |" * len(cols))
        out_json["filesystems"][fs] = {k: ({"skipped": skipped[k]} if k in skipped else
                                          {"setup": found[(k, fs)]["setup"],
                                           "results": [{"conns": c, "mode": m, "summary": s}
                                                       for c, m, s in found[(k, fs)]["rows"]],
                                           "peer_results": [{"conns": c, "mode": m, "summary": s}
                                                            for c, m, s in found[(k, fs)]["peer_rows"]],
                                           "targets": found[(k, fs)]["targets"],
                                           "peer_targets": found[(k, fs)]["peer_targets"]})
                                       for k in KERNELS}
    pcols = [("req/s", "req_per_s"), ("p50 µs", "p50_us"), ("p99 µs", "p99_us"), ("p99.9 µs", "p999_us"),
             ("CPU µs/req", "cpu_us_per_req"), ("open req/s", "open_completed_per_s"),
             ("open p99 µs", "open_p99_us"), ("open hit p50 µs", "open_hit_p50_us"),
             ("open hit p99 µs", "open_hit_p99_us"),
             ("open miss p99 µs", "open_miss_p99_us"), ("open hit %", "open_hit_pct"),
             ("pacer late p99 µs", "open_pacer_late_p99_us")]
    md += ["", "Every server, nginx included, on the client's figures: wrk (closed loop, latency from send",
           "to response) and serve/pace.py (open loop, latency from the time each request was due, hit or",
           "miss by the client's cachestat before sending). Each cell: stock / patched, median over",
           "repetitions.", "",
           "| fs | conns | mode | " + " | ".join(n for n, _ in pcols) + " |",
           "|---|---|---|" + "---|" * len(pcols)]
    for fs in fses:
        keys = sorted({(c, m) for k in KERNELS for c, m, _ in found.get((k, fs), {}).get("peer_rows", [])},
                      key=lambda cm: (cm[0], MODES.index(cm[1]) if cm[1] in MODES else 99))
        for c, m in keys:
            md.append(f"| {fs} | {c} | {m} | " + " | ".join(
                f"{cell('stock', fs, c, m, key, 'peer_rows')} / {cell('patched', fs, c, m, key, 'peer_rows')}"
                for _, key in pcols) + " |")
    md += ["", "Targets, per kernel and filesystem (ratio within one repetition, median [min-max]):", "",
           "| fs | conns | target | stock | patched |", "|---|---|---|---|---|"]
    whats = []
    for k in KERNELS:
        for fs in fses:
            r = found.get((k, fs), {})
            for t in r.get("targets", []) + r.get("peer_targets", []):
                if (fs, t["conns"], t["what"]) not in whats:
                    whats.append((fs, t["conns"], t["what"]))

    def tcell(k, fs, c, what):
        r = found.get((k, fs), {})
        for t in r.get("targets", []) + r.get("peer_targets", []):
            if (t["conns"], t["what"]) == (c, what):
                return f"{fmt(t['ratio'], 'x')} {'met' if t['met'] else '**missed**'}"
        return "-"
    for fs, c, what in sorted(whats, key=lambda w: (fses.index(w[0]), w[1])):
        md.append(f"| {fs} | {c} | {what} | {tcell('stock', fs, c, what)} | {tcell('patched', fs, c, what)} |")
    md += ["", "Kernel messages (the console searched with harness/lib.sh's NOWAIT_SPLAT):"]
    for k in KERNELS:
        path = os.path.join(top, k, "splats")
        if os.path.exists(path):
            with open(path, errors="replace") as f:
                hits = [line.strip() for line in f if line.strip()]
            md.append(f"- {k}: " + (f"{len(hits)} splat lines, first: `{hits[0][:200]}`" if hits
                                     else "no splat in the console"))
            out_json.setdefault("splats", {})[k] = hits[:50]
    md += ["", "Runs per kernel and filesystem:"]
    for k in KERNELS:
        for fs in fses:
            r = found.get((k, fs), {})
            md.append(f"- {k} {fs}: " + (f"skipped: {r['skipped']}" if "skipped" in r else r.get("setup", "not run")))
    with open(os.path.join(top, "serve-bench-guest.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    with open(os.path.join(top, "serve-bench-guest.json"), "w") as f:
        json.dump(out_json, f, indent=1)

    # A CDF panel per filesystem (rows) and kernel (columns).
    panels = []
    for fs in fses:
        for k in KERNELS:
            r = found.get((k, fs), {})
            title = f"{fs}, {k} kernel, {r.get('top_conns', '-')} connections"
            if r.get("series"):
                panels.append(f"set title '{title}'; plot {', '.join(r['series'])};")
            else:
                why = r.get("skipped", "no data").replace("'", "")
                panels.append(f"set title '{title}'; unset logscale x; set xrange [0:1]; set yrange [0:1];"
                              "set xlabel ''; unset xtics; unset ytics;"
                              f"set label 1 'no data: {why}' at 0.05,0.5; plot 2 notitle;"
                              "unset label 1; set autoscale; set logscale x; set xtics; set ytics;"
                              "set xlabel 'service time (µs)';")
    if panels:
        script = (f"set terminal png size 1400,{450 * len(fses)}; set output '{top}/serve-bench-guest.png';"
                  + GNUPLOT_HEAD + f"set multiplot layout {len(fses)},{len(KERNELS)};"
                  + "".join(panels) + "unset multiplot")
        subprocess.run(["gnuplot", "-e", script], check=True)
    print("\n".join(md))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs")
    ap.add_argument("--out")
    ap.add_argument("--guest")
    ap.add_argument("--setup", default="")
    args = ap.parse_args()
    if args.guest:
        guest_report(args.guest, args.setup)
    elif args.runs and args.out:
        report(args.runs, args.out, args.setup)
    else:
        ap.error("--runs and --out, or --guest")


if __name__ == "__main__":
    main()
