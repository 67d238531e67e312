"""json_schema end to end against a reused jsonschema validator, and where crossgym's per-call time goes, in one run.

    OMP_NUM_THREADS=1 python bench/json_schema_overhead.py [--n 20000] [--json]

The completions are bench/verifiers.py's json_schema set (tool-call-like objects, 70% valid, ~25% failing the
schema, 5% truncated JSON). Per call, CPU time of this process, best of --repeat:

* baseline: json.loads + a reused jsonschema Draft202012Validator.is_valid (the issue's reference);
* reference: json.loads + a reused jsonschema-rs validator (crossgym's first pass for schemas in the agreed subset);
* crossgym end to end: JsonSchema.verify (input checks, deadline, strict JSON with the duplicate-key rule, by orjson
  where it reads the text as json does, the compiled schema, jsonschema-rs first where it agrees with
  fastjsonschema, the Verdict with the first error as its reason);
* the pieces: score() alone, loads_strict, the validator alone, Verdict.ok, and the verify() wrapper around a
  verifier whose score does nothing but return a Verdict.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import verifiers as vb  # noqa: E402  (bench/verifiers.py: the same completions as the throughput bench)

from crossgym.protocol.task import Completion, Task, Verdict, VerifierSpec  # noqa: E402
from crossgym.text import json_text  # noqa: E402
from crossgym.verifiers.base import BaseVerifier, Malformed  # noqa: E402
from crossgym.verifiers.json_schema import compile_schema  # noqa: E402


def per_call(fn: Any, n: int, repeat: int) -> float:
    """Microseconds of CPU per call, best of ``repeat``."""
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        gc.freeze()
        try:
            t0 = time.process_time()
            fn()
            best = min(best, time.process_time() - t0)
        finally:
            gc.unfreeze()
    return 1e6 * best / n


class Const(BaseVerifier):
    name = "const"

    def score(self, task: Task, completion: Completion) -> Verdict:
        return Verdict.ok(1.0, reason="ok")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    import random

    pairs = vb.gen("json_schema", args.n, random.Random(0))
    triples = vb.resolve(pairs)
    n, rep = len(triples), args.repeat
    texts = [c.text for _, c in pairs]
    objs = []
    for t in texts:
        try:
            objs.append(json.loads(t))
        except ValueError:
            pass
    vb.loop(triples[:200])
    rows: dict[str, float] = {}

    from jsonschema import Draft202012Validator

    ref = Draft202012Validator(vb.PERSON)

    def baseline() -> None:
        for t in texts:
            try:
                ref.is_valid(json.loads(t))
            except ValueError:
                pass

    rows["baseline: json.loads + jsonschema (reused)"] = per_call(baseline, n, rep)
    try:
        import jsonschema_rs
    except ImportError:
        pass
    else:
        rs = jsonschema_rs.validator_for(vb.PERSON)

        def reference() -> None:
            for t in texts:
                try:
                    rs.is_valid(json.loads(t))
                except ValueError:
                    pass

        rows["reference: json.loads + jsonschema-rs"] = per_call(reference, n, rep)
    rows["crossgym json_schema verify()"] = per_call(lambda: vb.loop(triples), n, rep)
    v = triples[0][0]
    tc = [(t, c) for _, t, c in triples]

    def score_only() -> None:
        for t, c in tc:
            try:
                v.score(t, c)
            except Malformed:
                pass

    rows["  score() alone"] = per_call(score_only, n, rep)

    def strict() -> None:
        for t in texts:
            try:
                json_text.loads_strict(t, unique_keys=True)
            except json_text.MalformedJSON:
                pass

    rows["  loads_strict (duplicate keys refused)"] = per_call(strict, n, rep)
    check = compile_schema(vb.PERSON, True)
    rows["  compiled validator alone"] = per_call(lambda: [check(o) for o in objs], len(objs), rep)
    k = 100_000
    rows["  Verdict.ok"] = per_call(lambda: [Verdict.ok(1.0, reason="valid") for _ in range(k)], k, rep)
    const, task, comp = Const(), Task(id="x", prompt="q", answer=None, verifier=VerifierSpec("const", {})), \
        Completion.from_text("{}")
    full = per_call(lambda: [const.verify(task, comp) for _ in range(k)], k, rep)
    rows["  verify() wrapper (without its score)"] = full - rows["  Verdict.ok"]
    base = rows["baseline: json.loads + jsonschema (reused)"]
    ours = rows["crossgym json_schema verify()"]
    if args.json:
        print(json.dumps({"us_per_call": rows, "end_to_end_vs_baseline": base / ours}, indent=1))
        return 0
    print(f"{'':46s} {'us/call':>8s} {'calls/s':>10s} {'baseline/this':>14s}")
    for name, us in rows.items():
        print(f"{name:46s} {us:8.2f} {1e6 / us:10,.0f} {base / us:13.1f}x")
    rsr = rows.get("reference: json.loads + jsonschema-rs")
    print(f"json_schema end to end = {base / ours:.1f}x the reused jsonschema validator"
          + (f", {rsr / ours:.2f}x json.loads + jsonschema-rs" if rsr else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
