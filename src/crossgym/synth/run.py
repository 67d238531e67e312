"""synthesize(): draft tasks from seeds with an engine, solve them with the same engine, keep what the verifier
confirms; every rejected draft is kept too, with its reason."""

from __future__ import annotations

import hashlib
import json
import logging
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from crossgym.protocol.episode import SamplingParams
from crossgym.protocol.errors import ConfigError
from crossgym.protocol.interfaces import InferenceEngine
from crossgym.protocol.messages import Message
from crossgym.protocol.task import Completion, Task
from crossgym.synth import filter as gate
from crossgym.synth import generate, prompts
from crossgym.synth.provenance import clip, now, run_info, task_record

log = logging.getLogger(__name__)


@dataclass
class SynthResult:
    """Kept tasks (with metadata["synth"] provenance), rejected drafts with reasons, and counts."""

    tasks: list[Task] = field(default_factory=list)
    rejects: list[dict[str, Any]] = field(default_factory=list)
    attempts: int = 0
    surplus: int = 0
    """Drafts that passed after ``n`` tasks were already kept (the rest of the last batch)."""
    run: dict[str, Any] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        """attempts, kept, rejected, and one count per rejection reason that occurred."""
        by = Counter(r["reason"] for r in self.rejects)
        return {"attempts": self.attempts, "kept": len(self.tasks), "rejected": len(self.rejects),
                "surplus": self.surplus, **{k: by[k] for k in gate.REASONS if by[k]}}

    def summary(self) -> dict[str, Any]:
        return {**self.run, "finished": now(), "counts": self.counts(),
                "reasons": {k: gate.REASONS[k] for k in gate.REASONS if any(r["reason"] == k for r in self.rejects)}}


def check_seeds(family: str, seeds: Sequence[Task]) -> list[Task]:
    """The seeds of ``family`` (metadata["family"], where seeds carry one), all scored by one verifier."""
    tagged = [t for t in seeds if t.metadata.get("family") is not None]
    pool = [t for t in seeds if t.metadata.get("family") == family] if tagged else list(seeds)
    if not pool:
        fams = sorted({str(t.metadata.get("family")) for t in tagged})
        raise ConfigError(f"no seed task of family {family!r} (the seeds' families: {', '.join(fams)})",
                          where="seeds", fix="name one of those families, or give seeds of this one")
    specs = {t.verifier.key() for t in pool}
    if len(specs) > 1:
        raise ConfigError(f"the {family!r} seeds use {len(specs)} different verifier specs",
                          where="seeds", fix="give seeds that share one verifier (name and params)")
    if pool[0].env != "single_turn" or any(t.tools for t in pool):
        raise ConfigError(f"synth writes single-turn tasks without tools; the {family!r} seeds are not",
                          where="seeds", fix="use single-turn seed tasks")
    return pool


def _task(family: str, fields: dict[str, Any], head: tuple[Message, ...], spec: Any) -> Task:
    key = json.dumps([fields["prompt"], fields["answer"]], sort_keys=True, ensure_ascii=False)
    tid = f"synth-{family}-{hashlib.sha256(key.encode('utf-8')).hexdigest()[:12]}"
    return Task(id=tid, prompt=(*head, Message(role="user", content=fields["prompt"])), answer=fields["answer"],
                verifier=spec, metadata={"family": family})


def synthesize(family: str, seeds: Sequence[Task], engine: InferenceEngine, n: int, *, shots: int = 3,
               max_attempts: int | None = None, params: SamplingParams | None = None,
               solve_params: SamplingParams | None = None, seed: int = 0, batch_size: int = 8,
               model_name: str | None = None) -> SynthResult:
    """Up to ``n`` new tasks of ``family``; stops after ``max_attempts`` drafts (default 4 x n)."""
    from crossgym.api import load_verifier

    if n < 1 or shots < 1 or batch_size < 1:
        raise ConfigError("n, shots and batch_size must be at least 1", where="synthesize")
    pool = check_seeds(family, seeds)
    spec = pool[0].verifier
    verifier = load_verifier(spec)
    params = params or SamplingParams(temperature=1.0, max_tokens=512, seed=seed)
    solve_params = solve_params or SamplingParams(temperature=0.0, max_tokens=512, seed=seed)
    limit = max_attempts if max_attempts is not None else 4 * n
    model = model_name or str(getattr(engine, "model_name", None) or getattr(engine, "name", "?"))
    result = SynthResult(run=run_info(family=family, model=model, engine=str(getattr(engine, "name", "?")),
                                      verifier=verifier, params=params, solve_params=solve_params, seed=seed,
                                      shots=shots))
    head = prompts.context(pool)
    description = str(getattr(verifier, "description", "") or "")
    seen = {gate.normalized(prompts.task_text(t)) for t in pool}
    rng = random.Random(seed)
    while len(result.tasks) < n and result.attempts < limit:
        size = min(batch_size, limit - result.attempts)
        shot_sets = [rng.sample(pool, min(shots, len(pool))) for _ in range(size)]
        chats = [prompts.task_prompt(family, s, spec.name, description) for s in shot_sets]
        batch_params = replace(params, seed=None if params.seed is None else params.seed + result.attempts)
        drafts = [generate.parse_draft(c.text) for c in generate.ask(engine, chats, batch_params)]
        pending: list[tuple[int, Task, generate.Draft]] = []
        for i, d in enumerate(drafts):
            base = {"attempt": result.attempts + i, "seed_ids": [t.id for t in shot_sets[i]],
                    "prompt_sha256": prompts.prompt_hash(chats[i]), "output": clip(d.text)}
            if d.error:
                code, _, detail = d.error.partition(": ")
                result.rejects.append({**base, "reason": code, "detail": detail})
                continue
            key = gate.normalized(d.fields["prompt"])
            if key in seen:
                result.rejects.append({**base, "reason": "duplicate", "detail": "the prompt repeats an earlier one"})
                continue
            seen.add(key)
            pending.append((i, _task(family, d.fields, head, spec), d))
        solutions = generate.ask(engine, [list(t.prompt) for _, t, _ in pending], solve_params)
        for (i, task, d), sol in zip(pending, solutions, strict=True):
            wrong = Completion.from_text(d.fields["wrong_answer"])
            dec = gate.judge(task, sol, wrong, verifier)
            sha = prompts.prompt_hash(chats[i])
            if dec.kept and len(result.tasks) < n:
                meta = {**task.metadata, "synth": task_record(
                    result.run, attempt=result.attempts + i, seeds=shot_sets[i], prompt_sha256=sha,
                    solution=sol.text, wrong=wrong.text, solution_verdict=dec.solution, wrong_verdict=dec.wrong)}
                result.tasks.append(replace(task, metadata=meta))
            elif dec.kept:
                result.surplus += 1
            else:
                result.rejects.append({
                    "attempt": result.attempts + i, "seed_ids": [t.id for t in shot_sets[i]], "prompt_sha256": sha,
                    "output": clip(d.text), "reason": dec.reason, "detail": dec.detail, "task": task.to_dict(),
                    "reference_solution": clip(sol.text), "solution_verdict": dec.solution.to_dict(),
                    "wrong_answer": clip(wrong.text), "wrong_verdict": dec.wrong.to_dict()})
        result.attempts += size
        log.info("synth %s: %d attempts, %d kept", family, result.attempts, len(result.tasks))
    return result
