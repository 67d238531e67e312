"""Differential fuzz: one (task, completion) scored through every reward path that runs in the base venv must give
the same (reward, passed, error kind) on each.

Paths: in process (``load_verifier(spec).verify``), ``verify_many``, serve ``/verify`` and ``/verify/batch``
(fastapi's TestClient), ``verify_batch`` on JSONL and on Parquet (the function ``crossgym verify-batch`` runs),
the TRL adapter's reward functions (TRL's dataset columns: the task JSON and the conversational completion), and
the rollout store (records written as eval writes them, read back, re-scored, and ``reverify`` on the file).

Cases are the frozen corpus's records per verifier, mutated by a seeded generator with awkward values: huge ints,
NaN, -0.0, 1e308, 0.1+0.2, lone surrogates, NUL, CRLF, BOM, RTL marks, long text, nested metadata, tuples for
lists, reversed dict keys, integer ids, odd tool-call arguments, empty prompts and completions, and parameters
spelled with their defaults written out.

    OMP_NUM_THREADS=1 .venv/bin/python bench/path_parity.py [--n 300] [--seed 0] [--verifier NAME ...]

Prints one line per verifier and each disagreement (the case, each path's verdict); exits 1 on any.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from crossgym.protocol.task import Completion, Task, Verdict

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "compat" / "corpus" / "verifiers"
VERIFIERS = ("exact_match", "numeric", "math", "multiple_choice", "json_schema", "json_match", "tool_call",
             "instructions", "code_tests", "composite")
#: code_tests runs a sandbox per case: few cases
FEW = {"code_tests": 12}

#: parameters written with their defaults (or another spelling of them): the verdict must not change
PARAM_SPELLINGS: dict[str, list[dict[str, Any]]] = {
    "exact_match": [{"extract": "auto", "case_sensitive": False}, {"normalize": "default", "whitespace": True}],
    "numeric": [{"rel_tol": 1e-6}, {"rel_tol": 0.000001, "extract": "auto"}, {"percent": "either"}],
    "math": [{"float_rounding": 6, "strict": True}, {"think": True, "numeric_precision": 15}],
    "multiple_choice": [{"extract": "auto"}, {"num_options": None}],
    "json_schema": [{"partial": False, "formats": "annotate"}, {"trusted_answers": False}],
    "json_match": [{"subset": False, "list_order": True}, {"rel_tol": 0, "abs_tol": 0.0},
                   {"reward": "all", "case_sensitive": True}],
    "tool_call": [{"order": False, "strings": "normalized"}, {"scope": "last", "reward": "all"}],
    "instructions": [{"reward": "fraction"}, {"think": True}],
    "code_tests": [{}],
    "composite": [{}],
}

#: parameters in other spellings (a float for an int, 0/1 for a bool, text for a bool): every path must agree
ODD_PARAMS: dict[str, list[dict[str, Any]]] = {
    "exact_match": [{"case_sensitive": 0}, {"case_sensitive": "false"}, {"whitespace": 1}],
    "numeric": [{"rel_tol": 0}, {"abs_tol": 1}, {"rel_tol": 1e-320}, {"abs_tol": None}],
    "math": [{"float_rounding": 6.0}, {"strict": 0}, {"think": None}],
    "multiple_choice": [{"num_options": 4.0}, {"num_options": 5}, {"num_options": True}],
    "json_schema": [{"partial": 1}, {"schema": None}, {"formats": "assert"}],
    "json_match": [{"rel_tol": 0.0, "abs_tol": 0}, {"subset": 1}, {"key_order": "false"}],
    "tool_call": [{"order": 0}, {"allow_extra_args": 1}, {"strings": "exact"}],
    "instructions": [{"reward": "all"}, {"think": 0}],
}

AWKWARD_TEXT = ["\ud800", "\x00", "\r\n", "\ufeff", "\u202e", "\u200f", "\u2066", "\x1b[31m", "\u0301", "\U0001F600",
                "\ufffd", "\x85", "\u2028"]
AWKWARD_VALUES: list[Any] = [2 ** 70, -2 ** 70, -0.0, 1e308, 0.1 + 0.2, 1e-320, float("nan"), float("inf"), 0, True,
                             None, "", "2**70", "1e308", "-0", "\ud800", "a\x00b", [], {}, [1, [2, [3]]],
                             {"b": 1, "a": [1.0, -0.0]}]


def load_seeds(name: str) -> list[tuple[dict[str, Any], Any]]:
    """The corpus records of ``name`` as (task dict, completion dict or text)."""
    out = []
    with (CORPUS / f"{name}.jsonl").open(encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            out.append((d["task"], d["completion"]))
    return out


def _reorder(value: Any, rng: random.Random) -> Any:
    """Dict keys reversed and lists made tuples, at random, all the way down."""
    if isinstance(value, dict):
        items = list(value.items())
        if rng.random() < 0.5:
            items.reverse()
        return {k: _reorder(v, rng) for k, v in items}
    if isinstance(value, list):
        items2 = [_reorder(v, rng) for v in value]
        return tuple(items2) if rng.random() < 0.3 else items2
    return value


def _mutate_text(text: str, rng: random.Random) -> str:
    op = rng.randrange(8)
    if op == 0:
        at = rng.randrange(len(text) + 1)
        return text[:at] + rng.choice(AWKWARD_TEXT) + text[at:]
    if op == 1:
        return text.replace("\n", "\r\n")
    if op == 2:
        return "\ufeff" + text
    if op == 3:
        return "\u202e" + text + "\u202c"
    if op == 4:
        return text + " " + "x" * rng.choice([4000, 65_000])
    if op == 5:
        return ""
    if op == 6:
        return text + rng.choice(AWKWARD_TEXT) * rng.randrange(1, 5)
    return text.replace(" ", rng.choice(["\u00a0", "\t", "  ", "\u3000"]))


def _awkward_answer(answer: Any, rng: random.Random) -> Any:
    """A new awkward answer: a nested value replaced by an awkward one, or the answer replaced whole."""
    if isinstance(answer, dict) and answer and rng.random() < 0.6:
        out = dict(answer)
        k = rng.choice(list(out))
        out[k] = _awkward_answer(out[k], rng)
        return out
    if isinstance(answer, list) and answer and rng.random() < 0.6:
        out2 = list(answer)
        i = rng.randrange(len(out2))
        out2[i] = _awkward_answer(out2[i], rng)
        return out2
    if isinstance(answer, str) and rng.random() < 0.5:
        return _mutate_text(answer, rng)
    return copy.deepcopy(rng.choice(AWKWARD_VALUES))


def _odd_tool_calls(rng: random.Random) -> list[dict[str, Any]]:
    args = rng.choice(['{"city": "Paris"}', '{"city": "Paris", "city": "Rome"}', '{"n": 1180591620717411303424}',
                       '{"n": NaN}', '{"n": -0.0}', '"Paris"', "[1, 2]", "", "{", "null", '{"a": "\\ud800"}',
                       '{"city": "Par\\u0000is"}', {"city": "Paris"}, {"n": 2 ** 70}, ["x"], None])
    call: dict[str, Any] = {"type": "function", "function": {"name": rng.choice(["get_weather", "", "x" * 300]),
                                                             "arguments": args}}
    if rng.random() < 0.5:
        call["id"] = rng.choice(["c1", "", 7])
    return [call]


def mutate(task: dict[str, Any], completion: Any, name: str, rng: random.Random
           ) -> tuple[dict[str, Any], Any, str]:
    """One mutated case and what was done to it."""
    task = copy.deepcopy(task)
    completion = copy.deepcopy(completion)
    done = []
    for _ in range(rng.randrange(1, 4)):
        op = rng.randrange(13)
        if op == 0:
            task["answer"] = _awkward_answer(task.get("answer"), rng)
            done.append("answer")
        elif op in (1, 2):
            msgs = completion["messages"] if isinstance(completion, dict) else None
            if msgs and isinstance(msgs[-1].get("content"), str):
                msgs[-1]["content"] = _mutate_text(msgs[-1]["content"], rng)
            elif isinstance(completion, str):
                completion = _mutate_text(completion, rng)
            done.append("text")
        elif op == 3:
            task["metadata"] = {"nested": {"deep": [1, {"x": [2 ** 70, -0.0, "\u202e"]}]}, "k": (1, 2)}
            done.append("metadata")
        elif op == 4:
            task["id"] = rng.choice([7, 2 ** 70, "7", "", "\ud800", 1.5])
            done.append("id")
        elif op == 5:
            task["answer"] = _reorder(task.get("answer"), rng)
            done.append("reorder")
        elif op == 6:
            spelled = rng.choice(PARAM_SPELLINGS.get(name) or [{}])
            spec = task["verifier"] if isinstance(task["verifier"], dict) else {"name": task["verifier"]}
            params = {**(spec.get("params") or {}), **spelled}
            items = list(params.items())
            rng.shuffle(items)
            task["verifier"] = {"params": dict(items), "name": spec["name"]}
            done.append("params")
        elif op == 7:
            task["prompt"] = rng.choice(["", [], [{"role": "user", "content": ""}],
                                         [{"role": "user", "content": "\ud800\x00\r\n"}]])
            done.append("prompt")
        elif op == 8:
            if rng.random() < 0.5:
                completion = rng.choice(["", {"messages": []}, {"messages": [{"role": "assistant", "content": ""}]}])
            else:
                text = completion if isinstance(completion, str) else \
                    (completion.get("messages") or [{}])[-1].get("content") or ""
                completion = text if isinstance(text, str) else ""
            done.append("completion")
        elif op == 10:
            spec = task["verifier"] if isinstance(task["verifier"], dict) else {"name": task["verifier"]}
            params = spec.get("params") or {}
            task["verifier"] = spec["name"] if not params and rng.random() < 0.5 else \
                {"name": spec["name"], "params": {**params, **rng.choice(ODD_PARAMS.get(name) or [{}])}} \
                if rng.random() < 0.7 else {"name": spec["name"], "params": params or None}
            done.append("spelling")
        elif op == 11:
            msgs = completion.get("messages") if isinstance(completion, dict) else None
            if msgs:
                m = msgs[-1]
                text = m.get("content") if isinstance(m.get("content"), str) else ""
                m["content"] = rng.choice([[{"type": "text", "text": text}], None,
                                           [{"type": "text", "text": text[:3]}, {"type": "text", "text": text[3:]}],
                                           text + "<|im_end|>", text + "</s><|endoftext|>"])
            done.append("content")
        elif op == 12:
            task["answer"] = rng.choice([float("nan"), float("inf"), -0.0, 2 ** 70, 1e308, 0.1 + 0.2,
                                         [float("nan")], {"x": float("nan")}, (1, 2), "NaN"])
            done.append("number")
        else:
            content = ""
            if isinstance(completion, dict) and completion.get("messages"):
                content = completion["messages"][-1].get("content") or ""
            completion = {"messages": [{"role": "assistant", "content": content, "tool_calls": _odd_tool_calls(rng)}]}
            done.append("tool_calls")
    return task, completion, "+".join(done)


# ---- verdict keys -----------------------------------------------------------------------------------------------

def key(v: Verdict | dict[str, Any] | None) -> tuple[Any, ...]:
    """(reward, passed, error kind): what must be equal on every path (NaN as its text, so it compares equal)."""
    if v is None:
        return ("missing",)
    if isinstance(v, dict):
        reward, passed, error = v.get("reward"), v.get("passed"), v.get("error")
    else:
        reward, passed, error = v.reward, v.passed, v.error
    kind = None if error is None else str(error).split(":", 1)[0]
    if isinstance(reward, float) and math.isnan(reward):
        reward = "nan"
    return (reward if reward is None else float(reward) if not isinstance(reward, str) else reward, passed, kind)


def refused(why: str) -> tuple[Any, ...]:
    return ("refused", why)


def _unwritable(v: tuple[Any, ...]) -> bool:
    """pyarrow cannot write the case (a lone surrogate, an int past 64 bits in a struct): not crossgym's path."""
    return v[0] == "refused" and str(v[1]).startswith("pyarrow:")


