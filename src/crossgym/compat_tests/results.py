"""Small result records every check returns, and the exact-equality rule for rewards."""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field
from typing import Any

#: check statuses, best to worst (merging keeps the worst of two measured results)
STATUSES = ("pass", "skip", "fail", "error")


@dataclass
class CheckResult:
    """One named check on one subject: pass, fail, skip (with why) or error (the check itself broke)."""

    name: str
    status: str = "pass"
    detail: str = ""
    checked: int = 0
    failure: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status in ("pass", "skip")

    def fail(self, detail: str, failure: dict[str, Any] | None = None) -> CheckResult:
        """Mark failed with the first failing case (later failures keep the first one)."""
        if self.status != "fail":
            self.status, self.detail, self.failure = "fail", detail, failure
        return self

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"status": self.status, "detail": self.detail, "checked": self.checked}
        if self.failure is not None:
            d["failure"] = self.failure
        if self.extra:
            d["extra"] = self.extra
        return d


def same_reward(expected: float | None, got: Any) -> bool:
    """Exact equality of two rewards: same float (NaN equals NaN, None equals None); no tolerance."""
    if expected is None or got is None:
        return expected is None and got is None
    if isinstance(got, (bool, str, bytes)):
        return False
    if not isinstance(got, (int, float)):
        try:
            got = float(got)  # numpy / torch scalars
        except (TypeError, ValueError):
            return False
    if math.isnan(expected) or math.isnan(got):
        return math.isnan(expected) and math.isnan(got)
    return float(got) == float(expected)


def as_float32(x: float) -> float:
    return float(struct.unpack("f", struct.pack("f", x))[0])


def explain_difference(expected: float | None, got: Any) -> str:
    """A few words on how two rewards differ (float32 rounding is the usual culprit)."""
    if expected is None or got is None:
        return f"expected {expected!r}, got {got!r}"
    try:
        g = float(got)
    except (TypeError, ValueError):
        return f"expected {expected!r}, got a {type(got).__name__}: {got!r}"
    if math.isfinite(expected) and math.isfinite(g) and as_float32(expected) == g:
        return f"expected {expected!r}, got {g!r}: the backend rounded the reward to float32"
    return f"expected {expected!r}, got {g!r}"
