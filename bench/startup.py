"""Start-up figures: crossgym's own share of `import crossgym`, and `crossgym list --json` wall time.

Prints each figure beside its target and beside `python -c pass` measured in the same run (the machine is noisy).
Run: .venv/bin/python bench/startup.py
"""

from __future__ import annotations

import re
import statistics
import subprocess
import sys
import time

RUNS = 7


def _wall(argv: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    return time.perf_counter() - t0


def _median_wall(argv: list[str]) -> float:
    return statistics.median(_wall(argv) for _ in range(RUNS))


def _crossgym_import_share_ms(stmt: str) -> tuple[float, float]:
    """(crossgym's own cumulative µs as ms, everything else's) from -X importtime, median over runs."""
    own, other = [], []
    for _ in range(RUNS):
        err = subprocess.run([sys.executable, "-X", "importtime", "-c", stmt], capture_output=True, text=True,
                             check=True).stderr
        self_us: dict[str, int] = {}
        for line in err.splitlines():
            m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)", line)
            if m:
                self_us[m.group(4)] = self_us.get(m.group(4), 0) + int(m.group(1))
        mine = sum(v for k, v in self_us.items() if k == "crossgym" or k.startswith("crossgym."))
        own.append(mine / 1000)
        other.append((sum(self_us.values()) - mine) / 1000)
    return statistics.median(own), statistics.median(other)


def main() -> None:
    base = _median_wall([sys.executable, "-c", "pass"])
    own, deps = _crossgym_import_share_ms("import crossgym")
    own_proto, deps_proto = _crossgym_import_share_ms("import crossgym.protocol")
    imp = _median_wall([sys.executable, "-c", "import crossgym"])
    lst = _median_wall([sys.executable, "-m", "crossgym.cli", "list", "--json"])
    print(f"{'figure':44} {'value':>10} {'target':>10}")
    print(f"{'python -c pass (wall)':44} {base * 1000:9.0f}ms {'':>10}")
    print(f"{'import crossgym: crossgym modules (self)':44} {own:9.1f}ms {'<=150ms':>10}")
    print(f"{'import crossgym: other modules (self)':44} {deps:9.1f}ms {'':>10}")
    print(f"{'import crossgym.protocol: crossgym (self)':44} {own_proto:9.1f}ms {'':>10}")
    print(f"{'import crossgym (wall) / python -c pass':44} {imp / base:9.2f}x {'':>10}")
    print(f"{'crossgym list --json (wall)':44} {lst * 1000:9.0f}ms {'<=1000ms':>10}")
    print(f"{'crossgym list --json / python -c pass':44} {lst / base:9.2f}x {'':>10}")


if __name__ == "__main__":
    main()