# ---- the paths --------------------------------------------------------------------------------------------------

def build(task_d: dict[str, Any], comp: Any) -> tuple[Task, Completion]:
    task = Task.from_dict(task_d)
    completion = Completion.from_text(comp) if isinstance(comp, str) else Completion.from_dict(comp)
    return task, completion


def path_inproc(pairs: Sequence[tuple[Task, Completion] | None]) -> list[tuple[Any, ...]]:
    from crossgym.api import load_verifier
    from crossgym.protocol.errors import CrossgymError

    out = []
    for p in pairs:
        if p is None:
            out.append(refused("task"))
            continue
        try:
            v = load_verifier(p[0].verifier)
        except CrossgymError:
            out.append(("unbuildable",))
            continue
        out.append(key(v.verify(*p)))
    return out


def path_many(pairs: Sequence[tuple[Task, Completion] | None]) -> list[tuple[Any, ...]]:
    from crossgym.verifiers.batch import verify_many

    ok = [p for p in pairs if p is not None]
    got = iter(verify_many(ok, workers=1))
    return [refused("task") if p is None else key(next(got)) for p in pairs]


def _body(doc: Any) -> bytes:
    """JSON as a client writes it: surrogates escaped (httpx's UTF-8 encoding refuses them), NaN as NaN."""
    return json.dumps(doc, ensure_ascii=True).encode()


