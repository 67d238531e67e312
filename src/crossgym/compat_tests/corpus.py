"""Samples the checks score: a verifier's own examples, its frozen corpus, and the garbage corpus on its tasks.

The frozen corpus lives in ``tests/compat/corpus/`` of a source checkout (``garbage.jsonl`` and
``verifiers/<name>.jsonl``, written once by ``tests/compat/make_corpus.py``). Outside a checkout, or for a verifier
the corpus does not know, the garbage entries come from ``crossgym.compat_tests.garbage`` (the same generator) and
only the examples stand in for the per-verifier corpus. ``CROSSGYM_COMPAT_CORPUS=DIR`` or ``--corpus DIR`` points
the suite at another corpus (a plugin author's own).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from crossgym.compat_tests.garbage import expand, garbage_specs, is_raw
from crossgym.protocol.task import Completion, Example, Task

log = logging.getLogger(__name__)

CORPUS_ENV = "CROSSGYM_COMPAT_CORPUS"
#: garbage completions are scored on at most this many distinct example tasks per verifier
GARBAGE_TASKS = 3


@dataclass(frozen=True)
class Sample:
    """One (task, completion) pair to score, with where it came from."""

    source: str  # "example", "corpus" or "garbage"
    id: str
    task: Task
    completion: Any  # a Completion, except raw garbage (None, a str, bad message content)
    note: str = ""
    expect: str | None = None  # examples only: "pass", "fail" or "malformed"
    reference: dict[str, Any] = field(default_factory=dict)  # corpus only: the verdict when it was frozen

    @property
    def raw(self) -> bool:
        """Not a well-formed Completion: only conformance checks use it (no backend can carry it)."""
        return not _well_formed(self.completion)

    @property
    def label(self) -> str:
        return f"{self.source}:{self.id}"

    @property
    def key(self) -> str:
        """Unique across verifiers: labels repeat from one verifier's samples to the next."""
        return f"{self.task.verifier.name}/{self.label}"

    def describe(self, n: int = 120) -> dict[str, Any]:
        """A short JSON description for reports: task id, the completion clipped to ``n`` characters."""
        text = self.completion.text if isinstance(self.completion, Completion) else self.completion
        if not isinstance(text, str):
            text = repr(text)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = text.encode("utf-8", "backslashreplace").decode("utf-8")
        msgs = len(self.completion.messages) if isinstance(self.completion, Completion) else 0
        return {"sample": self.label, "task": self.task.id, "note": self.note, "messages": msgs,
                "chars": len(text), "completion": text if len(text) <= n else text[: n - 1] + "…"}


def _well_formed(c: Any) -> bool:
    return isinstance(c, Completion) and all(isinstance(m.content, str) for m in c.messages)


def default_corpus_dir(explicit: str | os.PathLike[str] | None = None) -> Path | None:
    """The corpus folder: ``explicit``, else $CROSSGYM_COMPAT_CORPUS, else a source checkout's tests/compat/corpus."""
    if explicit:
        return Path(explicit)
    env = os.environ.get(CORPUS_ENV)
    if env:
        return Path(env)
    for root in (Path(__file__).resolve().parents[3], Path.cwd()):
        cand = root / "tests" / "compat" / "corpus"
        if (cand / "garbage.jsonl").is_file():
            return cand
    return None


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]


@lru_cache(maxsize=8)
def _garbage(corpus_dir: str | None) -> tuple[dict[str, Any], ...]:
    if corpus_dir:
        path = Path(corpus_dir) / "garbage.jsonl"
        if path.is_file():
            return tuple(read_jsonl(path))
    return tuple(garbage_specs())


def garbage_entries(corpus_dir: Path | None = None) -> list[tuple[dict[str, Any], Any]]:
    """(spec, expanded completion) for every garbage entry (from the frozen file when there is one)."""
    return [(spec, expand(spec)) for spec in _garbage(str(corpus_dir) if corpus_dir else None)]


def verifier_corpus(name: str, corpus_dir: Path | None = None) -> list[Sample]:
    """The frozen per-verifier corpus (empty when none was frozen for ``name``)."""
    if corpus_dir is None:
        return []
    path = corpus_dir / "verifiers" / f"{name}.jsonl"
    if not path.is_file():
        return []
    out = []
    for rec in read_jsonl(path):
        out.append(Sample(source="corpus", id=str(rec["id"]), task=Task.from_dict(rec["task"]),
                          completion=Completion.from_dict(rec["completion"]), note=str(rec.get("note", "")),
                          reference=dict(rec.get("reference") or {})))
    return out


def example_samples(examples: Iterable[Example]) -> list[Sample]:
    return [Sample(source="example", id=str(i), task=ex.task, completion=ex.completion, note=ex.note,
                   expect=ex.expect) for i, ex in enumerate(examples)]


def distinct_tasks(examples: Iterable[Example], limit: int = GARBAGE_TASKS) -> list[Task]:
    """Up to ``limit`` distinct example tasks, passing cases first (the ones a real run would see)."""
    order = {"pass": 0, "fail": 1, "malformed": 2}
    seen: dict[str, Task] = {}
    for ex in sorted(examples, key=lambda e: order.get(e.expect, 3)):
        seen.setdefault(ex.task.to_json(), ex.task)
    return list(seen.values())[:limit]


def garbage_samples(tasks: Iterable[Task], corpus_dir: Path | None = None, *, raw: bool = True) -> list[Sample]:
    """Every garbage entry on each of ``tasks`` (``raw=False`` leaves out the non-Completion entries)."""
    out = []
    entries = garbage_entries(corpus_dir)
    for k, t in enumerate(tasks):
        for spec, comp in entries:
            if not raw and is_raw(spec):
                continue
            out.append(Sample(source="garbage", id=f"{spec['id']}@task{k}", task=t, completion=comp,
                              note=str(spec.get("note", ""))))
    return out


def samples_for(name: str, examples: list[Example], corpus_dir: Path | None = None, *,
                garbage_tasks: int = GARBAGE_TASKS, raw: bool = False, extra: Iterable[Sample] = ()) -> list[Sample]:
    """Examples, then the frozen corpus, then ``extra``, then garbage on up to ``garbage_tasks`` example tasks."""
    out = example_samples(examples) + verifier_corpus(name, corpus_dir) + list(extra)
    if garbage_tasks:
        out += garbage_samples(distinct_tasks(examples, garbage_tasks), corpus_dir, raw=raw)
    return out
