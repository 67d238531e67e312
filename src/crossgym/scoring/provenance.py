"""Provenance: where a reward came from, typed and versioned, in one shape for every command and backend.

Schema 2 (this module) is a flat JSON object: ``schema``, ``verifier`` ({name, version, params}),
``crossgym_version``, ``source`` (eval, train, serve, verify...), ``backend``, ``model``, ``step``, ``key`` (eval's
resume key), ``reward_seen`` (what the trainer received) and any other fields a writer adds (sampling, config hash,
environment...), kept as they are. ``Provenance.from_dict`` also reads every shape crossgym 0.1 wrote:
eval's ``{"verifier": {name, version, params}}``, TRL/Unsloth training's ``"verifier": name`` with
``verifier_version``/``verifier_params``, and OpenRLHF's, which has no version.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from crossgym.protocol.messages import json_kind, json_object, whole_number
from crossgym.protocol.task import VerifierSpec

PROVENANCE_SCHEMA = 2
#: the typed fields; everything else in a record's provenance is kept in ``extra``
_FIELDS = ("schema", "verifier", "crossgym_version", "source", "backend", "model", "step", "key", "reward_seen")
#: 0.1 training keys folded into ``verifier``
_OLD_VERIFIER_KEYS = ("verifier_version", "verifier_params")


def _version_of(verifier: Any) -> str | None:
    v = getattr(verifier, "version", None)
    return str(v) if v not in (None, "") else None


@dataclass(frozen=True)
class VerifierRef:
    """The verifier that produced a Verdict: enough to rebuild it (name, params) and to see drift (version)."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)
    version: str | None = None

    @classmethod
    def of(cls, spec: VerifierSpec, verifier: Any = None) -> VerifierRef:
        return cls(name=spec.name, params=dict(spec.params), version=_version_of(verifier))

    @property
    def spec(self) -> VerifierSpec:
        return VerifierSpec(self.name, dict(self.params))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "params": self.params}


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass(frozen=True)
class Provenance:
    """Where one rollout's reward came from."""

    verifier: VerifierRef | None
    source: str = "unknown"
    backend: str | None = None
    model: str | None = None
    step: int | None = None
    key: str | None = None
    reward_seen: float | None = None
    crossgym_version: str = ""
    schema: int = PROVENANCE_SCHEMA
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def new(cls, spec: VerifierSpec, verifier: Any = None, *, source: str, **fields: Any) -> Provenance:
        """Provenance for a reward computed now by ``verifier`` (built from ``spec``), with this crossgym's version.
        Unknown keyword fields go to ``extra``; ``created`` is set unless given."""
        from crossgym import __version__

        typed = {k: fields.pop(k) for k in ("backend", "model", "step", "key", "reward_seen") if k in fields}
        fields.setdefault("created", _now())
        return cls(verifier=VerifierRef.of(spec, verifier), source=source, crossgym_version=__version__,
                   extra=fields, **typed)

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"schema": self.schema,
                               "verifier": None if self.verifier is None else self.verifier.to_dict(),
                               "crossgym_version": self.crossgym_version, "source": self.source}
        for name in ("backend", "model", "step", "key", "reward_seen"):
            value = getattr(self, name)
            if value is not None:
                doc[name] = value
        for k, v in self.extra.items():
            doc.setdefault(k, v)
        return doc

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None, *, default: VerifierSpec | None = None) -> Provenance:
        """Read any provenance crossgym ever wrote (schema 2, or a 0.1 shape); ``default`` names the verifier when
        the record does not (a 0.1 record without one: the task's own verifier scored it)."""
        d = dict(d or {})
        raw = d.get("verifier")
        ref: VerifierRef | None
        if isinstance(raw, Mapping) and raw.get("name"):
            ref = VerifierRef(name=str(raw["name"]), params=_params(raw.get("params")),
                              version=None if raw.get("version") in (None, "", "None") else str(raw["version"]))
        elif isinstance(raw, str) and raw:
            params = d.get("verifier_params")
            version = d.get("verifier_version")
            if params is None and default is not None and default.name == raw:
                params = default.params
            ref = VerifierRef(name=raw, params=_params(params),
                              version=None if version in (None, "", "None") else str(version))
        elif default is not None:
            ref = VerifierRef(name=default.name, params=dict(default.params))
        else:
            ref = None
        step = d.get("step")
        reward_seen = d.get("reward_seen")
        extra = {k: v for k, v in d.items() if k not in _FIELDS and k not in _OLD_VERIFIER_KEYS}
        return cls(verifier=ref, source=str(d.get("source") or ("eval" if d.get("key") else "unknown")),
                   backend=d.get("backend"), model=d.get("model") or None,
                   step=int(step) if isinstance(step, (int, float)) else None, key=d.get("key"),
                   reward_seen=float(reward_seen) if isinstance(reward_seen, (int, float)) else None,
                   crossgym_version=str(d.get("crossgym_version") or ""),
                   schema=_schema(d.get("schema")), extra=extra)

    def spec(self, default: VerifierSpec) -> VerifierSpec:
        """The spec that scored this rollout (``default``, the task's own, when the record does not say)."""
        return default if self.verifier is None else self.verifier.spec


def _params(value: Any) -> dict[str, Any]:
    """A provenance's verifier params: an object (none when null or absent); anything else is a ValueError naming
    the field, which readers report with the record's file:line (it was Python's "dictionary update sequence")."""
    return json_object("provenance: the verifier's 'params'", value)


def _schema(value: Any) -> int:
    """A provenance's schema number (1 when absent: the 0.1 shapes wrote none); text ("two") is a ValueError naming
    the field, not Python's "invalid literal for int()"."""
    if not value:
        return 1
    schema = whole_number(value)
    if schema is None:
        raise ValueError(f"provenance: 'schema' must be a whole number, got {json_kind(value)}")
    return schema