def _post(client: Any, route: str, doc: Any) -> tuple[int, Any]:
    r = client.post(route, content=_body(doc), headers={"content-type": "application/json"})
    return r.status_code, r.json()


def _why(status: int, reply: Any) -> tuple[Any, ...]:
    err = reply.get("error", {}) if isinstance(reply, dict) else {}
    return refused(f"{status} {err.get('where')}: {err.get('what')}"[:160])


def path_serve(client: Any, cases: Sequence[tuple[dict[str, Any], Any]],
               pairs: Sequence[tuple[Task, Completion] | None], refusals: list[Any]) -> tuple[list[Any], list[Any]]:
    """/verify and /verify/batch. The case is posted as written; one the strict wire models refuse (documented:
    no coercion, Completion.to_dict's tool-call form) is noted in ``refusals`` and posted again in the protocol's
    own JSON form (``to_dict`` of what Task.from_dict read), whose verdict is compared."""
    single, bodies = [], []
    for (task_d, comp), pair in zip(cases, pairs, strict=True):
        status, reply = _post(client, "/verify", {"task": task_d, "completion": comp})
        body = {"task": task_d, "completion": comp}
        if status == 422 and pair is not None:
            refusals.append(_why(status, reply))
            body = {"task": pair[0].to_dict(), "completion": pair[1].to_dict()}
            status, reply = _post(client, "/verify", body)
        single.append(key(reply["verdict"]) if status == 200 else _why(status, reply))
        bodies.append(body)
    batch: list[Any] = []
    for i in range(0, len(bodies), 256):
        chunk = bodies[i:i + 256]
        status, reply = _post(client, "/verify/batch", {"items": chunk})
        if status == 200:
            batch.extend(key(v) for v in reply["verdicts"])
            continue
        for it in chunk:  # one bad item refuses its whole batch: score them one by one to see which
            status, reply = _post(client, "/verify/batch", {"items": [it]})
            batch.append(key(reply["verdicts"][0]) if status == 200 else _why(status, reply))
    return single, batch


