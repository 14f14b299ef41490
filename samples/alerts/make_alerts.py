#!/usr/bin/env python3
"""Writes the first-steps sample's data: temperature readings from five devices, four a second
for 75 s, some out of order by up to 3 s (a sensor log as it arrives), as CSV with RFC 3339
times (readings.csv) and as JSON lines with epoch milliseconds (readings-ms.jsonl); each
device's alert threshold as a static table (thresholds.csv: device,threshold) and as a table
of versions without ends (threshold-versions.csv: valid_from,device,threshold, every device's
threshold lowered by one degree at 12:00:30). Deterministic: run it again and the files are
the same."""
import json
import random
from datetime import datetime, timedelta, timezone

HERE = __file__.rsplit("/", 1)[0]
rng = random.Random(42)
base = datetime(2024, 5, 1, 12, 0, 0, tzinfo=timezone.utc)
readings = []
for i in range(300):
    t = base + timedelta(milliseconds=250 * i)
    readings.append((t, f"d{i % 5}", round(20 + rng.random() * 10, 1)))
# Arrival order: each reading up to 3 s after its time.
arrived = sorted(readings, key=lambda r: r[0] + timedelta(seconds=rng.random() * 3))


def rfc3339(t):
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z")


with open(f"{HERE}/readings.csv", "w") as f:
    f.write("time,device,celsius\n")
    for t, d, c in arrived:
        f.write(f"{rfc3339(t)},{d},{c}\n")
with open(f"{HERE}/readings-ms.jsonl", "w") as f:
    for t, d, c in arrived:
        f.write(json.dumps({"ts": int(t.timestamp() * 1000), "device": d, "celsius": c}) + "\n")
with open(f"{HERE}/thresholds.csv", "w") as f:
    f.write("device,threshold\n")
    for i in range(5):
        f.write(f"d{i},{25 + i}\n")
with open(f"{HERE}/threshold-versions.csv", "w") as f:
    f.write("valid_from,device,threshold\n")
    for i in range(5):
        f.write(f"2024-05-01T11:00:00Z,d{i},{25 + i}\n")
    for i in range(5):
        f.write(f"2024-05-01T12:00:30Z,d{i},{24 + i}\n")
