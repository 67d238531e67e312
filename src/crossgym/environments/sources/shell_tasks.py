"""shell_tasks: file tasks in a scratch directory seeded with generated files; scored by the ``shell`` verifier.

difficulty 1: create, rename, copy or delete files; 2: filter and count with grep/sort/wc into result files;
3: pipelines over CSV and log files (sums, unique values, per-key counts, in-place edits). ``env="single_turn"``:
answer with one ```bash script; ``env="shell"``: run commands one by one with the ``run`` tool and see output.
Each task carries a reference solution (``metadata["reference"]``: commands that reach the expected state).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from crossgym.environments.sources.common import check_choice, check_count, check_int, make_task, rng_for
from crossgym.protocol.task import Task

WORDS = ["alpha", "bravo", "cedar", "delta", "ember", "fjord", "glade", "harbor", "indigo", "juniper", "kelp",
         "lumen", "maple", "nectar", "onyx", "pylon", "quartz", "raven", "sierra", "tundra"]
LEVELS = ["INFO", "WARN", "ERROR", "DEBUG"]
SERVICES = ["api", "db", "auth", "cache", "queue"]

#: (instruction, seed files, expected files {path: text | None}, reference commands)
Spec = tuple[str, dict[str, str], dict[str, str | None], list[str]]


def _lines(rng: random.Random, k: int) -> list[str]:
    return [rng.choice(WORDS) for _ in range(k)]


def _log(rng: random.Random, k: int) -> list[str]:
    return [f"2024-05-{rng.randint(10, 28)} {rng.choice(LEVELS)} {rng.choice(SERVICES)}: "
            f"{rng.choice(WORDS)} {rng.randint(1, 999)}" for _ in range(k)]


def _text(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


# ---------------------------------------------------------------- difficulty 1
def _create(rng: random.Random) -> Spec:
    name, word = f"{rng.choice(WORDS)}.txt", rng.choice(WORDS)
    return (f"Create a file named {name} that contains the single line: {word}", {"readme.md": "# project\n"},
            {name: word + "\n", "readme.md": "# project\n"}, [f"echo {word} > {name}"])


def _rename(rng: random.Random) -> Spec:
    a, b = rng.sample(WORDS, 2)
    body = _text(_lines(rng, 3))
    return (f"Rename {a}.txt to {b}.txt.", {f"{a}.txt": body, "other.txt": "keep\n"},
            {f"{a}.txt": None, f"{b}.txt": body, "other.txt": "keep\n"}, [f"mv {a}.txt {b}.txt"])


def _delete_logs(rng: random.Random) -> Spec:
    logs = {f"{w}.log": _text(_log(rng, 2)) for w in rng.sample(WORDS, rng.randint(2, 4))}
    keep = {f"{w}.txt": _text(_lines(rng, 2)) for w in rng.sample(WORDS, 2)}
    expected: dict[str, str | None] = {**{k: None for k in logs}, **keep}
    return ("Delete every .log file in the directory and keep everything else.", {**logs, **keep}, expected,
            ["rm -f *.log"])


def _copy_into(rng: random.Random) -> Spec:
    d = rng.choice(["backup", "archive", "old"])
    files = {f"{w}.txt": _text(_lines(rng, 2)) for w in rng.sample(WORDS, 3)}
    expected: dict[str, str | None] = {**files, **{f"{d}/{k}": v for k, v in files.items()}}
    return (f"Create a directory named {d} and copy every .txt file into it (keep the originals).", files, expected,
            [f"mkdir -p {d}", f"cp *.txt {d}/"])


# ---------------------------------------------------------------- difficulty 2
def _count_lines(rng: random.Random) -> Spec:
    lines = _lines(rng, rng.randint(3, 12))
    return ("Write the number of lines in words.txt (just the number) to count.txt.", {"words.txt": _text(lines)},
            {"count.txt": f"{len(lines)}\n", "words.txt": _text(lines)}, ["wc -l < words.txt > count.txt"])


def _grep_errors(rng: random.Random) -> Spec:
    log = _log(rng, rng.randint(6, 14))
    if not any(" ERROR " in line for line in log):
        log[rng.randrange(len(log))] = log[0].replace(log[0].split()[1], "ERROR", 1)
    errors = [line for line in log if " ERROR " in line]
    return ("Put every line of app.log that has the level ERROR into errors.log, in their original order.",
            {"app.log": _text(log)}, {"errors.log": _text(errors), "app.log": _text(log)},
            ["grep ' ERROR ' app.log > errors.log"])


def _sort_unique(rng: random.Random) -> Spec:
    lines = _lines(rng, rng.randint(5, 12))
    return ("Write the distinct lines of names.txt, sorted alphabetically, to unique.txt.", {"names.txt": _text(lines)},
            {"unique.txt": _text(sorted(set(lines))), "names.txt": _text(lines)},
            ["LC_ALL=C sort -u names.txt > unique.txt"])


def _head_tail(rng: random.Random) -> Spec:
    lines = [f"{i} {w}" for i, w in enumerate(_lines(rng, rng.randint(8, 15)), 1)]
    k = rng.randint(2, 4)
    return (f"Write the first {k} and the last {k} lines of data.txt (first ones first) to ends.txt.",
            {"data.txt": _text(lines)}, {"ends.txt": _text(lines[:k] + lines[-k:]), "data.txt": _text(lines)},
            [f"head -n {k} data.txt > ends.txt", f"tail -n {k} data.txt >> ends.txt"])


# ---------------------------------------------------------------- difficulty 3
def _csv_sum(rng: random.Random) -> Spec:
    rows = [(rng.choice(WORDS), rng.randint(1, 50)) for _ in range(rng.randint(4, 9))]
    csv = "item,qty\n" + _text([f"{a},{b}" for a, b in rows])
    total = sum(b for _, b in rows)
    return ("sales.csv has a header line and the columns item,qty. Write the sum of the qty column (just the number) "
            "to total.txt.", {"sales.csv": csv}, {"total.txt": f"{total}\n", "sales.csv": csv},
            ["tail -n +2 sales.csv | awk -F, '{s += $2} END {print s}' > total.txt"])


def _level_counts(rng: random.Random) -> Spec:
    log = _log(rng, rng.randint(8, 16))
    counts = Counter(line.split()[1] for line in log)
    out = _text([f"{lvl} {counts[lvl]}" for lvl in sorted(counts)])
    return ("For each log level in app.log (the second field), write a line '<LEVEL> <count>' to levels.txt, sorted "
            "by level name.", {"app.log": _text(log)}, {"levels.txt": out, "app.log": _text(log)},
            ["awk '{print $2}' app.log | LC_ALL=C sort | uniq -c | awk '{print $2, $1}' > levels.txt"])


def _replace_word(rng: random.Random) -> Spec:
    old, new = rng.sample(WORDS, 2)
    files = {}
    for w in rng.sample(WORDS, 3):
        lines = _lines(rng, 4)
        lines[rng.randrange(4)] = f"{old} and {rng.choice(WORDS)}"
        files[f"{w}.txt"] = _text(lines)
    expected: dict[str, str | None] = {k: v.replace(old, new) for k, v in files.items()}
    return (f"In every .txt file, replace every occurrence of the word '{old}' with '{new}' (edit the files in "
            "place).", files, expected, [f"sed -i 's/{old}/{new}/g' *.txt"])


def _service_errors(rng: random.Random) -> Spec:
    log = _log(rng, rng.randint(10, 18))
    svc = sorted({line.split()[2].rstrip(":") for line in log if " ERROR " in line})
    if not svc:
        log[0] = log[0].replace(log[0].split()[1], "ERROR", 1)
        svc = [log[0].split()[2].rstrip(":")]
    return ("Write the names of the services (the third field, without its colon) that logged at least one ERROR in "
            "app.log to services.txt, one per line, sorted, without duplicates.", {"app.log": _text(log)},
            {"services.txt": _text(svc), "app.log": _text(log)},
            ["grep ' ERROR ' app.log | awk '{print $3}' | tr -d : | LC_ALL=C sort -u > services.txt"])


SPECS: dict[int, list[Callable[[random.Random], Spec]]] = {
    1: [_create, _rename, _delete_logs, _copy_into],
    2: [_count_lines, _grep_errors, _sort_unique, _head_tail],
    3: [_csv_sum, _level_counts, _replace_word, _service_errors],
}


def shell_tasks(n: int = 100, seed: int = 0, difficulty: int = 1, env: str = "single_turn", max_turns: int = 8,
                system_prompt: str | None = None) -> Iterator[Task]:
    """File tasks over generated files (``env`` single_turn: one script; shell: commands one by one)."""
    src = "shell_tasks"
    check_count(n, src)
    check_int(seed, "seed", src)
    check_int(difficulty, "difficulty", src, lo=1, hi=3)
    check_choice(env, "env", src, ("single_turn", "shell"))
    check_int(max_turns, "max_turns", src, lo=2)
    for i in range(n):
        rng = rng_for(src, seed, difficulty, i)
        instruction, files, expected, reference = rng.choice(SPECS[difficulty])(rng)
        listing = ", ".join(sorted(files))
        if env == "shell":
            prompt = (f"You are in a directory that holds: {listing}.\nTask: {instruction}\nRun shell commands with the "
                      "run tool (each runs in a fresh shell in that directory; files persist between commands). Reply "
                      "without a tool call when you are done.")
        else:
            prompt = (f"You are in a directory that holds: {listing}.\nTask: {instruction}\nReply with a bash script "
                      "in a ```bash block that does it.")
        meta: dict[str, Any] = {"files": files, "reference": reference, "difficulty": difficulty}
        if env == "shell":
            meta["max_turns"] = max_turns
        yield make_task(src, i, seed, prompt, {"files": expected}, "shell", env=env, tag=f"d{difficulty}",
                        system=system_prompt, metadata=meta)
