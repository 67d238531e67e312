"""`crossgym compare RUN_A RUN_B`: two evals on the same tasks (before and after training, two models, two
settings), paired per task: the change of pass rate and mean reward with a paired bootstrap interval, overall and
per source; the tasks that flipped (pass -> fail, fail -> pass) with both completions side by side; the tasks only
one run has.

A run is an eval output directory (its rollouts.jsonl, and metrics.json naming the settings it reports) or a
rollouts.jsonl an eval wrote. Records are streamed through crossgym.scoring (iter_rollouts, provenance_of) in one
pass, summarised per task for each settings hash the file holds: memory grows with the number of tasks, not of
samples.
"""

from __future__ import annotations

import html as _html
import json
import math
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crossgym.eval import stats
from crossgym.eval.metrics import task_source
from crossgym.protocol.episode import Rollout
from crossgym.protocol.errors import ConfigError
from crossgym.scoring.records import iter_rollouts, provenance_of

#: a task counts as solved in a run when at least this share of its samples passed
SOLVED = 0.5
#: flips listed per direction (all are counted)
MAX_FLIPS = 50
EXCERPT = 1500
METHOD = (f"paired percentile bootstrap over the shared tasks ({stats.RESAMPLES} resamples with replacement, "
          f"seed {stats.SEED}): the mean of per-task differences B - A")


@dataclass
class TaskResult:
    """One task's samples in one run, summarised as they stream by: counts and reward sums, and of the rollouts
    only the first, the first that passed and the first that failed (what a comparison shows), so memory is
    per task, not per sample."""

    n: int = 0
    passes: int = 0
    reward_sum: float = 0.0
    rewarded: int = 0
    first: Rollout | None = None
    first_pass: Rollout | None = None
    first_fail: Rollout | None = None

    def add(self, r: Rollout) -> None:
        self.n += 1
        passed = bool(r.verdict.passed)
        self.passes += passed
        if not math.isnan(r.verdict.reward):
            self.reward_sum += r.verdict.reward
            self.rewarded += 1
        self.first = self.first or r
        if passed and self.first_pass is None:
            self.first_pass = r
        elif not passed and self.first_fail is None:
            self.first_fail = r

    @property
    def task_rollout(self) -> Rollout:
        assert self.first is not None, "a TaskResult holds at least one rollout"
        return self.first

    @property
    def pass_rate(self) -> float:
        return self.passes / self.n

    @property
    def mean_reward(self) -> float | None:
        return self.reward_sum / self.rewarded if self.rewarded else None

    @property
    def solved(self) -> bool:
        return self.pass_rate >= SOLVED

    def pick(self, passed: bool) -> Rollout:
        """The first sample that passed (or failed), else the first."""
        return (self.first_pass if passed else self.first_fail) or self.task_rollout


@dataclass
class EvalRun:
    path: Path
    file: Path
    tasks: dict[str, TaskResult]
    model: str | None
    config_hash: str | None

    def describe(self) -> dict[str, Any]:
        return {"path": str(self.path), "model": self.model, "config_hash": self.config_hash,
                "n_tasks": len(self.tasks), "n_rollouts": sum(t.n for t in self.tasks.values())}


def _config_hash(r: Rollout) -> str | None:
    prov = provenance_of(r)
    h = prov.extra.get("config_hash")
    if h:
        return str(h)
    return prov.key.rsplit("@", 1)[1] if prov.key and "@" in prov.key else None


