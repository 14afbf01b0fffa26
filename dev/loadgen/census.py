#!/usr/bin/env python3
"""Live allocations per held stream, by jemalloc size class, from two orchestrator logs.

The orchestrator is a `--features jemalloc-stats` release build run with
`_RJEM_MALLOC_CONF=stats_interval:1048576,stats_interval_opts:Jadx` (jemalloc prints its
statistics as JSON about every MiB of allocation, per thread). Each log's held plateau is
one snapshot, and (big - small) / (N_big - N_small) is what one held stream keeps.

    dev/loadgen/census.py SMALL.log N_SMALL BIG.log N_BIG [TOP]

Which snapshot is the held plateau: the log has no count of open streams (bench.sh runs the
orchestrator with RUST_LOG=warn, so the log is jemalloc's JSON and little else), so the
plateau is recognised by the bytes allocated. While streams open, allocated grows (tens of KB
per stream); while they are held it stays level (and few snapshots are printed, since they
come with allocation); when they close it falls. The snapshots within 1 % of the log's most
allocated bytes are the top of that curve; the last of them (in log order) is taken: by then
every stream is open, and the opening's passing allocations (requests in flight, their
buffers), which can make an earlier snapshot the highest one, are over. The log's very last
snapshot is not used: it can come after the streams closed. (A snapshot taken as the first
streams close is still within 1 % of the plateau, so the figures are at most that far off.)

(docs/performance.md, "What a held stream costs", has the commands.)
"""
import json
import sys

USAGE = "usage: census.py SMALL.log N_SMALL BIG.log N_BIG [TOP]"

# Snapshots this close to the log's maximum of allocated bytes count as the held plateau.
PLATEAU_TOLERANCE = 0.01


def snapshots(path):
    """jemalloc's JSON statistics in the log at `path`, in log order."""
    with open(path, errors="replace") as log:
        text = log.read()
    dec = json.JSONDecoder()
    found = []
    i = 0
    while True:
        i = text.find('{"jemalloc"', i)
        if i < 0:
            return found
        try:
            doc, end = dec.raw_decode(text, i)
        except json.JSONDecodeError:
            i += 1
            continue
        found.append(doc["jemalloc"])
        i = end


def held_snapshot(path):
    """The held plateau's snapshot: the last one within PLATEAU_TOLERANCE of the maximum."""
    all_snapshots = snapshots(path)
    if not all_snapshots:
        raise SystemExit(f"{path}: no jemalloc statistics found (was the orchestrator run with _RJEM_MALLOC_CONF=...?)")
    most = max(j["stats"]["allocated"] for j in all_snapshots)
    return [j for j in all_snapshots if j["stats"]["allocated"] >= most * (1 - PLATEAU_TOLERANCE)][-1]


def plateau(path):
    held = held_snapshot(path)
    sizes = [b["size"] for b in held["arenas"]["bin"]] + [l["size"] for l in held["arenas"]["lextent"]]
    merged = held["stats.arenas"]["merged"]
    counts = [b["curregs"] for b in merged["bins"]] + [l["curlextents"] for l in merged["lextents"]]
    return held["stats"], dict(zip(sizes, counts))


def arguments(argv):
    if len(argv) not in (5, 6):
        raise SystemExit(USAGE)
    try:
        n_small, n_big = int(argv[2]), int(argv[4])
        top = int(argv[5]) if len(argv) > 5 else 30
    except ValueError as e:
        raise SystemExit(f"{USAGE}\nN_SMALL, N_BIG and TOP are whole numbers: {e}")
    if n_small == n_big:
        raise SystemExit(f"N_SMALL and N_BIG are both {n_small}: the two runs must hold different numbers of streams")
    return argv[1], n_small, argv[3], n_big, top


def main(argv):
    small, n_small, big, n_big, top = arguments(argv)
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


if __name__ == "__main__":
    main(sys.argv)
