#!/usr/bin/env python3
"""Writes samples/data/readings.jsonl: temperature readings from three devices, one a second,
in arrival order. Some arrive out of order by up to 3 s (within the sample's 5 s grace period),
one arrives 12 s late (dropped), and one line is malformed (skipped and reported).
Deterministic: run it again and the file is the same."""
import json
import random
from datetime import datetime, timedelta, timezone

rng = random.Random(7)
base = datetime(2026, 11, 29, 8, 0, 0, tzinfo=timezone.utc)
rows = []
for i in range(36):
    device = ["boiler", "cellar", "attic"][i % 3]
    temp = round({"boiler": 61.0, "cellar": 12.5, "attic": 18.0}[device] + rng.uniform(-1, 1), 1)
    rows.append((i, device, temp))

def line(sec, device, temp):
    t = (base + timedelta(seconds=sec)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return json.dumps({"kind": "point", "start": t, "payload": {"device": device, "temperature": temp}})

out = [line(*r) for r in rows]
# Out of order: swap a few neighbours (at most 3 s apart).
for a, b in [(4, 6), (13, 14), (20, 23), (29, 30)]:
    out[a], out[b] = out[b], out[a]
# One reading arrives 12 s after its time: later than the grace period allows.
out.insert(27, line(14, "cellar", 99.9))
# One malformed line.
out.insert(9, '{"kind":"point","start":"2026-11-29T08:00:09Z","payload":{"device":"attic","temperature":"warm"}}')
with open(__file__.rsplit("/", 1)[0] + "/readings.jsonl", "w") as f:
    f.write("\n".join(out) + "\n")
