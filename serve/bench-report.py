#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Turns serve/bench.sh's runs into bench.txt, bench.json and bench.png.

Latency is nowait-serve's own per-request service time (request parsed to
last byte handed to the socket), split by whether the requested bytes were
all in the page cache when the request arrived (cachestat(2), logged by the
server): "hit" and "miss". Each figure is the median over repetitions with
the min-max spread; each target ratio is computed within one repetition
(same load, runs minutes apart) and then summarized the same way.
"""
import argparse
import json
import os
import statistics
import subprocess

MODES = ["pool", "adaptive", "io_uring", "sendfile"]


def pct(sorted_vals, p):
    if not sorted_vals:
        return None
    i = min(len(sorted_vals) - 1, int(p / 100.0 * len(sorted_vals)))
    return sorted_vals[i]


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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--setup", default="")
    args = ap.parse_args()

    runs = {}  # (mode, conns) -> {rep: result}
    cdf = {}   # (mode, cls) -> latencies at the largest connection count
    with open(os.path.join(args.runs, "index")) as f:
        index = [line.split() for line in f if line.strip()]
    top_conns = max(int(x[2]) for x in index)
    for rep, mode, conns, t0, t1, cpu_ms in index:
        r, lat = load_run(args.runs, rep, mode, conns, int(t0), int(t1), int(cpu_ms))
        runs.setdefault((mode, int(conns)), {})[int(rep)] = r
        if int(conns) == top_conns:
            for cls in lat:
                cdf.setdefault((mode, cls), []).extend(lat[cls])

    metrics = ["req_per_s", "mib_per_s", "hit_pct", "hits_inline_pct",
               "hit_p50_us", "hit_p99_us", "hit_p999_us",
               "miss_p50_us", "miss_p99_us", "miss_p999_us", "cpu_s_per_s", "cpu_us_per_req"]
    table, out_json = [], {"setup": args.setup, "results": [], "targets": []}
    conns_list = sorted({c for _, c in runs})
    modes = [m for m in MODES if any(m == mm for mm, _ in runs)]
    for c in conns_list:
        for m in modes:
            reps = runs.get((m, c))
            if not reps:
                continue
            s = {k: summary([r[k] for r in reps.values()]) for k in metrics}
            out_json["results"].append({"mode": m, "conns": c, "summary": s,
                                        "runs": reps})
            table.append(
                f"{c:>5} {m:<9} {fmt(s['req_per_s']):>18} {fmt(s['mib_per_s']):>16} "
                f"{fmt(s['hit_pct']):>16} "
                f"{fmt(s['hit_p50_us']):>17} {fmt(s['hit_p99_us']):>19} {fmt(s['hit_p999_us']):>19} "
                f"{fmt(s['miss_p50_us']):>19} {fmt(s['miss_p99_us']):>21} {fmt(s['cpu_us_per_req']):>16}")

    # Targets: ratios within each repetition at the same connection count.
    def target(c, num, den, metric, what, threshold, at_least):
        a, b = runs.get((num, c), {}), runs.get((den, c), {})
        ratios = [a[r][metric] / b[r][metric] for r in sorted(set(a) & set(b))
                  if a[r][metric] and b[r][metric]]
        if ratios:
            s = summary(ratios)
            met = s["median"] >= threshold if at_least else s["median"] <= threshold
            targets.append({"conns": c, "what": what, "ratio": s, "met": met})

    targets = []
    for c in conns_list:
        target(c, "pool", "adaptive", "hit_p50_us", "hit p50: pool / adaptive (target >= 3)", 3, True)
        target(c, "adaptive", "pool", "req_per_s", "throughput: adaptive / pool (target >= 1)", 1, True)
        target(c, "adaptive", "io_uring", "hit_p50_us",
               "hit p50: adaptive / io_uring (target <= 1.10)", 1.10, False)
        target(c, "adaptive", "io_uring", "req_per_s",
               "throughput: adaptive / io_uring (target >= 0.90)", 0.90, True)
    out_json["targets"] = targets

    lines = [f"nowait-serve bench: {args.setup}", "",
             "Service time in µs, per request, from the server's log; hit = all requested bytes in the",
             "page cache on arrival (cachestat). Median over repetitions [min-max].", "",
             f"{'conns':>5} {'mode':<9} {'req/s':>18} {'MiB/s':>16} {'hit %':>16} "
             f"{'hit p50':>17} {'hit p99':>19} {'hit p99.9':>19} {'miss p50':>19} {'miss p99':>21} "
             f"{'CPU µs/req':>16}"]
    lines += table
    lines += ["", "Targets (ratio within one repetition, median [min-max]):"]
    for t in targets:
        lines.append(f"  c={t['conns']:<4} {t['what']:<48} {fmt(t['ratio'], 'x'):>22}  "
                     f"{'met' if t['met'] else 'MISSED'}")
    with open(os.path.join(args.out, "bench.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(args.out, "bench.json"), "w") as f:
        json.dump(out_json, f, indent=1)

    # Latency CDF at the largest connection count, all repetitions pooled.
    series = []
    for (m, cls), vals in sorted(cdf.items()):
        if not vals:
            continue
        vals.sort()
        path = os.path.join(args.runs, f"cdf-{m}-{cls}.dat")
        step = max(1, len(vals) // 2000)
        with open(path, "w") as f:
            for i in range(0, len(vals), step):
                f.write(f"{vals[i]} {(i + 1) / len(vals)}\n")
            f.write(f"{vals[-1]} 1\n")
        series.append((path, f"{m} {cls}", "dt 1" if cls == "hit" else "dt 2"))
    if series:
        plot = ", ".join(f"'{p}' using 1:2 with lines lw 2 {dt} title '{t}'" for p, t, dt in series)
        script = (f"set terminal png size 1100,700; set output '{args.out}/bench.png';"
                  f"set title 'nowait-serve service time CDF, {top_conns} connections';"
                  "set termoption noenhanced; set logscale x; set xlabel 'service time (µs)'; set ylabel 'fraction of requests';"
                  "set key bottom right; set grid;"
                  f"plot {plot}")
        subprocess.run(["gnuplot", "-e", script], check=True)


if __name__ == "__main__":
    main()
