"""What one rollout run generates with, its hash (part of every rollout's key) and each record's provenance."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crossgym.protocol.episode import SamplingParams
from crossgym.protocol.task import Task, VerifierSpec
from crossgym.rollout.driver import MAX_TURNS


@dataclass(frozen=True)
class RolloutConfig:
    """How rollouts are generated. Rollouts made under an equal config hash are interchangeable on resume."""

    model: str
    engine: str
    sampling: SamplingParams = field(default_factory=SamplingParams)
    n: int = 1
    """Samples per task (sample indices 0..n-1; raising n later only adds the new indices)."""
    environment: str | None = None
    """Run every task in this registered environment; None: each task's own ``env`` when registered, else one turn."""
    env_params: dict[str, Any] = field(default_factory=dict)
    max_turns: int = MAX_TURNS
    """A safety cap on assistant turns per episode; environments set their own budgets below it."""

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ValueError(f"n must be >= 1, got {self.n}")
        if self.max_turns < 1:
            raise ValueError(f"max_turns must be >= 1, got {self.max_turns}")

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "engine": self.engine, "sampling": self.sampling.to_dict(), "n": self.n,
                "environment": self.environment, "env_params": self.env_params, "max_turns": self.max_turns}

    def hash(self) -> str:
        """A short hash of everything that changes what is generated (not n: more samples extend a run), the
        model's weights included: a checkpoint retrained at the same path is a different model."""
        doc = self.to_dict()
        doc.pop("n")
        doc["model_files"] = model_fingerprint(self.model)
        text = json.dumps(doc, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


#: files whose change means a different model (weights, their index, config, tokenizer, chat template)
_MODEL_FILES = (".safetensors", ".bin", ".pt", ".gguf", ".json", ".jinja", ".model", ".txt")


def model_fingerprint(model: str) -> str | None:
    """Name, size and mtime of a local model directory's files (cheap: no reading); None for a hub id or server."""
    root = Path(model).expanduser()
    if not root.is_dir():
        return None
    entries = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix in _MODEL_FILES:
            st = path.stat()
            entries.append(f"{path.relative_to(root)}:{st.st_size}:{st.st_mtime_ns}")
    return hashlib.sha256("\n".join(entries).encode()).hexdigest()[:16]


def rollout_key(task_id: str, sample: int, config_hash: str) -> str:
    """The resume key of one rollout: task id, sample index and the hash its task is keyed under
    (``keyed_hash``)."""
    return f"{task_id}#{sample}@{config_hash}"


def keyed_hash(config_hash: str, task: Task) -> str:
    """The hash a task's rollouts are keyed under: the run's settings and the task's content. A task whose prompt,
    answer or verifier changed under the same id is another task: its stored rollouts are not reused (an eval rerun
    after such an edit reported the old verdicts as the new ones)."""
    from crossgym.protocol.digest import task_digest

    return f"{config_hash}.{task_digest(task)[:12]}"


def provenance(task: Task, sample: int, config: RolloutConfig, config_hash: str, verifier: Any,
               environment: str, *, task_hash: str | None = None, **extra: Any) -> dict[str, Any]:
    """Where a reward came from, enough to re-check it later (`crossgym reverify`): crossgym.scoring's Provenance.
    ``task_hash``: the task's ``keyed_hash`` when the caller has it (a digest of the task, made once per task)."""
    from crossgym.scoring.provenance import Provenance

    spec: VerifierSpec = task.verifier
    key = rollout_key(task.id, sample, task_hash or keyed_hash(config_hash, task))
    return Provenance.new(spec, verifier, source="eval", key=key,
                          model=config.model, config_hash=config_hash, sample=sample, engine=config.engine,
                          sampling=config.sampling.to_dict(), environment=environment, **extra).to_dict()
