#!/usr/bin/env python3
"""Writes samples/data/sensors.jsonl: the recorded arrival log of the headline sample.

Two streams, one line per item in the order they arrived (each line names its `stream`):
- `readings`: 20 devices report a raw temperature once a second for 30 minutes (36,000 points).
  About 3% arrive out of order (up to 2 s after later readings, inside the sample's 3 s grace
  period) and about 0.4% arrive 5 to 20 s late (dropped: their CTI has passed).
- `calibration`: each device's calibration (factor and offset), an edge event valid until the
  next one. It changes rarely: every 8 to 12 minutes per device. Some changes are logged 10 to
  40 s after they took effect; those edges arrive late, and the Adjust policy moves their start
  up to the stream's current CTI.
Deterministic (seeded): running it again writes the same file."""
import json
import random
from datetime import datetime, timedelta, timezone

rng = random.Random(20261129)
BASE = datetime(2026, 11, 29, 8, 0, 0, tzinfo=timezone.utc)
DEVICES = [f"dev-{i:02d}" for i in range(20)]
SECONDS = 30 * 60


def ts(seconds):
    return (BASE + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# Calibration versions per device: (start second, factor, offset).
versions = {}
for d in DEVICES:
    t, vs = 0, []
    while t < SECONDS:
        vs.append((t, round(rng.uniform(0.95, 1.05), 3), round(rng.uniform(-0.5, 0.5), 2)))
        t += rng.randint(8 * 60, 12 * 60)
    versions[d] = vs

arrivals = []  # (arrival second, order, line)
order = 0


def add(at, line):
    global order
    arrivals.append((at, order, line))
    order += 1


for d, vs in versions.items():
    for i, (start, factor, offset) in enumerate(vs):
        payload = {"device": d, "factor": factor, "offset": offset}
        logged = start if i == 0 else start + (rng.randint(10, 40) if rng.random() < 0.3 else 0)
        if i == 0:
            logged = -1  # known before the first reading
        if i > 0:
            prev_start, pf, po = vs[i - 1]
            prev = {"device": d, "factor": pf, "offset": po}
            add(logged, {"stream": "calibration", "kind": "end", "start": ts(prev_start), "end": ts(start), "payload": prev})
        add(logged, {"stream": "calibration", "kind": "start", "start": ts(start), "payload": payload})

for s in range(SECONDS):
    for k, d in enumerate(DEVICES):
        t = s + k / 20.0
        raw = round(20 + 5 * (k % 4) + rng.gauss(0, 0.3), 2)
        at = t
        r = rng.random()
        if r < 0.03:
            at = t + rng.uniform(0.2, 2.0)  # out of order, within the grace period
        elif r < 0.034:
            at = t + rng.uniform(5, 20)  # late
        add(at, {"stream": "readings", "kind": "point", "start": ts(t), "payload": {"device": d, "raw": raw}})

arrivals.sort(key=lambda a: (a[0], a[1]))
with open(__file__.rsplit("/", 1)[0] + "/sensors.jsonl", "w") as f:
    for _, _, line in arrivals:
        f.write(json.dumps(line, separators=(",", ":")) + "\n")
