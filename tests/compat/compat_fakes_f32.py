"""fake_float32's parity driver: rewards rounded to float32 (what a torch.float32 tensor does to 0.1), and a
crash on one completion, so parity shows a mismatch with its first differing sample and locates an error."""

from __future__ import annotations

from compat_fakes import _reward, f32

from crossgym.protocol import Completion, Task


def native_rewards(tasks: list[Task], completions: list[Completion]) -> list[float]:
    out = []
    for t, c in zip(tasks, completions, strict=True):
        if c.text == "CRASH":
            raise RuntimeError("the fake framework cannot take this completion")
        out.append(f32(_reward(t, c)))
    return out
