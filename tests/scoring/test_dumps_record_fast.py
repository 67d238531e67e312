"""dumps_record's one-pass path writes exactly the line the NaN walk wrote, for every kind of record."""

from __future__ import annotations

import json
import math
import random
from collections import OrderedDict
from pathlib import Path

from crossgym.scoring import records
from crossgym.scoring.failure import with_fault


def walked(record):
    """The line as dumps_record wrote it before its fast path: walk NaN to null first, then dump."""
    doc = records._nan_to_none(dict(record))
    if isinstance(doc.get("verdict"), dict):
        doc["verdict"] = with_fault(doc["verdict"])
    text = json.dumps(doc, ensure_ascii=False, default=str)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(doc, ensure_ascii=True, default=str)
    return text + "\n"


def value(rng, depth=0):
    r = rng.random()
    if depth > 3 or r < 0.4:
        return rng.choice([1, -2.5, math.nan, math.inf, -math.inf, None, True, "x", "héllo", "bad \ud800", 0.1,
                           (1, math.nan), Path("/tmp/p"), 10**30])
    if r < 0.7:
        return [value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return (OrderedDict if rng.random() < 0.2 else dict)(
        (rng.choice("abc") + str(i), value(rng, depth + 1)) for i in range(rng.randint(0, 3)))


def test_fast_line_equals_the_walked_line():
    rng = random.Random(27)
    for i in range(3000):
        rec = {"task": value(rng), "completion": value(rng), "extra": value(rng)}
        if i % 2:
            rec["verdict"] = {"reward": rng.choice([1.0, 0.0, math.nan, math.inf]), "passed": rng.random() < 0.5,
                              "reason": rng.choice(["ok", "bad \ud800"]),
                              "error": rng.choice([None, "timeout", "exception: x", "malformed: y"])}
        assert records.dumps_record(rec) == walked(rec), rec
