#!/usr/bin/env python3
"""Live allocations per held stream, by jemalloc size class, from two orchestrator logs.

The orchestrator is a `--features jemalloc-stats` release build run with
`_RJEM_MALLOC_CONF=stats_interval:1048576,stats_interval_opts:Jadx` (jemalloc prints its
statistics as JSON about every MiB of allocation, per thread): the snapshot with the most allocated bytes
in each log is taken as the held plateau, and (big - small) / (N_big - N_small) is what one
held stream keeps.

    dev/loadgen/census.py SMALL.log N_SMALL BIG.log N_BIG [TOP]

(docs/performance.md, "memory per open stream, sixth pass", has the commands.)
"""
import json
import sys


def snapshots(path):
    text = open(path, errors="replace").read()
    dec = json.JSONDecoder()
    i = 0
    while True:
        i = text.find('{"jemalloc"', i)
        if i < 0:
            return
        try:
            doc, end = dec.raw_decode(text, i)
        except json.JSONDecodeError:
            i += 1
            continue
        yield doc["jemalloc"]
        i = end


def plateau(path):
    best = max(snapshots(path), key=lambda j: j["stats"]["allocated"])
    sizes = [b["size"] for b in best["arenas"]["bin"]] + [l["size"] for l in best["arenas"]["lextent"]]
    merged = best["stats.arenas"]["merged"]
    counts = [b["curregs"] for b in merged["bins"]] + [l["curlextents"] for l in merged["lextents"]]
    return best["stats"], dict(zip(sizes, counts))


def main():
    small, n_small, big, n_big = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    top = int(sys.argv[5]) if len(sys.argv) > 5 else 30
    (s1, c1), (s2, c2) = plateau(small), plateau(big)
    n = n_big - n_small
    per = {size: (c2.get(size, 0) - c1.get(size, 0)) / n for size in set(c1) | set(c2)}
    blocks = sum(per.values())
    nbytes = sum(size * k for size, k in per.items())
    print(f"per held stream: {blocks:.1f} live blocks, {nbytes:.0f} bytes in size classes"
          f" (allocated {(s2['allocated'] - s1['allocated']) / n:.0f}, resident {(s2['resident'] - s1['resident']) / n:.0f},"
          f" active {(s2['active'] - s1['active']) / n:.0f})")
    print("size class | blocks per stream | bytes per stream")
    for size, k in sorted(per.items(), key=lambda kv: -kv[0] * kv[1])[:top]:
        if abs(k) >= 0.05:
            print(f"{size:>10} | {k:6.2f} | {size * k:8.0f}")


main()
