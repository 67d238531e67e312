"""The compat matrix document (schema ``crossgym-compat/1``), its JSON Schema, and merging documents from several
venvs into one (``python -m crossgym.compat_tests.merge``).

Cell statuses: measured ones are ``pass``, ``mismatch`` and ``error``; unmeasured ones are ``skip`` (nothing to
compare, or the verifier cannot run here), ``no_driver``, ``unavailable`` and ``not_installed`` (with ``install``).
Merging keeps, for each cell, a measured result over an unmeasured one, and the worst of two measured ones.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

SCHEMA_ID = "crossgym-compat/1"
MEASURED = ("pass", "mismatch", "error")
#: merge preference: higher wins (measured results beat unmeasured ones; among measured, the worst wins)
CELL_RANK = {"not_installed": 0, "unavailable": 1, "no_driver": 2, "skip": 3, "pass": 10, "mismatch": 11,
             "error": 12}
CHECK_RANK = {"skip": 0, "pass": 1, "fail": 2, "error": 3}
BACKEND_RANK = {"not_installed": 0, "unavailable": 1, "no_driver": 2, "installed": 3}

_CHECK = {"type": "object", "required": ["status"], "properties": {
    "status": {"enum": ["pass", "fail", "skip", "error"]}, "detail": {"type": "string"},
    "checked": {"type": "integer"}, "failure": {"type": ["object", "null"]}, "extra": {"type": "object"}}}
_PARITY = {"type": "object", "required": ["status", "samples", "compared", "mismatches"], "properties": {
    "status": {"enum": ["pass", "mismatch", "error", "skip"]}, "samples": {"type": "integer"},
    "compared": {"type": "integer"}, "mismatches": {"type": "integer"}, "timeouts": {"type": "integer"},
    "first_mismatch": {"type": ["object", "null"]}, "detail": {"type": "string"}, "sources": {"type": "object"}}}
_CELL = {"type": "object", "required": ["status"], "properties": {
    "status": {"enum": list(CELL_RANK)}, "install": {"type": ["string", "null"]}, "detail": {"type": "string"},
    "samples": {"type": "integer"}, "compared": {"type": "integer"}, "mismatches": {"type": "integer"},
    "first_mismatch": {"type": ["object", "null"]}, "modes": {"type": "object", "additionalProperties": _PARITY},
    "run": {"type": "integer"}}}
#: the JSON Schema of a matrix document (docs/compat.md explains each field)
JSON_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "crossgym compat matrix", "type": "object",
    "required": ["schema", "crossgym_version", "runs", "backends", "verifiers", "environments", "matrix", "summary"],
    "properties": {
        "schema": {"const": SCHEMA_ID},
        "crossgym_version": {"type": "string"},
        "runs": {"type": "array", "items": {"type": "object", "required": ["python", "prefix", "created"]}},
        "backends": {"type": "object", "additionalProperties": {
            "type": "object", "required": ["status"], "properties": {
                "status": {"enum": list(BACKEND_RANK)}, "install": {"type": ["string", "null"]},
                "reason": {"type": "string"}, "framework_version": {"type": ["string", "null"]},
                "capabilities": {"type": "object"}, "driver": {"type": ["object", "null"]},
                "plans": {"type": "object", "additionalProperties": _CHECK},
                "tokens": {"oneOf": [_CHECK, {"type": "null"}]}, "run": {"type": "integer"},
                "advantages": {"type": "object", "additionalProperties": _CHECK},
                "blend": {"type": "object", "additionalProperties": _CHECK}}}},
        "verifiers": {"type": "object", "additionalProperties": {
            "type": "object", "required": ["conformance"], "properties": {
                "version": {"type": ["string", "null"]}, "dist": {"type": "string"},
                "conformance": {"type": "object", "additionalProperties": _CHECK}}}},
        "environments": {"type": "object", "additionalProperties": {
            "type": "object", "required": ["checks"], "properties": {
                "checks": {"type": "object", "additionalProperties": _CHECK}}}},
        "matrix": {"type": "object", "additionalProperties": {"type": "object", "additionalProperties": _CELL}},
        "summary": {"type": "object", "required": ["ok", "cells"]},
    },
}


def cell_from_modes(modes: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A matrix cell from per-mode parity results: the worst mode decides; the first mismatch is kept."""
    cell: dict[str, Any] = {"status": "skip", "samples": 0, "compared": 0, "mismatches": 0, "first_mismatch": None,
                            "modes": modes, "detail": ""}
    for mode, r in modes.items():
        cell["samples"] += r["samples"]
        cell["compared"] += r["compared"]
        cell["mismatches"] += r["mismatches"]
        if cell["first_mismatch"] is None and r.get("first_mismatch"):
            cell["first_mismatch"] = {"mode": mode, **r["first_mismatch"]}
            cell["detail"] = f"{mode}: {r['detail']}"
    measured = [r["status"] for r in modes.values() if r["status"] != "skip"]
    cell["status"] = max(measured, key=CELL_RANK.__getitem__) if measured else "skip"
    if cell["status"] == "skip":
        cell["detail"] = "; ".join(f"{m}: {r['detail']}" for m, r in modes.items() if r.get("detail"))
    return cell


