"""Continuing a training run after a kill, the same way on every backend (each loads its checkpoint natively).

- The run's segments: ``<output_dir>/crossgym_segments.jsonl``, one line per start of ``crossgym train`` (segment 1
  is the first run, each resume adds one) with the config it ran, the step it started from and what changed.
- ``resume_point``: RunConfig.resume (never | auto | a checkpoint folder) -> a ResumePoint or None, refusing in one
  line when the config changed in a way the checkpoint cannot follow (model, backend, LoRA shape).
- ``cut_records``: metrics.jsonl and rollouts.jsonl cut back to the checkpoint before the resumed run appends:
  records of steps after it (the kill's leftovers) are dropped, so every step is recorded exactly once, and a torn
  last line is cut.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crossgym.protocol.errors import ConfigError
from crossgym.protocol.interfaces import ResumePoint
from crossgym.scoring.records import append_records, dumps_record, iter_records

if TYPE_CHECKING:
    from crossgym.config import RunConfig

log = logging.getLogger(__name__)

SEGMENTS_FILE = "crossgym_segments.jsonl"
RESUME_MODES = ("never", "auto")
#: fields a checkpoint is bound to; any other change is allowed and recorded in the new segment
BOUND = ("model", "backend", "grpo.lora")
#: fields whose change is not worth recording (they say how to start, not what is trained)
_UNRECORDED = {"resume"}

#: (step, folder) of a complete checkpoint, or None
Found = tuple[int, Path]


def flat(doc: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """A config dict as dotted keys (``grpo.learning_rate``); lists and other values kept whole."""
    out: dict[str, Any] = {}
    for k, v in doc.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping) and v:
            out.update(flat(v, key + "."))
        else:
            out[key] = v
    return out


def _lora_shape(cfg: Mapping[str, Any]) -> str:
    lora = (cfg.get("grpo") or {}).get("lora")
    if not lora:
        return "none (full fine-tuning)"
    targets = lora.get("target_modules")
    targets = ",".join(sorted(targets)) if isinstance(targets, list) else targets
    return f"r={lora.get('r')}, target_modules={targets}"


def check_resumable(previous: Mapping[str, Any], run: RunConfig) -> dict[str, list[Any]]:
    """The config fields changed since ``previous`` ({field: [old, new]}); a ConfigError naming the field when one
    the checkpoint is bound to changed (model, backend, LoRA shape)."""
    now = run.to_dict()
    fix = "put it back, or set resume: never (or another output_dir) to start over"
    for name in ("model", "backend"):
        if previous.get(name) != now.get(name):
            raise ConfigError(f"cannot resume: {name} changed from {previous.get(name)!r} to {now.get(name)!r} "
                              "since the checkpoint was written", where=name, fix=fix)
    old_shape, new_shape = _lora_shape(previous), _lora_shape(now)
    if old_shape != new_shape:
        raise ConfigError(f"cannot resume: the LoRA shape changed from {old_shape} to {new_shape} since the "
                          "checkpoint was written", where="grpo.lora", fix=fix)
    a, b = flat(previous), flat(now)
    return {k: [a.get(k), b.get(k)] for k in sorted(set(a) | set(b))
            if a.get(k) != b.get(k) and k not in _UNRECORDED}


# ---------------------------------------------------------------------- segments
def read_segments(output_dir: str | Path) -> list[dict[str, Any]]:
    """The run's segments, oldest first ([] before the first run)."""
    return list(iter_records(Path(output_dir) / SEGMENTS_FILE))


def begin_segment(output_dir: str | Path, run: RunConfig, point: ResumePoint | None, *, backend: str) -> int:
    """Record the segment that starts now and return its number: a fresh run starts the file over (segment 1), a
    resumed one appends ``point.segment``."""
    out = Path(output_dir)
    seg = point.segment if point is not None else 1
    doc = {"segment": seg, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "backend": backend,
           "from_step": point.step if point is not None else 0,
           "checkpoint": point.checkpoint if point is not None else None,
           "changed": point.changed if point is not None else {}, "config": run.to_dict()}
    out.mkdir(parents=True, exist_ok=True)
    if point is None:
        tmp = out / f".{SEGMENTS_FILE}.tmp"
        tmp.write_text(dumps_record(doc), encoding="utf-8")
        os.replace(tmp, out / SEGMENTS_FILE)
    else:
        append_records(out / SEGMENTS_FILE, [doc], fsync=True)
    return seg


