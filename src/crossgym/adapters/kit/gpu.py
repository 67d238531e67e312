"""GPUs visible on this machine, found without importing torch (``crossgym plan`` and ``list`` stay fast)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

#: where the NVIDIA driver lists its GPUs
PROC_GPUS = Path("/proc/driver/nvidia/gpus")


def visible_gpus() -> int:
    """CUDA_VISIBLE_DEVICES when set (ids other than "-1"), else the driver's /proc listing, else ``nvidia-smi -L``,
    else 0."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return len([d for d in visible.split(",") if d.strip() and d.strip() != "-1"])
    try:
        if PROC_GPUS.is_dir():
            return len(list(PROC_GPUS.iterdir()))
    except OSError:
        pass
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return 0
    try:
        out = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=10, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))
