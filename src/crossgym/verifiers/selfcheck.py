"""Verifier self-check: run each verifier's own examples and compare with what they declare."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from crossgym.plugins.manager import registry
from crossgym.protocol.errors import CrossgymError
from crossgym.protocol.task import Example, Verdict


def _got(verdict: Verdict) -> str:
    if verdict.error_kind == "malformed":
        return "malformed"
    if verdict.error is not None:
        return verdict.error_kind or "error"
    return "pass" if verdict.passed else "fail"


def check_verifier(name: str) -> dict[str, Any]:
    """{"name", "version", "examples": [{"expect", "got", "reward", "ok", "note"}], "ok"} for one verifier.
    A verifier that needs an outside service (``needs_service``) and cannot be built here is reported ok with
    "skipped" (and "error") saying why."""
    from crossgym.api import load_verifier

    row: dict[str, Any] = {"name": name, "version": None, "examples": [], "ok": False}
    try:
        cls = registry("verifiers").load(name)
        row["version"] = str(getattr(cls, "version", "")) or None
        examples: list[Example] = list(cls.examples())  # examples carry the specs they need
    except CrossgymError as exc:
        row["error"] = str(exc)
        return row
    except Exception as exc:  # a broken plugin must show up as a failed check, not kill the run
        row["error"] = f"examples() raised {type(exc).__name__}: {exc}"
        return row
    kinds = {ex.expect for ex in examples}
    if getattr(cls, "needs_service", False) and examples:
        try:
            load_verifier(examples[0].task.verifier)
        except CrossgymError as exc:  # e.g. the judge with no endpoint configured: not a wrong verifier
            row.update(ok=True, skipped=str(exc), error=f"skipped: {exc}")
            return row
    for ex in examples:
        try:
            verdict = load_verifier(ex.task.verifier).verify(ex.task, ex.completion)
        except Exception as exc:
            verdict = Verdict.exception(f"verify raised {type(exc).__name__}: {exc}")
            row.setdefault("raised", True)
        row["examples"].append({"expect": ex.expect, "got": _got(verdict), "reward": verdict.reward,
                                "ok": ex.matches(verdict) and not row.get("raised"), "note": ex.note,
                                "reason": verdict.reason})
    missing = {"pass", "fail", "malformed"} - kinds
    if missing:
        row["error"] = f"examples() lacks a {', '.join(sorted(missing))} case"
    row["ok"] = bool(row["examples"]) and not missing and all(e["ok"] for e in row["examples"])
    return row


def check_verifiers(names: Iterable[str] | None = None) -> dict[str, Any]:
    """The `crossgym check` document: {"verifiers": [...], "ok"}."""
    reg = registry("verifiers")
    chosen = list(names) if names else reg.names()
    for n in chosen:
        reg.entry(n)  # unknown names fail before any work, with a suggestion
    rows = [check_verifier(n) for n in chosen]
    skipped = sum(1 for r in rows if r.get("skipped"))
    wrong = sum(1 for r in rows if not r["ok"])
    # a skipped verifier (it needs a service not configured here) is no failure, and no pass either: counted apart
    return {"verifiers": rows, "ok": not wrong,
            "counts": {"ok": len(rows) - wrong - skipped, "skipped": skipped, "wrong": wrong}}
