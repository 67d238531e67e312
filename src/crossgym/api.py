"""Public helpers that rebuild plugins by name: the way one verifier reaches every backend and process."""

from __future__ import annotations

import functools
import inspect
import itertools
import math
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from crossgym.plugins.manager import registry
from crossgym.protocol.errors import ConfigError, CrossgymError, VerifierError
from crossgym.protocol.interfaces import Environment, InferenceEngine, TrainingBackend, Verifier
from crossgym.protocol.task import Task, VerifierSpec


def _build(kind: str, name: str, params: Mapping[str, Any]) -> Any:
    factory = registry(kind).load(name)
    try:
        return factory(**params)
    except CrossgymError:
        raise
    except TypeError as exc:
        accepted = _accepted_params(factory)
        fix = f"accepted params: {', '.join(accepted)}" if accepted else "see `crossgym list` and the docs"
        err = VerifierError if kind == "verifiers" else ConfigError
        if err is VerifierError:
            raise VerifierError(f"cannot build {kind[:-1]} {name!r} with params {dict(params)!r}: {exc} ({fix})") \
                from None
        raise ConfigError(f"cannot build {kind[:-1].replace('_', ' ')} {name!r}: {exc}", fix=fix) from None


def _accepted_params(factory: Any) -> list[str]:
    try:
        sig = inspect.signature(factory)
    except (TypeError, ValueError):
        return []
    return [p for p in sig.parameters if p not in ("self", "args", "kwargs")]


def _null(_constant: str) -> None:
    return None


@functools.lru_cache(maxsize=4096)
def _verifier_cached(key: str) -> Verifier:
    import json

    # NaN and infinities in params read as null, as serve, rollout records and every JSON carrier of a spec give
    # them: composite's threshold NaN (never passed) was null (the default rule) once served
    spec = VerifierSpec.from_dict(json.loads(key, parse_constant=_null))
    return _build("verifiers", spec.name, spec.params)  # type: ignore[no-any-return]


def load_verifier(spec: VerifierSpec | Mapping[str, Any] | str, **params: Any) -> Verifier:
    """The verifier a spec names, built through the registry (instances are cached per spec)."""
    if isinstance(spec, str):
        spec = VerifierSpec(name=spec, params=params)
    elif not isinstance(spec, VerifierSpec):
        spec = VerifierSpec.from_dict(spec)
    try:
        return _verifier_cached(spec.key())
    except TypeError as exc:  # unhashable/unserialisable params
        raise VerifierError(f"verifier {spec.name!r}: params must be JSON ({exc})") from None
    except VerifierError as exc:
        written = _non_finite(spec.params)
        if not written:
            raise
        raise VerifierError(_as_written(str(exc), written)) from None


def _non_finite(value: Any, path: str = "") -> list[tuple[str, str]]:
    """(where, as written) for each NaN or infinity in verifier params, in order: ``_verifier_cached`` reads them
    as null, so an error about one says "got None" of a value the user wrote as NaN."""
    if isinstance(value, float) and not math.isfinite(value):
        return [(path, "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity"))]
    if isinstance(value, Mapping):
        return [w for k, v in value.items() for w in _non_finite(v, f"{path}.{k}" if path else str(k))]
    if isinstance(value, (list, tuple)):
        return [w for i, v in enumerate(value) for w in _non_finite(v, f"{path}[{i}]")]
    return []


def _as_written(message: str, written: list[tuple[str, str]]) -> str:
    """A build error about params that held NaN or an infinity, saying what was written: "got None" of the one
    such value becomes "got NaN (...)"; otherwise a note names them. The rule itself (NaN reads as null, as every
    JSON carrier of a spec gives it) is kept: only the words change."""
    note = "JSON carries no NaN or infinity: they read as null"
    if len(written) == 1 and "got None" in message:
        return message.replace("got None", f"got {written[0][1]} ({note})", 1)
    listed = ", ".join(f"{where} = {text}" for where, text in written)
    return f"{message} [the params hold {listed}; {note}]"


def verify(task: Task, completion: Any) -> Any:
    """Score one completion (a Completion or plain text) with the task's own verifier."""
    from crossgym.protocol.task import Completion

    if isinstance(completion, str):
        completion = Completion.from_text(completion)
    return load_verifier(task.verifier).verify(task, completion)


def load_environment(name: str, **params: Any) -> Environment:
    """A new episode object of the registered environment ``name``."""
    return _build("environments", name, params)  # type: ignore[no-any-return]


def environment_factory(name: str, **params: Any) -> Any:
    """A zero-argument callable making fresh episodes (GRPO groups need many)."""
    registry("environments").load(name)  # fail early on an unknown name
    return functools.partial(load_environment, name, **params)


def iter_tasks(source: str, **params: Any) -> Iterator[Task]:
    """Tasks from a registered task source, one at a time (nothing is held: ``crossgym tasks`` and ``--limit``
    read a source this way). Built-in generators check their params on the first ``next``."""
    produced: Iterable[Task] = _build("task_sources", source, params)
    return iter(produced)


def load_tasks(source: str, **params: Any) -> list[Task]:
    """Tasks from a registered task source (generators take n and seed; loaders take path), as a list of at most
    MAX_TASKS (a source yielding more, a third party's endless one too, is one ConfigError, not a MemoryError)."""
    from crossgym.environments.sources.common import MAX_TASKS

    tasks = list(itertools.islice(iter_tasks(source, **params), MAX_TASKS + 1))
    if len(tasks) > MAX_TASKS:
        raise ConfigError(f"task source {source!r} yields more than {MAX_TASKS} tasks, the most loaded at once",
                          fix=f"pass n <= {MAX_TASKS} (or a limit) in its params")
    return tasks


def get_backend(name: str) -> TrainingBackend:
    """The registered training backend ``name`` (not checked: call ``.check()`` before training)."""
    return _build("backends", name, {})  # type: ignore[no-any-return]


def get_engine(name: str, **params: Any) -> InferenceEngine:
    """An inference engine instance (``hf`` takes model=..., ``openai`` takes base_url=..., ...)."""
    return _build("engines", name, params)  # type: ignore[no-any-return]


def clear_caches() -> None:
    _verifier_cached.cache_clear()
