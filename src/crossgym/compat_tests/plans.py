"""Plan validity: for representative RunConfigs, ``backend.plan(run)`` works, its Plan is JSON, and the framework's
own config parsing accepts ``plan.native_config`` (through the parity driver's ``validate_plan``).

A config the backend declares it cannot run (a variant not in ``capabilities.variants``, multi-turn without
``capabilities.multi_turn``, LoRA without ``capabilities.lora``) must be refused with a ConfigError, not planned.
"""

from __future__ import annotations

import json
import logging
import tempfile
from pathlib import Path
from typing import Any

from crossgym.compat_tests.drivers import BackendInfo
from crossgym.compat_tests.results import CheckResult
from crossgym.protocol.errors import ConfigError
from crossgym.protocol.messages import user
from crossgym.protocol.task import Task, VerifierSpec

log = logging.getLogger(__name__)

#: every grpo.variant (each backend must plan the ones it declares, and refuse the others in one ConfigError)
VARIANTS = ("grpo", "dapo", "dr_grpo", "gspo", "rloo", "reinforce_pp_baseline", "cispo", "sapo")


def _tasks_file(folder: Path) -> Path:
    tasks = [Task(id=f"t{i}", prompt=(user(f"What is {i} + {i}? Answer with the number."),), answer=str(2 * i),
                  verifier=VerifierSpec("exact_match")) for i in range(4)]
    path = folder / "tasks.jsonl"
    path.write_text("".join(t.to_json() + "\n" for t in tasks), encoding="utf-8")
    return path


def blend_parts(folder: Path) -> list[dict[str, Any]]:
    """A five-part blend for the plans: single-turn files and sources, multi-turn parts with their own environments
    and max_turns, a part-only verifier, weights and counts."""
    return [
        {"name": "sums", "files": [str(_tasks_file(folder))], "weight": 2},
        {"name": "json", "source": "json_extraction", "params": {"n": 2}, "weight": 1,
         "verifiers": [{"name": "json_valid", "weight": 0.25}]},
        {"name": "tools", "source": "tool_choice", "params": {"n": 2, "mode": "env"}, "count": 3,
         "environment": {"name": "tool_use", "max_turns": 3}},
        {"name": "sql", "source": "sql", "params": {"n": 2, "env": "sql"}, "count": 2,
         "environment": {"name": "sql", "max_turns": 4}},
        {"name": "code", "source": "python_functions", "params": {"n": 2, "env": "code"}, "count": 2,
         "environment": {"name": "code", "max_turns": 2}},
    ]


def representative_configs(folder: Path, model: str = "tiny-model") -> dict[str, tuple[dict[str, Any], str | None]]:
    """Named RunConfig dicts, each with the capability it needs (None: every backend must plan it)."""
    base: dict[str, Any] = {"model": model, "tasks": {"files": [str(_tasks_file(folder))]},
                            "output_dir": str(folder / "out"),
                            "grpo": {"num_generations": 4, "per_device_train_batch_size": 8, "max_steps": 2,
                                     "max_completion_length": 32}}
    out: dict[str, tuple[dict[str, Any], str | None]] = {"default": (base, None)}
    for v in VARIANTS[1:]:
        out[f"variant_{v}"] = ({**base, "grpo": {**base["grpo"], "variant": v}}, f"variant:{v}")
    out["lora"] = ({**base, "grpo": {**base["grpo"], "lora": {"r": 8, "alpha": 16}}}, "lora")
    out["multi_turn"] = ({**base, "environment": {"name": "tool_use", "max_turns": 3}}, "multi_turn")
    out["extra_verifier"] = ({**base, "verifiers": [{"name": "json_valid", "weight": 0.5}]}, None)
    out["blend"] = ({**base, "tasks": blend_parts(folder)}, "multi_turn")
    return out


def _supports(info: BackendInfo, need: str | None) -> bool:
    caps = info.capabilities
    if need is None:
        return True
    if need.startswith("variant:"):
        return need.split(":", 1)[1] in (caps.get("variants") or ("grpo",))
    return bool(caps.get(need))


def check_plans(info: BackendInfo) -> dict[str, CheckResult]:
    """One CheckResult per representative config."""
    from crossgym.config import RunConfig

    out: dict[str, CheckResult] = {}
    backend = info.backend
    validate = info.driver.validate_plan if info.driver is not None else None
    with tempfile.TemporaryDirectory(prefix="crossgym-compat-plan-") as tmp:
        for name, (data, need) in representative_configs(Path(tmp)).items():
            res = out[name] = CheckResult(name, checked=1)
            supported = _supports(info, need)
            try:
                run = RunConfig.model_validate({**data, "backend": info.name})
                plan = backend.plan(run)
            except ConfigError as exc:
                if supported:
                    res.fail(f"plan() refused a config the backend declares it supports ({need or 'basic'}): {exc}")
                else:
                    res.status, res.detail = "pass", f"refused as declared ({need}): {exc}"
                continue
            except Exception as exc:
                res.fail(f"plan() raised {type(exc).__name__}: {exc}")
                continue
            if not supported:
                res.fail(f"planned a config the backend declares it does not support ({need})")
                continue
            try:
                json.dumps(plan.to_dict())
            except (TypeError, ValueError) as exc:
                res.fail(f"the Plan is not JSON: {exc}")
                continue
            if validate is None:
                res.status, res.detail = "skip", "planned; no validate_plan in the parity driver to parse it natively"
                continue
            try:
                validate(plan)
            except Exception as exc:
                res.fail(f"the framework rejected the plan: {type(exc).__name__}: {str(exc).splitlines()[0]}")
    return out
