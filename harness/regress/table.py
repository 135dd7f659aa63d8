#!/usr/bin/env python3
"""Tables of harness/regress.sh: per suite and filesystem, pass/fail/notrun on
the stock and the patched kernel, and every failure on the patched kernel
classified (also on stock, new, environment, the test's assumption).

    NOWAIT_SPLAT=PATTERN table.py OUT KNOWN SUITE...

OUT holds stock-SUITE/ and patched-SUITE/ (console.log, results/); KNOWN is
harness/regress/known.txt: "SUITE FS TEST CLASS REASON" lines naming the
failures that are not regressions and why (FS may be *). Writes
OUT/regress.md and OUT/regress.json.
"""
import glob
import hashlib
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

out, known_path, suites = sys.argv[1], sys.argv[2], sys.argv[3:]
LABELS = ("stock", "patched")
BAD = ("fail", "timeout")


def load_known():
    known = []
    if os.path.exists(known_path):
        for line in open(known_path):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            suite, fs, test, cls, reason = line.split(None, 4)
            known.append((suite, fs, test, cls, reason))
    return known


def fstests_results(d, sel):
    """{(fs, test): (status, detail)} from the xunit reports and the selection."""
    res = {}
    for fs, tests in sel.items():
        seen = {}
        text = ""
        # check rewrites its report as result.xml.new after each test and
        # then renames it: a run the budget ended can leave the newer one
        # there, with the last test that finished.
        reports = glob.glob(os.path.join(d, "results", "fstests", fs, "t*", "result.xml"))
        reports += glob.glob(os.path.join(d, "results", "fstests", fs, "t*", "result.xml.new"))
        for xml in sorted(reports):
            try:
                root = ET.parse(xml).getroot()
            except ET.ParseError:
                root = None
            for tc in (root.iter("testcase") if root is not None else []):
                name = tc.get("name")
                st, detail = "pass", ""
                for child in tc:
                    if child.tag == "skipped":
                        st, detail = "notrun", child.get("message", "")
                    elif child.tag in ("failure", "error"):
                        st, detail = "fail", child.get("message", "")
                seen[name] = (st, detail)
        for console in glob.glob(os.path.join(d, "results", "fstests", fs, "t*", "console.txt")):
            text += open(console, errors="replace").read()
        for t in tests:
            if t in seen:
                res[(fs, t)] = seen[t]
            elif re.search(r"^%s\s" % re.escape(t), text, re.M):
                # Started but not in the report: the run ended inside it.
                res[(fs, t)] = ("timeout", "the run ended while this test ran (budget or hang)")
            else:
                res[(fs, t)] = ("not reached", "the guest's budget ran out before it")
    return res


SEG = re.compile(r"=== Testing on (\S+) ===")


