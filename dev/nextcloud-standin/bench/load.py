"""Load benchmark: N concurrent clients against a fresh, seeded stand-in; prints figures.

    .venv/bin/python bench/load.py [--clients 50] [--requests 40]

Each client mixes PROPFIND Depth 1, GET of a shared file and a SEARCH by name, as bob.
It only reports throughput and latency percentiles; it asserts nothing about speed.
Traffic goes to 127.0.0.1 only, and the run is bounded by --clients x --requests.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import requests

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE / "tests"))
from conftest import SEED, Standin  # noqa: E402

SEARCH = ('<?xml version="1.0"?><d:searchrequest xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:basicsearch>'
          "<d:select><d:prop><oc:fileid/></d:prop></d:select><d:from><d:scope><d:href>/files/bob</d:href>"
          "<d:depth>infinity</d:depth></d:scope></d:from><d:where><d:like><d:prop><d:displayname/></d:prop>"
          "<d:literal>%.md</d:literal></d:like></d:where></d:basicsearch></d:searchrequest>")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--requests", type=int, default=40)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        s = Standin(Path(tmp) / "state")
        try:
            creds = Path(tmp) / "creds"
            creds.write_text(f"NC_URL={s.url}\nALICE_APP={s.passwords['alice']}\nBOB_APP={s.passwords['bob']}\n")
            subprocess.run([str(SEED), str(creds)], check=True, stdout=subprocess.DEVNULL, env=os.environ)
            lat: list[float] = []
            errors: list[int] = []
            lock = threading.Lock()

            def client() -> None:
                session = requests.Session()
                session.auth = s.auth("bob")
                for k in range(a.requests):
                    t = time.monotonic()
                    if k % 3 == 0:
                        r = session.request("PROPFIND", s.dav("bob"), headers={"Depth": "1"}, timeout=30)
                    elif k % 3 == 1:
                        r = session.get(s.dav("bob", "Shared-with-bob/plan.md"), timeout=30)
                    else:
                        r = session.request("SEARCH", f"{s.url}/remote.php/dav/", data=SEARCH, timeout=30)
                    with lock:
                        lat.append(time.monotonic() - t)
                        if r.status_code not in (200, 207):
                            errors.append(r.status_code)

            threads = [threading.Thread(target=client) for _ in range(a.clients)]
            start = time.monotonic()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            elapsed = time.monotonic() - start
        finally:
            s.stop()
    lat.sort()
    pct = lambda p: lat[min(len(lat) - 1, int(len(lat) * p))] * 1000  # noqa: E731
    print(f"clients={a.clients} requests={len(lat)} elapsed={elapsed:.2f}s throughput={len(lat) / elapsed:.0f} req/s")
    print(f"latency p50={pct(0.50):.0f}ms p90={pct(0.90):.0f}ms p99={pct(0.99):.0f}ms max={lat[-1] * 1000:.0f}ms")
    print(f"errors={len(errors)} {sorted(set(errors))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