def load_run(path: str | Path) -> EvalRun:
    """An eval run from its output directory or its rollouts.jsonl; ConfigError (one line) when it is not one."""
    from crossgym.eval.run import METRICS_FILE, ROLLOUTS_FILE

    p = Path(path)
    if p.is_dir():
        file = p / ROLLOUTS_FILE
        if not file.is_file():
            raise ConfigError(f"not an eval run: no {ROLLOUTS_FILE} in it", where=str(p),
                              fix="pass the --output-dir of a `crossgym eval`, or its rollouts.jsonl")
    elif p.is_file():
        file = p
    else:
        raise ConfigError("no such eval run", where=str(p),
                          fix="pass the --output-dir of a `crossgym eval`, or its rollouts.jsonl")
    from crossgym.config.files import check_user_encoding
    from crossgym.scoring.parquet import is_parquet

    if not is_parquet(file):  # (Parquet is binary: its reader says when it is not Parquet)
        check_user_encoding(file)  # UTF-16 has no newline bytes to split on: one line naming the encoding
    by_hash: dict[str | None, dict[str, TaskResult]] = {}  # per settings: their rollouts summarised per task
    models: dict[str | None, str | None] = {}
    sources: set[str] = set()
    last: str | None = None
    try:
        for r in iter_rollouts(file):
            prov = provenance_of(r)
            last = _config_hash(r)
            by_hash.setdefault(last, {}).setdefault(r.task.id, TaskResult()).add(r)
            models[last] = models.get(last) or prov.model
            sources.add(prov.source)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read rollouts: {exc}", where=str(file)) from None
    if not by_hash:
        raise ConfigError("not an eval run: no rollout records in it", where=str(file),
                          fix="pass the rollouts.jsonl a `crossgym eval` wrote")
    if sources != {"eval"}:
        other = ", ".join(sorted(sources - {"eval"}))
        raise ConfigError(f"not an eval run: it holds {other} rollouts", where=str(file),
                          fix="compare the output of two `crossgym eval` runs (evaluate a checkpoint first)")
    wanted: str | None = None
    metrics_file = file.parent / METRICS_FILE
    if metrics_file.is_file():
        try:
            wanted = (json.loads(metrics_file.read_text(encoding="utf-8")).get("run") or {}).get("config_hash")
        except (OSError, ValueError, AttributeError, RecursionError):
            wanted = None
    if not isinstance(wanted, str) or wanted not in by_hash:
        wanted = last  # no metrics.json (or a stale or broken one): the settings of the latest rollouts
        wanted = last
    return EvalRun(path=p, file=file, tasks=by_hash[wanted], model=models[wanted], config_hash=wanted)


def _same_task(a: Rollout, b: Rollout) -> bool:
    da, db = a.task.to_dict(), b.task.to_dict()
    return all(da.get(k) == db.get(k) for k in ("prompt", "answer", "verifier"))


def _delta(values_a: Sequence[float | None], values_b: Sequence[float | None]) -> dict[str, Any]:
    pairs = [(a, b) for a, b in zip(values_a, values_b, strict=True) if a is not None and b is not None]
    if not pairs:
        return {"a": None, "b": None, "delta": None, "low": None, "high": None, "n_tasks": 0}
    diffs: list[float | None] = [b - a for a, b in pairs]
    bounds = stats.bootstrap(len(diffs), {"d": stats.mean_stat(diffs)})["d"]
    mean_a = sum(a for a, _ in pairs) / len(pairs)
    mean_b = sum(b for _, b in pairs) / len(pairs)
    low, high = bounds if bounds is not None else (None, None)
    return {"a": mean_a, "b": mean_b, "delta": mean_b - mean_a, "low": low, "high": high, "n_tasks": len(pairs),
            "significant": low is not None and high is not None and (low > 0 or high < 0)}


def _side(r: Rollout) -> dict[str, Any]:
    text = r.completion.text
    return {"completion": text[:EXCERPT] + (f"... [{len(text) - EXCERPT} more chars]" if len(text) > EXCERPT else ""),
            "reward": None if math.isnan(r.verdict.reward) else r.verdict.reward, "passed": r.verdict.passed, "reason": r.verdict.reason[:300],
            "error": r.verdict.error}