def summarize(doc: dict[str, Any]) -> dict[str, Any]:
    """Counts of cell statuses and failed checks; ``ok`` when nothing measured failed."""
    cells: dict[str, int] = {}
    for row in doc["matrix"].values():
        for cell in row.values():
            cells[cell["status"]] = cells.get(cell["status"], 0) + 1
    failed = []
    for name, v in doc["verifiers"].items():
        failed += [f"verifier {name}: {c}" for c, r in v["conformance"].items() if r["status"] in ("fail", "error")]
    for name, e in doc["environments"].items():
        failed += [f"environment {name}: {c}" for c, r in e["checks"].items() if r["status"] in ("fail", "error")]
    for name, b in doc["backends"].items():
        failed += [f"backend {name}: plan {c}" for c, r in (b.get("plans") or {}).items()
                   if r["status"] in ("fail", "error")]
        tok = b.get("tokens")
        if tok and tok["status"] in ("fail", "error"):
            failed.append(f"backend {name}: token consistency")
        failed += [f"backend {name}: consistency {c}" for c, r in (b.get("consistency") or {}).items()
                   if r["status"] in ("fail", "error")]
        failed += [f"backend {name}: advantages {c}" for c, r in (b.get("advantages") or {}).items()
                   if r["status"] in ("fail", "error")]
        failed += [f"backend {name}: blend {c}" for c, r in (b.get("blend") or {}).items()
                   if r["status"] in ("fail", "error")]
    failed += [f"consistency {c}" for c, r in (doc.get("consistency") or {}).items() if r["status"] in ("fail", "error")]
    bad_cells = cells.get("mismatch", 0) + cells.get("error", 0)
    return {"cells": cells, "failed_checks": failed, "ok": not bad_cells and not failed}


def _worse_check(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    return b if CHECK_RANK.get(b["status"], 0) > CHECK_RANK.get(a["status"], 0) else a


def _merge_measured(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Checks from two venvs: a measured result beats a skip; two measured ones keep the worse."""
    out = dict(a)
    for k, v in b.items():
        old = out.get(k)
        out[k] = v if old is None or old["status"] == "skip" else old if v["status"] == "skip" else _worse_check(old, v)
    return out


def _merge_checks(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for k, v in b.items():
        out[k] = _worse_check(out[k], v) if k in out else v
    return out


def merge(docs: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """One matrix from several (one per venv); see the module docstring for the rules."""
    docs = list(docs)
    if not docs:
        raise ValueError("nothing to merge")
    for d in docs:
        if d.get("schema") != SCHEMA_ID:
            raise ValueError(f"not a {SCHEMA_ID} document (schema {d.get('schema')!r})")
    out: dict[str, Any] = {"schema": SCHEMA_ID, "crossgym_version": docs[0]["crossgym_version"], "runs": [],
                           "backends": {}, "verifiers": {}, "environments": {}, "matrix": {}}
    for doc in docs:
        offset = len(out["runs"])
        out["runs"].extend(copy.deepcopy(doc["runs"]))
        for name, b in doc["backends"].items():
            b = {**copy.deepcopy(b), "run": b.get("run", 0) + offset}
            old = out["backends"].get(name)
            if old is None or BACKEND_RANK[b["status"]] > BACKEND_RANK[old["status"]]:
                out["backends"][name] = b
            elif BACKEND_RANK[b["status"]] == BACKEND_RANK[old["status"]] == BACKEND_RANK["installed"]:
                old["plans"] = _merge_checks(old.get("plans") or {}, b.get("plans") or {})
                old["consistency"] = _merge_measured(old.get("consistency") or {}, b.get("consistency") or {})
                old["advantages"] = _merge_measured(old.get("advantages") or {}, b.get("advantages") or {})
                old["blend"] = _merge_measured(old.get("blend") or {}, b.get("blend") or {})
                if b.get("tokens") and (not old.get("tokens") or _worse_check(old["tokens"], b["tokens"]) is b["tokens"]):
                    old["tokens"] = b["tokens"]
        for name, v in doc["verifiers"].items():
            if name not in out["verifiers"]:
                out["verifiers"][name] = copy.deepcopy(v)
            else:
                old = out["verifiers"][name]
                merged = {}
                for check in set(old["conformance"]) | set(v["conformance"]):
                    a, b2 = old["conformance"].get(check), v["conformance"].get(check)
                    merged[check] = b2 if a is None else a if b2 is None else (
                        a if a["status"] != "skip" and b2["status"] == "skip" else
                        b2 if a["status"] == "skip" else _worse_check(a, b2))
                old["conformance"] = merged
        if doc.get("consistency"):
            out["consistency"] = _merge_measured(out.get("consistency") or {}, doc["consistency"])
        for name, e in doc["environments"].items():
            old = out["environments"].setdefault(name, {"checks": {}})
            old["checks"] = _merge_checks(old["checks"], e["checks"])
        for vname, row in doc["matrix"].items():
            orow = out["matrix"].setdefault(vname, {})
            for bname, cell in row.items():
                cell = {**copy.deepcopy(cell), "run": cell.get("run", 0) + offset}
                old = orow.get(bname)
                if old is None or CELL_RANK[cell["status"]] > CELL_RANK[old["status"]]:
                    orow[bname] = cell
    out["summary"] = summarize(out)
    return out
