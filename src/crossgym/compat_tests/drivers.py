"""Find each backend's parity driver and say whether the backend can be checked here.

A parity driver is a module with ``native_rewards(tasks, completions) -> list[float | None]``: the reward of each
(task, completion) pair computed through the framework's own reward path (TRL's reward-function call, veRL's reward
manager, OpenRLHF's executor). It may also have:

* ``MODES = ("single_turn", "multi_turn")`` and a ``mode=`` keyword on ``native_rewards``: each mode is checked
  separately (single-turn: the framework's plain reward call; multi-turn: its agent/rollout path, given every
  sample). Without MODES the driver routes each completion itself: single-turn gets the one-message completions,
  multi-turn the built-in environments' scripted episodes (replayed through an environment, a transcript with
  invented environment messages would differ);
* ``validate_plan(plan) -> None``: raise when the framework's own config parsing rejects ``plan.native_config``;
* ``episode_tokens(tasks, model_dir) -> list[Episode]``: the token ids the backend would train on for multi-turn
  episodes, for the token-consistency check (see ``crossgym.compat_tests.tokens``);
* ``record_rollouts(tasks, completions, path)``: score the samples through the backend's reward path with its
  training-time rollout recording on, the records landing at ``path`` (the consistency check's ``records``);
* ``route_rewards(tasks, completions, url, rule)``: the rewards the backend's own client gets from a `crossgym serve`
  route at ``url`` serving ``rule``, compared with ``native_rewards(..., rule=rule)`` (the ``route`` check);
* ``REWARD_DTYPE = "float32"``: the trainer holds rewards in float32 tensors (TRL does), so the reward it trains
  on is Verdict.reward rounded to float32, and parity is exact at that precision. Default "float64".

Where the driver comes from, first match wins:

1. declared by the backend: its ``compat_driver`` (part of the TrainingBackend protocol; ``BackendBase`` says None),
   or ``capabilities={"compat_driver": "module"}`` on its registry entry;
2. the convention: ``crossgym.adapters.<name>.parity`` (every built-in backend also declares its own).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from crossgym.protocol.errors import BackendUnavailable, CrossgymError
from crossgym.protocol.interfaces import TrainingBackend

log = logging.getLogger(__name__)

DRIVER_ATTR = "compat_driver"
CONVENTION = "crossgym.adapters.{name}.parity"
#: backend statuses in a matrix
INSTALLED, NOT_INSTALLED, UNAVAILABLE, NO_DRIVER = "installed", "not_installed", "unavailable", "no_driver"


@dataclass
class Driver:
    """A backend's parity driver: its functions and where they came from."""

    module: str
    source: str  # "declared" or "convention"
    native_rewards: Callable[..., list[Any]]
    modes: tuple[str, ...] = ("single_turn",)
    takes_mode: bool = False
    #: MODES declared: each mode is a separate native path; else the driver routes each completion itself
    declared_modes: bool = False
    validate_plan: Callable[[Any], None] | None = None
    episode_tokens: Callable[..., list[Any]] | None = None
    record_rollouts: Callable[..., None] | None = None
    route_rewards: Callable[..., list[Any]] | None = None
    #: ``advantages(groups, variant) -> list[list[float]]`` through the framework's own code (compat_tests.advantages)
    advantages: Callable[..., list[list[float]]] | None = None
    advantage_variants: tuple[str, ...] = ()
    #: ``advantage_source() -> str``: how the hook reaches the framework's code (where that depends on the machine)
    advantage_source: Callable[[], str] | None = None
    #: ``aggregated_advantages(groups, weights) -> list[list[float]]``: reward aggregation normalize_then_sum, each
    #: completion's reward one value per term (compat_tests.advantages); None: the backend lacks it
    aggregated_advantages: Callable[..., list[list[float]]] | None = None
    #: ``loss_weights(variant, lengths, horizon) -> list[list[float]]``: -d loss / d log-prob of each response token
    #: through the framework's own loss (ratio 1, advantage 1), to compare the loss aggregation
    loss_weights: Callable[..., list[list[float]]] | None = None
    #: the precision the framework stores rewards in ("float64" or "float32")
    reward_dtype: str = "float64"

    @classmethod
    def from_module(cls, mod: ModuleType, source: str) -> Driver:
        fn = getattr(mod, "native_rewards", None)
        if not callable(fn):
            raise CrossgymError(f"parity driver {mod.__name__} has no native_rewards(tasks, completions) function")
        try:
            takes_mode = "mode" in inspect.signature(fn).parameters
        except (TypeError, ValueError):
            takes_mode = False
        declared = getattr(mod, "MODES", None) or getattr(fn, "modes", None)
        modes = tuple(declared or ("single_turn", "multi_turn"))
        return cls(module=mod.__name__, source=source, native_rewards=fn, modes=modes, takes_mode=takes_mode,
                   declared_modes=bool(declared),
                   validate_plan=getattr(mod, "validate_plan", None),
                   episode_tokens=getattr(mod, "episode_tokens", None),
                   record_rollouts=getattr(mod, "record_rollouts", None),
                   route_rewards=getattr(mod, "route_rewards", None),
                   advantages=getattr(mod, "advantages", None),
                   advantage_variants=tuple(getattr(mod, "ADVANTAGE_VARIANTS", ()) or ()),
                   advantage_source=getattr(mod, "advantage_source", None),
                   aggregated_advantages=getattr(mod, "aggregated_advantages", None),
                   loss_weights=getattr(mod, "loss_weights", None),
                   reward_dtype=str(getattr(mod, "REWARD_DTYPE", "float64")))

    def rewards(self, tasks: list[Any], completions: list[Any], mode: str) -> list[Any]:
        if self.takes_mode:
            return list(self.native_rewards(tasks, completions, mode=mode))
        return list(self.native_rewards(tasks, completions))


