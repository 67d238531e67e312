"""task_digest: one short fingerprint of a task's content, for the places that must tell two tasks apart when
their ids agree (merged datasets with per-split index ids; a task edited under the same id between two runs)."""

from __future__ import annotations

import hashlib
import json

from crossgym.protocol.task import Task


def task_digest(task: Task) -> str:
    """A digest of ``task``'s content (its JSON with keys sorted): equal tasks share it, unequal ones almost never.
    "" when the task cannot be written as JSON (circular metadata): callers then compare the tasks themselves."""
    try:
        text = json.dumps(task.to_dict(), sort_keys=True, ensure_ascii=False, default=repr)
    except (TypeError, ValueError, RecursionError):
        return ""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