def _verify_batch_file(path: Path, n: int, tmp: Path) -> list[Any]:
    from crossgym.protocol.errors import ConfigError
    from crossgym.serve.batch_cmd import verify_batch

    out = Path(tempfile.mkdtemp(dir=tmp)) / "out.jsonl"
    try:
        verify_batch(path, out=out, workers=1, progress=False)
    except ConfigError as exc:
        return [refused("file: " + str(exc)[:80])] * n
    docs = [json.loads(line) for line in out.read_text(encoding="utf-8").split("\n") if line]
    return [key(d["verdict"]) for d in docs]


def path_jsonl(cases: Sequence[tuple[dict[str, Any], Any]], tmp: Path) -> list[Any]:
    """verify-batch on one JSONL file of every case; when a bad record refuses the whole file, one file a case."""
    p = Path(tempfile.mkdtemp(dir=tmp)) / "all.jsonl"
    p.write_bytes(b"".join(_body({"task": t, "completion": c}) + b"\n" for t, c in cases))
    whole = _verify_batch_file(p, len(cases), tmp)
    if len(whole) == len(cases) and not whole[0][0] == "refused":
        return whole
    out = []
    for i, (task_d, comp) in enumerate(cases):
        p = tmp / f"c{i}.jsonl"
        p.write_bytes(_body({"task": task_d, "completion": comp}) + b"\n")
        out.extend(_verify_batch_file(p, 1, tmp))
    return out