@dataclass
class BackendInfo:
    """One backend as the compat run sees it here."""

    name: str
    status: str
    install: str | None = None
    reason: str = ""
    description: str = ""
    dist: str = ""
    capabilities: dict[str, Any] = field(default_factory=dict)
    framework_version: str | None = None
    driver: Driver | None = None
    backend: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "install": self.install, "reason": self.reason, "dist": self.dist,
                "description": self.description, "capabilities": self.capabilities,
                "framework_version": self.framework_version,
                "driver": None if self.driver is None else {"module": self.driver.module, "source": self.driver.source,
                                                             "modes": list(self.driver.modes)}}


def _declared(entry: Any, backend: TrainingBackend | None) -> str | None:
    target = backend.compat_driver if backend is not None else None
    return target or ((entry.capabilities or {}).get(DRIVER_ATTR) if entry is not None else None)


def _module_exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def find_driver(name: str, entry: Any = None, backend: TrainingBackend | None = None) -> Driver | None:
    """The parity driver for backend ``name`` (None when it has none); import errors propagate."""
    declared = _declared(entry, backend)
    if declared:
        return Driver.from_module(importlib.import_module(declared.partition(":")[0]), "declared")
    conv = CONVENTION.format(name=name)
    if _module_exists(conv):
        return Driver.from_module(importlib.import_module(conv), "convention")
    return None


def _framework_version(entry: Any) -> str | None:
    import importlib.metadata

    for mod in entry.requires[:1]:
        try:
            return f"{mod} {importlib.metadata.version(mod)}"
        except importlib.metadata.PackageNotFoundError:
            return None
    return None


def inspect_backend(name: str) -> BackendInfo:
    """Status, install hint, capabilities and driver of one registered backend, importing as little as possible."""
    from crossgym.plugins.manager import registry

    entry = registry("backends").entry(name)
    info = BackendInfo(name=name, status=NOT_INSTALLED, install=entry.install, description=entry.description,
                       dist=entry.dist, capabilities=dict(entry.capabilities))
    missing = entry.missing_requirements()
    if missing:
        info.reason = f"missing Python package(s): {', '.join(missing)}"
        return info
    info.framework_version = _framework_version(entry)
    try:
        backend = registry("backends").load(name)()
    except BackendUnavailable as exc:
        info.reason, info.install = exc.reason, exc.install or info.install
        return info
    except Exception as exc:
        info.status, info.reason = UNAVAILABLE, f"cannot build the backend: {type(exc).__name__}: {exc}"
        return info
    info.backend = backend
    info.capabilities = {**info.capabilities, **backend.capabilities.to_dict()}
    check_problem = None
    try:
        backend.check()
    except BackendUnavailable as exc:
        check_problem = exc
    except Exception as exc:
        check_problem = BackendUnavailable(name, f"{type(exc).__name__}: {exc}")
    try:
        info.driver = find_driver(name, entry, backend)
    except ImportError as exc:
        info.reason = f"its parity driver cannot import {exc.name or exc}"
        return info
    except CrossgymError as exc:
        info.status, info.reason = UNAVAILABLE, str(exc)
        return info
    if info.driver is not None:
        info.status = INSTALLED
        if check_problem is not None:  # e.g. training needs a GPU; the reward path still runs here
            info.reason = f"training is not available here ({check_problem.reason}); the reward path is"
        return info
    if check_problem is not None:
        info.status = NOT_INSTALLED if check_problem.install else UNAVAILABLE
        info.reason, info.install = check_problem.reason, check_problem.install or info.install
        return info
    info.status, info.reason = NO_DRIVER, (f"no parity driver: declare {DRIVER_ATTR} on the backend or ship "
                                           f"{CONVENTION.format(name=name)}")
    return info


def backend_names() -> list[str]:
    from crossgym.plugins.manager import registry

    return registry("backends").names()
