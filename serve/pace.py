#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Open-loop load for serve/bench.sh: GET /fNNNNN at a constant rate,
whatever the server's answers do, on at most CONNS keep-alive connections.

    pace.py URL --rate R --duration S --conns N --files N [--zipf S]
            [--probe DIR] [--seed N] [--log FILE]

Request i is due at t0 + i/R. It goes out at once on an idle connection,
else it waits (FIFO) for one of the CONNS to free up: its latency runs from
the time the pacer took it up (at its due time, or later when the pacer
itself was late), not from when it was sent, so a server that stalls is
charged for every request its stall held back (the correction wrk2 makes
for coordinated omission). Caveat, stated in the tables: the correction
holds only as long as the pacer itself keeps time; it runs on the same
machine as the server, in one Python thread, and its own lateness (due to
taken up: timer granularity and CPU contention) is left out of the latency
and printed on its own (pacer_late_*); while it is late, fewer requests
reach the server than the rate says. With CONNS connections, a server
slower than CONNS/latency requests a second makes the queue grow for the
whole run (the tail then measures the run's length). Connections are opened (TLS handshakes done) before the
first request is due.

File k is chosen with probability proportional to 1/(k+1)^s, as
serve/zipf.lua does. --probe DIR: just before each request is sent, asks
cachestat(2) whether all of DIR/fNNNNN is in the page cache, and classes
the request "hit" or "miss" by that (the same for every server, nginx
included, since the client asks, not the server). Prints one JSON object.
--log FILE: one line per request: due_ns latency_us status bytes cached.
"""
import argparse
import asyncio
import bisect
import ctypes
import json
import os
import random
import ssl
import sys
import time
from urllib.parse import urlsplit

NR_CACHESTAT = 451   # the same number on every architecture


class CacheStat:
    def __init__(self, root, nfiles):
        self.libc = ctypes.CDLL(None, use_errno=True)
        self.libc.syscall.restype = ctypes.c_long
        self.fds, self.pages = [], []
        for k in range(nfiles):
            try:
                fd = os.open(os.path.join(root, f"f{k:05d}"), os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                fd = -1
            self.fds.append(fd)
            self.pages.append((os.fstat(fd).st_size + 4095) // 4096 if fd >= 0 else 0)
        self.rng = (ctypes.c_uint64 * 2)(0, 0)
        self.cs = (ctypes.c_uint64 * 5)()

    def cached(self, k):
        """1 when every page of file k is cached, 0 when not, -1 unknown."""
        if self.fds[k] < 0:
            return -1
        if self.libc.syscall(NR_CACHESTAT, self.fds[k], self.rng, self.cs, 0) != 0:
            return -1
        return 1 if self.cs[0] >= self.pages[k] else 0


def pct(sorted_vals, p):
    if not sorted_vals:
        return None
    return sorted_vals[min(len(sorted_vals) - 1, int(p / 100.0 * len(sorted_vals)))]


async def open_conn(host, port, ctx):
    return await asyncio.open_connection(host, port, ssl=ctx,
                                         server_hostname=host if ctx else None)


async def one_request(conn, path, host):
    reader, writer = conn
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    length = 0
    for line in lines[1:]:
        if line.lower().startswith("content-length:"):
            length = int(line.split(":", 1)[1])
    left = length
    while left > 0:
        chunk = await reader.read(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("closed mid-body")
        left -= len(chunk)
    return status, length


async def run(args):
    u = urlsplit(args.url)
    host, port = u.hostname, u.port or (443 if u.scheme == "https" else 80)
    ctx = None
    if u.scheme == "https":
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    cdf, s = [], 0.0
    for k in range(args.files):
        s += 1.0 / (k + 1) ** args.zipf
        cdf.append(s)
    cdf = [c / s for c in cdf]
    rnd = random.Random(args.seed)
    probe = CacheStat(args.probe, args.files) if args.probe else None

    idle = [await open_conn(host, port, ctx) for _ in range(args.conns)]
    nconn = len(idle)
    waiters = []          # futures of requests waiting for a connection, FIFO
    results = []          # (due_ns, latency_us, status, bytes, cached)
    lateness = []         # µs between due and sent, for requests that found a connection idle
    errors = 0
    loop = asyncio.get_running_loop()
    n = int(args.rate * args.duration)
    t0 = time.monotonic_ns() + 200_000_000
    wall0 = time.time_ns() + 200_000_000

    async def get_conn():
        if idle:
            return idle.pop(), False
        fut = loop.create_future()
        waiters.append(fut)
        return await fut, True

    def put_conn(conn):
        while waiters:
            fut = waiters.pop(0)
            if not fut.cancelled():
                fut.set_result(conn)
                return
        idle.append(conn)

    async def request(due_ns, start_ns):
        nonlocal errors, nconn
        k = bisect.bisect_left(cdf, rnd.random())
        conn, waited = await get_conn()
        if not waited:
            lateness.append((start_ns - due_ns) / 1000.0)
        cached = probe.cached(k) if probe else -1
        try:
            status, nbytes = await one_request(conn, f"/f{k:05d}", host)
        except (OSError, ConnectionError, asyncio.IncompleteReadError, ValueError, IndexError):
            errors += 1
            conn[1].close()
            try:
                conn = await open_conn(host, port, ctx)
            except OSError:
                nconn -= 1
                return
            put_conn(conn)
            return
        done = time.monotonic_ns()
        put_conn(conn)
        results.append((wall0 + due_ns - t0, (done - start_ns) / 1000.0, status, nbytes, cached))

    tasks = []
    for i in range(n):
        due = t0 + int(i * 1e9 / args.rate)
        delay = (due - time.monotonic_ns()) / 1e9
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.ensure_future(request(due, max(due, time.monotonic_ns()))))
    # Requests still out when the schedule ends get the duration again to finish.
    done, pending = await asyncio.wait(tasks, timeout=max(10.0, args.duration))
    for t in pending:
        t.cancel()
    elapsed = (time.monotonic_ns() - t0) / 1e9
    for r, w in idle:
        w.close()

    out = {"rate": args.rate, "duration_s": args.duration, "conns": args.conns,
           "due": n, "completed": len(results), "errors": errors, "unfinished": len(pending),
           "elapsed_s": elapsed,
           "completed_per_s": len(results) / args.duration,
           "non_2xx": sum(1 for r in results if not 200 <= r[2] < 300)}
    lat = sorted(r[1] for r in results)
    for p, name in ((50, "p50"), (99, "p99"), (99.9, "p999")):
        out[f"{name}_us"] = pct(lat, p)
    for cls, want, count in (("hit", 1, "hits"), ("miss", 0, "misses")):
        v = sorted(r[1] for r in results if r[4] == want)
        out[count] = len(v)
        for p, name in ((50, "p50"), (99, "p99"), (99.9, "p999")):
            out[f"{cls}_{name}_us"] = pct(v, p)
    late = sorted(lateness)
    out["pacer_late_p50_us"] = pct(late, 50)
    out["pacer_late_p99_us"] = pct(late, 99)
    out["queued_for_conn"] = n - len(lateness)
    if args.log:
        with open(args.log, "w") as f:
            f.write("# due_ns latency_us status bytes cached\n")
            for r in results:
                f.write(f"{r[0]} {r[1]:.1f} {r[2]} {r[3]} {r[4]}\n")
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--rate", type=float, required=True)
    ap.add_argument("--duration", type=float, required=True)
    ap.add_argument("--conns", type=int, default=16)
    ap.add_argument("--files", type=int, required=True)
    ap.add_argument("--zipf", type=float, default=1.0)
    ap.add_argument("--probe")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--log")
    args = ap.parse_args()
    asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