def path_parquet(cases: Sequence[tuple[dict[str, Any], Any]], tmp: Path) -> list[Any]:
    """verify-batch on a Parquet file: task as a JSON string column, completion as text or JSON-free struct
    (Completion dicts as JSON strings would be text), one file per case."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = []
    for i, (task_d, comp) in enumerate(cases):
        p = tmp / f"c{i}.parquet"
        try:
            task_col = pa.array([json.dumps(task_d, ensure_ascii=True)])
            comp_col = pa.array([comp]) if isinstance(comp, str) else pa.array([json.loads(_body(comp))])
            pq.write_table(pa.table({"task": task_col, "completion": comp_col}), p)
        except (pa.ArrowException, ValueError, TypeError, UnicodeError, OverflowError) as exc:
            out.append(refused("pyarrow: " + type(exc).__name__))
            continue
        out.extend(_verify_batch_file(p, 1, tmp))
    return out


def path_trl(pairs: Sequence[tuple[Task, Completion] | None]) -> tuple[list[Any], list[Any]]:
    """The TRL adapter's reward functions on TRL's columns: each function's verdict (its observer) and the
    reward TRL sums (reward_weights; None left out), which must be the rule's: the verdict's reward, or 0.0 for
    an error."""
    from crossgym.adapters.trl.rewards import reward_functions
    from crossgym.adapters.trl.rows import TASK_COLUMN, task_rows
    from crossgym.scoring import RewardRule

    ok = [p for p in pairs if p is not None]
    tasks = [p[0] for p in ok]
    funcs, weights = reward_functions(RewardRule(), tasks)
    seen: dict[int, Verdict] = {}
    for f in funcs:
        f.observers.append(lambda _t, _c, vs, _r: seen.update({i: v for i, v in enumerate(vs) if v is not None}))
    rows = task_rows(tasks)
    completions = [[m.to_dict() for m in p[1].messages] for p in ok]
    columns = [f(prompts=[r["prompt"] for r in rows], completions=completions,
                 **{TASK_COLUMN: [r[TASK_COLUMN] for r in rows]}) for f in funcs]
    verdicts, rewards = [], []
    it = iter(range(len(ok)))
    for p in pairs:
        if p is None:
            verdicts.append(refused("task"))
            rewards.append(refused("task"))
            continue
        i = next(it)
        verdicts.append(key(seen.get(i)))
        total = sum(w * c[i] for w, c in zip(weights, columns, strict=True) if c[i] is not None)
        rewards.append(total)
    return verdicts, rewards


def path_store(pairs: Sequence[tuple[Task, Completion] | None], verdicts: Sequence[Verdict | None], tmp: Path
               ) -> tuple[list[Any], list[Any], dict[str, Any]]:
    """Records written as eval writes them, read back: the stored verdict, and the read-back pair re-scored;
    and reverify's report on the file."""
    from crossgym.api import load_verifier
    from crossgym.scoring import Provenance
    from crossgym.scoring.drift import reverify
    from crossgym.scoring.records import append_records, read_rollouts, rollout_record

    path = tmp / "rollouts.jsonl"
    path.unlink(missing_ok=True)
    idx = [i for i, (p, v) in enumerate(zip(pairs, verdicts, strict=True)) if p is not None and v is not None]
    recs = []
    for i in idx:
        task, comp = pairs[i]  # type: ignore[misc]
        prov = Provenance.new(task.verifier, load_verifier(task.verifier), source="eval")
        recs.append(rollout_record(task, comp, verdicts[i], provenance=prov))  # type: ignore[arg-type]
    append_records(path, recs)
    back = read_rollouts(path)
    stored: list[Any] = [refused("task")] * len(pairs)
    again: list[Any] = [refused("task")] * len(pairs)
    for i, r in zip(idx, back, strict=True):
        stored[i] = key(r.verdict)
        again[i] = key(load_verifier(r.task.verifier).verify(r.task, r.completion))
    report = reverify(path, workers=1)
    return stored, again, report


# ---- the run ----------------------------------------------------------------------------------------------------