def compare_runs(a: EvalRun, b: EvalRun) -> dict[str, Any]:
    """The comparison document (`crossgym compare --json`)."""
    shared: list[str] = []
    differing: list[str] = []
    for tid in a.tasks:
        if tid in b.tasks:
            (shared if _same_task(a.tasks[tid].task_rollout, b.tasks[tid].task_rollout) else differing).append(tid)
    if not shared:
        raise ConfigError("the two runs share no tasks" + (f" ({len(differing)} ids match but their prompts, "
                                                           "answers or verifiers differ)" if differing else ""),
                          where=f"{a.path} vs {b.path}", fix="compare two evals of the same task list")
    source = {tid: task_source(b.tasks[tid].task_rollout) for tid in shared}

    def block(ids: list[str]) -> dict[str, Any]:
        return {"n_tasks": len(ids),
                "pass_rate": _delta([a.tasks[t].pass_rate for t in ids], [b.tasks[t].pass_rate for t in ids]),
                "mean_reward": _delta([a.tasks[t].mean_reward for t in ids], [b.tasks[t].mean_reward for t in ids]),
                "improved": sum(1 for t in ids if b.tasks[t].pass_rate > a.tasks[t].pass_rate),
                "worsened": sum(1 for t in ids if b.tasks[t].pass_rate < a.tasks[t].pass_rate)}

    by_source: dict[str, list[str]] = defaultdict(list)
    for tid in shared:
        by_source[source[tid]].append(tid)
    flips: dict[str, list[dict[str, Any]]] = {"pass_to_fail": [], "fail_to_pass": []}
    for tid in shared:
        ta, tb = a.tasks[tid], b.tasks[tid]
        if ta.solved == tb.solved:
            continue
        direction = "pass_to_fail" if ta.solved else "fail_to_pass"
        flips[direction].append({"task": tid, "source": source[tid], "pass_rate_a": ta.pass_rate,
                                 "pass_rate_b": tb.pass_rate, "a": _side(ta.pick(ta.solved)),
                                 "b": _side(tb.pick(tb.solved))})
    per_task = [{"task": t, "source": source[t], "n_a": a.tasks[t].n, "n_b": b.tasks[t].n,
                 "pass_rate_a": a.tasks[t].pass_rate, "pass_rate_b": b.tasks[t].pass_rate,
                 "mean_reward_a": a.tasks[t].mean_reward, "mean_reward_b": b.tasks[t].mean_reward} for t in shared]
    return {
        "a": a.describe(), "b": b.describe(),
        "shared_tasks": len(shared),
        "only_in_a": sorted(set(a.tasks) - set(b.tasks)), "only_in_b": sorted(set(b.tasks) - set(a.tasks)),
        "differing_tasks": sorted(differing),
        "method": METHOD, "confidence": stats.CONFIDENCE, "solved_threshold": SOLVED,
        "overall": block(shared),
        "by_source": {s: block(ids) for s, ids in sorted(by_source.items())},
        "flips": {"pass_to_fail": len(flips["pass_to_fail"]), "fail_to_pass": len(flips["fail_to_pass"])},
        "pass_to_fail": flips["pass_to_fail"][:MAX_FLIPS], "fail_to_pass": flips["fail_to_pass"][:MAX_FLIPS],
        "per_task": per_task,
    }


# ---------------------------------------------------------------- output
def _f(v: Any, signed: bool = False) -> str:
    if v is None:
        return "-"
    return f"{v:+.3f}" if signed else f"{v:.3f}"


def _delta_text(d: dict[str, Any]) -> str:
    if d["delta"] is None:
        return "-"
    mark = "" if d["significant"] else ", within noise"
    return f"{_f(d['a'])} -> {_f(d['b'])}  delta {_f(d['delta'], True)} [{_f(d['low'], True)}, {_f(d['high'], True)}{mark}]"


def summary_lines(doc: dict[str, Any]) -> list[str]:
    a, b, o = doc["a"], doc["b"], doc["overall"]
    lines = [f"A {a['path']} ({a['model'] or '?'}, {a['n_tasks']} tasks)  vs  B {b['path']} ({b['model'] or '?'}, "
             f"{b['n_tasks']} tasks): {doc['shared_tasks']} shared tasks",
             f"  pass rate   {_delta_text(o['pass_rate'])}",
             f"  mean reward {_delta_text(o['mean_reward'])}",
             f"  (95% {doc['method']})",
             f"  flipped fail->pass {doc['flips']['fail_to_pass']}, pass->fail {doc['flips']['pass_to_fail']} "
             f"(solved: at least {doc['solved_threshold']:.0%} of a task's samples passed); "
             f"improved {o['improved']}, worsened {o['worsened']}"]
    for name, g in doc["by_source"].items():
        lines.append(f"  source {name} ({g['n_tasks']} tasks): pass rate {_delta_text(g['pass_rate'])}")
    for direction, label in (("pass_to_fail", "pass->fail"), ("fail_to_pass", "fail->pass")):
        for fl in doc[direction][:5]:
            lines.append(f"  {label} {fl['task']} [{fl['source']}]: A {fl['a']['completion'][:60]!r} | "
                         f"B {fl['b']['completion'][:60]!r}" + (f" ({fl['b']['reason'][:80]})"
                                                                  if fl["b"]["reason"] else ""))
    for key, label in (("only_in_a", "only in A"), ("only_in_b", "only in B"), ("differing_tasks", "differ")):
        if doc[key]:
            more = f" (+{len(doc[key]) - 10} more)" if len(doc[key]) > 10 else ""
            lines.append(f"  {label}: {len(doc[key])} tasks: {', '.join(doc[key][:10])}{more}")
    return lines