def ltp_results(d, names):
    """{(fs, abi:test): (status, detail)}; .all_filesystems tests per filesystem."""
    res = {}
    lines = {}
    path = os.path.join(d, "results", "results.txt")
    if os.path.exists(path):
        for line in open(path, errors="replace"):
            f = line.split()
            if len(f) >= 5 and f[0].startswith("ltp-"):
                lines[(f[0][4:], f[2])] = (f[3], " ".join(f[4:]))
    abis = sorted({a for a, _ in lines}) or ["x86_64"]
    for abi in abis:
        for n in names:
            if abi == "x86_64" and n.endswith("_64"):
                continue  # the same program as n[:-3] where off_t is 64-bit
            key = (abi, n)
            if key not in lines:
                res[("TMPDIR(ext4)", "%s:%s" % (abi, n))] = ("not reached", "the guest's budget ran out before it")
                continue
            st, info = lines[key]
            if st == "notrun" and info.split()[-1:] == ["budget"]:
                res[("TMPDIR(ext4)", "%s:%s" % (abi, n))] = ("not reached", "the guest's budget ran out before it")
                continue
            log = os.path.join(d, "results", "ltp", "%s-%s.log" % (abi, n))
            text = open(log, errors="replace").read() if os.path.exists(log) else ""
            parts = SEG.split(text)
            if len(parts) > 1:
                # parts: [preamble, fs1, seg1, fs2, seg2, ...]
                for i in range(1, len(parts), 2):
                    seg = parts[i + 1]
                    if re.search(r"\b(TFAIL|TBROK)\b", seg):
                        s = "fail"
                    elif re.search(r"\bTPASS\b", seg):
                        s = "pass"
                    else:
                        s = "notrun"
                    if st == "timeout" and i == len(parts) - 2 and s != "fail":
                        s = "timeout"
                    detail = "; ".join(l.strip() for l in seg.splitlines()
                                       if re.search(r"\b(TFAIL|TBROK|TCONF)\b", l))[:400]
                    res[(parts[i], "%s:%s" % (abi, n))] = (s, detail)
            else:
                detail = "; ".join(l.strip() for l in text.splitlines()
                                   if re.search(r"\b(TFAIL|TBROK|TCONF)\b", l))[:400]
                res[("TMPDIR(ext4)", "%s:%s" % (abi, n))] = (st, detail or info)
    return res


def classify(suite, fs, test, s, p, known):
    for ks, kfs, kt, cls, reason in known:
        if ks == suite and kfs in (fs, "*") and re.fullmatch(kt, test):
            if cls == "stock":
                if s[0] not in BAD:
                    continue  # named as pre-existing, but stock passed here
                return "also on stock", reason
            return cls, reason
    if s[0] in BAD:
        return "also on stock", "fails on stock too: " + (s[1] or s[0])
    if s[0] == "not reached":
        return "unclassified", "stock did not reach this test: " + p[1]
    return "new", p[1]