# ---------------------------------------------------------------------- where to resume
def resume_point(run: RunConfig, *, latest: Callable[[Path], Found | None], at: Callable[[Path], int | None],
                 where: str = "checkpoints", folders: tuple[str, ...] = ()) -> ResumePoint | None:
    """RunConfig.resume -> where to continue. ``latest(output_dir)`` finds the newest complete checkpoint,
    ``at(folder)`` is the step of a complete checkpoint folder (None when it is not one); both are the backend's.
    A relative ``resume:`` folder that is not there is looked for in output_dir, then in its ``folders``
    (where the backend keeps checkpoints, e.g. "checkpoints")."""
    mode = run.resume
    out = Path(run.output_dir)
    if mode == "never":
        return None
    if mode == "auto":
        found = latest(out)
        if found is None:
            return None
        step, ckpt = found
    else:
        ckpt = Path(mode).expanduser()
        if not ckpt.is_absolute() and not ckpt.exists():
            ckpt = next((base / ckpt for base in (out, *(out / f for f in folders)) if (base / ckpt).exists()),
                        ckpt)
        got = at(ckpt)
        if got is None:
            raise ConfigError(f"cannot resume: {mode} is not a complete checkpoint", where="resume",
                              fix=f"name a complete checkpoint folder ({where}), or set resume: auto")
        step = got
    segments = read_segments(out)
    if not segments and ckpt.parent != out:
        segments = read_segments(ckpt.parent)  # a checkpoint of another output_dir: that run's segments
    changed: dict[str, list[Any]] = {}
    if segments and isinstance(segments[-1].get("config"), dict):
        changed = check_resumable(segments[-1]["config"], run)
    else:
        log.warning("no %s beside %s: the config is not checked against the checkpoint's", SEGMENTS_FILE, ckpt)
    last = max((int(s.get("segment") or 0) for s in segments), default=0)
    return ResumePoint(checkpoint=str(ckpt), step=int(step), segment=last + 1, changed=changed)


def describe(point: ResumePoint, max_steps: int) -> str:
    """One line for the log and the CLI: where the run continues, and what changed."""
    line = f"resuming from {point.checkpoint} at step {point.step} of {max_steps} (run segment {point.segment})"
    if point.changed:
        line += "; changed since the checkpoint: " + ", ".join(
            f"{k} {json.dumps(old, default=str)} -> {json.dumps(new, default=str)}" for k, (old, new)
            in point.changed.items())
    return line


# ---------------------------------------------------------------------- records
def _rollout_step(doc: Mapping[str, Any]) -> int | None:
    prov = doc.get("provenance")
    step = prov.get("step") if isinstance(prov, Mapping) else None
    return step if isinstance(step, int) else None


def keep_metrics_row(step: int) -> Callable[[Mapping[str, Any]], bool]:
    """A metrics.jsonl row is kept when it was logged at or before the checkpoint's step."""
    return lambda doc: not isinstance(doc.get("step"), int) or doc["step"] <= step


def keep_rollout(step: int) -> Callable[[Mapping[str, Any]], bool]:
    """A rollout is kept when it was generated before the checkpoint: its provenance step (optimizer steps done
    when it was generated) is below the checkpoint's. Rollouts without a step are kept."""
    def keep(doc: Mapping[str, Any]) -> bool:
        s = _rollout_step(doc)
        return s is None or s < step
    return keep


def filter_jsonl(path: Path, keep: Callable[[Mapping[str, Any]], bool]) -> tuple[int, int]:
    """Rewrite ``path`` without the records ``keep`` refuses and without a torn last line (atomically, streaming;
    untouched when nothing goes). Lines that are not JSON objects stay as they are. Returns (dropped, torn bytes)."""
    if not path.is_file():
        return 0, 0
    tmp = path.with_name(f".{path.name}.cut")
    dropped = torn = 0
    with path.open("rb") as src, tmp.open("wb") as dst:
        for raw in src:
            if not raw.endswith(b"\n"):
                torn = len(raw)
                break
            try:
                doc = json.loads(raw)
            except ValueError:
                doc = None
            if isinstance(doc, dict) and not keep(doc):
                dropped += 1
                continue
            dst.write(raw)
        dst.flush()
        os.fsync(dst.fileno())
    if dropped or torn:
        os.replace(tmp, path)
        log.info("%s: dropped %d record(s) written after the checkpoint%s", path, dropped,
                 f" and a torn last line ({torn} bytes)" if torn else "")
    else:
        tmp.unlink()
    return dropped, torn


def cut_records(output_dir: str | Path, step: int) -> dict[str, int]:
    """Cut metrics.jsonl and rollouts.jsonl back to a checkpoint at ``step`` (see keep_metrics_row/keep_rollout);
    returns how many records each lost."""
    out = Path(output_dir)
    m, _ = filter_jsonl(out / "metrics.jsonl", keep_metrics_row(step))
    r, _ = filter_jsonl(out / "rollouts.jsonl", keep_rollout(step))
    return {"metrics": m, "rollouts": r}