def write_html(doc: dict[str, Any], path: str | Path) -> Path:
    """The comparison as one HTML page: deltas with intervals, per source, flips side by side."""
    e = _html.escape

    def drow(label: str, d: dict[str, Any]) -> str:
        return (f"<tr><td>{e(label)}</td><td>{_f(d['a'])}</td><td>{_f(d['b'])}</td><td><b>{_f(d['delta'], True)}"
                f"</b></td><td>[{_f(d['low'], True)}, {_f(d['high'], True)}]</td>"
                f"<td>{'yes' if d.get('significant') else 'no (within noise)'}</td></tr>")

    head = ("<tr><th></th><th>A</th><th>B</th><th>B - A</th><th>95% interval</th><th>beyond noise</th></tr>")
    rows = drow("pass rate", doc["overall"]["pass_rate"]) + drow("mean reward", doc["overall"]["mean_reward"])
    src_rows = "".join(drow(f"{name} ({g['n_tasks']} tasks): pass rate", g["pass_rate"])
                       + drow(f"{name}: mean reward", g["mean_reward"]) for name, g in doc["by_source"].items())

    def side(s: dict[str, Any]) -> str:
        status = "pass" if s["passed"] else e(s["error"] or "fail")
        return (f"<p>reward {_f(s['reward'])} &middot; {status}</p><pre>{e(s['completion'])}</pre>"
                f"<p><small>{e(s['reason'])}</small></p>")

    flip_parts = []
    for direction, label in (("pass_to_fail", "pass &rarr; fail"), ("fail_to_pass", "fail &rarr; pass")):
        items = "".join(f"<tr><td>{e(fl['task'])}<br><small>{e(fl['source'])}<br>pass rate {fl['pass_rate_a']:.2f} "
                        f"&rarr; {fl['pass_rate_b']:.2f}</small></td><td>{side(fl['a'])}</td><td>{side(fl['b'])}</td>"
                        f"</tr>" for fl in doc[direction])
        flip_parts.append(f"<h2>{label}: {doc['flips'][direction]} tasks</h2>"
                          + (f"<table><tr><th>task</th><th>A</th><th>B</th></tr>{items}</table>" if items else ""))
    only = "".join(f"<p><b>{label}</b> ({len(doc[key])}): {e(', '.join(doc[key]))}</p>"
                   for key, label in (("only_in_a", "Only in A"), ("only_in_b", "Only in B"),
                                      ("differing_tasks", "Same id, different task")) if doc[key])
    a, b = doc["a"], doc["b"]
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>crossgym compare</title>
<style>body{{font-family:sans-serif;max-width:1200px;margin:2em auto;color:#222}}table{{border-collapse:collapse;
margin:1em 0}}td,th{{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}}pre{{background:#f6f6f6;
padding:6px;white-space:pre-wrap;max-width:520px}}</style></head><body>
<h1>crossgym compare</h1>
<p><b>A</b> {e(a['path'])} ({e(str(a['model'] or '?'))}, {a['n_tasks']} tasks) &nbsp; <b>B</b> {e(b['path'])}
({e(str(b['model'] or '?'))}, {b['n_tasks']} tasks): {doc['shared_tasks']} shared tasks.</p>
<p>95% intervals: {e(doc['method'])}. A task is solved when at least {doc['solved_threshold']:.0%} of its samples
passed; a flip is a task solved in one run and not the other.</p>
<h2>Overall</h2><table>{head}{rows}</table>
<h2>By task source</h2><table>{head}{src_rows}</table>
{''.join(flip_parts)}
{only}
</body></html>
"""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    return out


def run_compare_command(run_a: Path, run_b: Path, as_json: bool = False, html: Path | None = None) -> dict[str, Any]:
    """Compare two eval runs; print the summary (or JSON) and write the HTML page when asked."""
    from crossgym.config.files import check_output_file

    check_output_file(html, "--html")  # before reading both runs (issue 24)
    doc = compare_runs(load_run(run_a), load_run(run_b))
    if html is not None:
        write_html(doc, html)
    if as_json:
        sys.stdout.write(json.dumps(doc, indent=2, default=str) + "\n")
    else:
        lines = summary_lines(doc)
        if html is not None:
            lines.append(f"  wrote {html}")
        sys.stdout.write("\n".join(lines) + "\n")
    return doc
