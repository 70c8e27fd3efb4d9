#!/usr/bin/env python3
"""Turns run_peers.sh results into the docs/BENCHMARKS.md serving table.

    summarize_peers.py RESULTS_DIR [RESULTS_DIR ...]

Reads <peer>-in<I>-out<O>-c<C>.json (one `vtllm bench serve` run per concurrency level)
and <peer>-in<I>-out<O>.meta.json (peak GPU memory, commands) from every directory given
(a later directory's file wins), and prints one markdown row per workload and
concurrency: output tokens/s of each peer, vtllm's ratio to each peer, TTFT and TPOT
medians, peak GPU memory. A missing run prints '–'; a run with failed or short requests
is flagged '!' after its throughput (its errors are listed under the table).
"""
import json
import pathlib
import re
import sys

PEERS = ("vtllm", "llama.cpp", "transformers")
NAME = re.compile(r"^(?P<peer>.+)-in(?P<i>\d+)-out(?P<o>\d+)-c(?P<c>\d+)\.json$")


def load(dirs):
    runs, metas = {}, {}
    for d in dirs:
        for f in sorted(pathlib.Path(d).glob("*.json")):
            if f.name.endswith(".meta.json"):
                metas[f.name[: -len(".meta.json")]] = json.loads(f.read_text())
                continue
            m = NAME.match(f.name)
            if not m:
                continue
            level = json.loads(f.read_text())["levels"][0]
            runs[(m["peer"], int(m["i"]), int(m["o"]), int(m["c"]))] = level
    return runs, metas


def fmt(x, digits=0):
    return "–" if x is None else f"{x:,.{digits}f}"


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    runs, metas = load(argv[1:])
    workloads = sorted({(i, o, c) for (_, i, o, c) in runs})
    print("| workload | C | " + " | ".join(f"{p} out tok/s" for p in PEERS) +
          " | vtllm / llama.cpp | vtllm / transformers | TTFT p50 ms (v / l / t) "
          "| TPOT p50 ms (v / l / t) | peak GPU GiB (v / l / t) |")
    print("|" + "---|" * 10)
    problems = []
    for i, o, c in workloads:
        tput, ttft, tpot, mem = [], [], [], []
        for p in PEERS:
            r = runs.get((p, i, o, c))
            meta = metas.get(f"{p}-in{i}-out{o}")
            if r is None:
                tput.append(None), ttft.append(None), tpot.append(None)
            else:
                bad = r["failed"] or r["short_outputs"]
                if bad:
                    problems.append(f"{p} {i}/{o} C={c}: {r['failed']} failed, {r['short_outputs']} short: "
                                    f"{r.get('errors')}")
                tput.append((r["output_throughput"], bad))
                ttft.append(r["ttft_ms"]["median"])
                tpot.append(r["tpot_ms"]["median"])
            peak = meta.get("peak_gpu_mem_mib") if meta else None
            mem.append(None if peak is None else peak / 1024)
        vals = [t[0] if t else None for t in tput]
        cells = [("–" if t is None else fmt(t[0]) + ("!" if t[1] else "")) for t in tput]

        def ratio(a, b):
            return "–" if a is None or not b else f"{a / b:.2f}×"
        print(f"| {i} / {o} | {c} | " + " | ".join(cells) +
              f" | {ratio(vals[0], vals[1])} | {ratio(vals[0], vals[2])} | " +
              " / ".join(fmt(x) for x in ttft) + " | " + " / ".join(fmt(x, 1) for x in tpot) + " | " +
              " / ".join(fmt(x, 1) for x in mem) + " |")
    for p in problems:
        print(f"\n! {p}")


if __name__ == "__main__":
    main(sys.argv)