def main():
    known = load_known()
    report = {"suites": {}, "kernels": {}}
    md = ["# Regression run: stock against patched", ""]
    for label in LABELS:
        for suite in suites:
            k = os.path.join(out, "%s-%s" % (label, suite), "bzImage")
            if os.path.exists(k):
                report["kernels"][label] = {
                    "sha256": hashlib.sha256(open(k, "rb").read()).hexdigest()[:16]}
    for label in LABELS:
        if label in report["kernels"]:
            kt = glob.glob(os.path.join(out, "%s-*" % label, "results", "kernel.txt"))
            if kt:
                report["kernels"][label]["uname"] = open(kt[0]).readline().strip()
            md.append("- %s: `%s` (bzImage sha256 %s…)" % (
                label, report["kernels"][label].get("uname", "?"), report["kernels"][label]["sha256"]))
    md.append("")
    for suite in suites:
        per = {}
        job = os.path.join(out, "job")
        if suite == "fstests":
            sel = {}
            for f in sorted(glob.glob(os.path.join(job, "fstests.*.*"))):
                fs = f.split("fstests.", 1)[1].split(".", 1)[1]
                sel.setdefault(fs, [])
                sel[fs] += [l.split("#")[0].strip() for l in open(f) if l.split("#")[0].strip()]
            for label in LABELS:
                per[label] = fstests_results(os.path.join(out, "%s-%s" % (label, suite)), sel)
            fsorder = list(sel)
        else:
            names = [l.split()[0] for l in open(os.path.join(job, "ltp.runtest")) if l.strip()]
            for label in LABELS:
                per[label] = ltp_results(os.path.join(out, "%s-%s" % (label, suite)), names)
            fsorder = sorted({fs for lab in per.values() for fs, _ in lab})
        keys = sorted(set(per["stock"]) | set(per["patched"]))
        rows = []
        def get(label, fs, test):
            if (fs, test) in per[label]:
                return per[label][(fs, test)]
            if fs != "TMPDIR(ext4)" and ("TMPDIR(ext4)", test) in per[label]:
                # Reported as a whole on this kernel, per filesystem on the other.
                return ("n/a", "")
            if fs == "TMPDIR(ext4)" and any(t == test for _, t in per[label]):
                return ("n/a", "")
            return ("not reached", "")
        for fs, test in keys:
            s = get("stock", fs, test)
            p = get("patched", fs, test)
            row = {"fs": fs, "test": test, "stock": s[0], "patched": p[0],
                   "stock_detail": s[1], "patched_detail": p[1]}
            if p[0] in BAD:
                row["class"], row["reason"] = classify(suite, fs, test, s, p, known)
            rows.append(row)
        report["suites"][suite] = rows
        md += ["## %s" % suite, "",
               "| filesystem | stock pass | stock fail | stock notrun | stock not reached | patched pass | patched fail | patched notrun | patched not reached |",
               "|---|---|---|---|---|---|---|---|---|"]
        for fs in fsorder:
            c = {}
            for r in rows:
                if r["fs"] != fs:
                    continue
                for label in LABELS:
                    st = r[label]
                    st = "fail" if st == "timeout" else st
                    c[(label, st)] = c.get((label, st), 0) + 1
            md.append("| %s | %s |" % (fs, " | ".join(str(c.get((l, st), 0)) for l in LABELS
                                                  for st in ("pass", "fail", "notrun", "not reached"))))
        md.append("")
        bad = [r for r in rows if r["patched"] in BAD or r["stock"] in BAD]
        if bad:
            md += ["| filesystem | test | stock | patched | class | reason / output |", "|---|---|---|---|---|---|"]
            for r in bad:
                why = r.get("reason") or ("stock only: " + r["stock_detail"])
                md.append("| %s | %s | %s | %s | %s | %s |" % (
                    r["fs"], r["test"], r["stock"], r["patched"], r.get("class", "-"),
                    why.replace("|", "\\|").replace("\n", " ")[:300]))
            md.append("")
        for label in LABELS:
            nr = ["%s %s" % (r["fs"], r["test"]) for r in rows if r[label] == "not reached"]
            if nr:
                md += ["Not reached on %s (the guest's time budget ran out): %s" % (label, ", ".join(nr)), ""]
    # What the kernel prints when it is unwell: NOWAIT_SPLAT of harness/lib.sh.
    splat = re.compile(os.environ["NOWAIT_SPLAT"])
    md += ["## Kernel messages", ""]
    report["splats"] = {}
    for label in LABELS:
        for suite in suites:
            con = os.path.join(out, "%s-%s" % (label, suite), "console.log")
            lines = [l.strip() for l in open(con, errors="replace")] if os.path.exists(con) else []
            hits = [l for l in lines if splat.search(l)]
            report["splats"]["%s-%s" % (label, suite)] = hits[:50]
            md.append("- %s %s: %s" % (label, suite, "%d splat lines, first: `%s`" % (len(hits), hits[0][:200])
                                       if hits else "no splat in the console"))
    # A splat only the patched kernel printed fails the run, as a new failure does.
    new_splats = [s for s in suites if report["splats"].get("patched-" + s) and not report["splats"].get("stock-" + s)]
    if new_splats:
        md.append("- **splats on the patched kernel only** (suites: %s)" % ", ".join(new_splats))
    md.append("")
    totals = {}
    for suite, rows in report["suites"].items():
        for r in rows:
            if "class" in r:
                totals[r["class"]] = totals.get(r["class"], 0) + 1
    report["classes"] = totals
    md.append("Failures on the patched kernel by class: %s" % (
        ", ".join("%s %d" % kv for kv in sorted(totals.items())) or "none"))
    open(os.path.join(out, "regress.md"), "w").write("\n".join(md) + "\n")
    json.dump(report, open(os.path.join(out, "regress.json"), "w"), indent=1)
    print("\n".join(md))
    return 1 if totals.get("new") or new_splats else 0


sys.exit(main())