def cases_for(name: str, n: int, rng: random.Random) -> list[tuple[dict[str, Any], Any, str]]:
    seeds = load_seeds(name)
    out = [(t, c, "seed") for t, c in seeds[: max(1, n // 4)]]
    while len(out) < n:
        t, c = rng.choice(seeds)
        out.append(mutate(t, c, name, rng))
    return out[:n]


def run_verifier(name: str, n: int, seed: int, client: Any, tmp: Path,
                 paths: Sequence[str] = ("verify_many", "serve", "serve_batch", "jsonl", "parquet", "trl", "store"),
                 ) -> list[dict[str, Any]]:
    """Every path's key per case; the disagreements (with the case) as dicts."""
    rng = random.Random(f"{seed}:{name}")
    cases = cases_for(name, n, rng)
    pairs: list[tuple[Task, Completion] | None] = []
    wire: list[tuple[dict[str, Any], Any]] = []
    for task_d, comp, _ in cases:
        try:
            pairs.append(build(task_d, comp))
        except (ValueError, KeyError, TypeError):
            pairs.append(None)
        wire.append((task_d, comp))
    got: dict[str, list[Any]] = {"inproc": path_inproc(pairs)}
    refusals: list[Any] = []
    runners: dict[str, Callable[[], None]] = {
        "verify_many": lambda: got.__setitem__("verify_many", path_many(pairs)),
        "serve": lambda: got.update(zip(("serve", "serve_batch"), path_serve(client, wire, pairs, refusals),
                                        strict=True)),
        "jsonl": lambda: got.__setitem__("jsonl", path_jsonl(wire, tmp)),
        "parquet": lambda: got.__setitem__("parquet", path_parquet(wire, tmp)),
        "trl": lambda: got.update(zip(("trl", "trl_reward"), path_trl(pairs), strict=True)),
    }
    for p in paths:
        if p in runners:
            runners[p]()
    if "store" in paths:
        from crossgym.api import load_verifier
        from crossgym.protocol.errors import CrossgymError

        vs: list[Verdict | None] = []
        for p in pairs:
            try:
                vs.append(None if p is None else load_verifier(p[0].verifier).verify(*p))
            except CrossgymError:
                vs.append(None)
        stored, again, report = path_store(pairs, vs, tmp)
        got["store"], got["store_rescored"] = stored, again
        if report["changed"]:
            got["reverify"] = [("drift", report["changed"])] + [None] * (len(pairs) - 1)
    bad = []
    for i, (task_d, comp, how) in enumerate(cases):
        ref = got["inproc"][i]
        if ref == ("unbuildable",):  # documented: load_verifier raises, /verify 422s, batches score it `exception`
            got_i = {p: v[i] for p, v in got.items() if p != "inproc"}
            if all(v in ((0.0, False, "exception"), refused("task"), None) or p == "trl_reward"
                   or (p == "serve" and v[0] == "refused" and str(v[1]).startswith("422 body.task.verifier"))
                   for p, v in got_i.items()):
                continue
        row = {p: v[i] for p, v in got.items() if v[i] is not None}
        if "trl_reward" in row and ref and ref[0] not in ("refused", "unbuildable", "missing"):
            expected = 0.0 if ref[2] in ("exception", "timeout") else ref[0]
            row["trl_reward"] = ("ok",) if row["trl_reward"] == expected or (
                expected == "nan" and isinstance(row["trl_reward"], float) and math.isnan(row["trl_reward"])) \
                else ("reward", row["trl_reward"], "expected", expected)
        else:
            row.pop("trl_reward", None)
        differ = {p: v for p, v in row.items() if p != "trl_reward" and v != ref and not _unwritable(v)} | \
            ({"trl_reward": row["trl_reward"]} if row.get("trl_reward", ("ok",)) != ("ok",) else {})
        if differ:
            bad.append({"verifier": name, "how": how, "inproc": ref, "differ": differ,
                        "task": task_d, "completion": comp})
    if refusals:
        bad.append({"verifier": name, "refusals": refusals})
    return bad


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--verifier", action="append")
    ap.add_argument("--show", type=int, default=3, help="disagreements shown per verifier")
    args = ap.parse_args(argv)
    from fastapi.testclient import TestClient

    from crossgym.serve.app import create_app
    from crossgym.serve.settings import ServeSettings

    total = 0
    with TestClient(create_app(ServeSettings())) as client, tempfile.TemporaryDirectory() as d:
        for name in args.verifier or VERIFIERS:
            started = time.perf_counter()
            n = min(args.n, FEW.get(name, args.n))
            found = run_verifier(name, n, args.seed, client, Path(d))
            bad = [b for b in found if "refusals" not in b]
            for b in found:
                if "refusals" in b:
                    print(f"{name}: serve refused {len(b['refusals'])} cases as written (posted again as to_dict):")
                    for why, count in Counter(r[1] for r in b["refusals"]).most_common():
                        print(f"   {count} x {ascii(why)}")
            total += len(bad)
            print(f"{name}: {n} cases, {len(bad)} disagreements, {time.perf_counter() - started:.1f}s", flush=True)
            for b in bad[: args.show]:
                print("  ", ascii({k: b[k] for k in ("how", "inproc", "differ")}))
                print("     task:", ascii(b["task"])[:400])
                print("     completion:", ascii(b["completion"])[:300])
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
