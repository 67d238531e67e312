"""json_schema against the official JSON-Schema-Test-Suite: crossgym's verdicts, jsonschema's and the suite's.

    python bench/json_schema_suite.py PATH/TO/JSON-Schema-Test-Suite [--drafts draft7,draft2020-12] [--optional]

Each case's data goes in as JSON text, through JsonSchema.verify on both paths (the trusted ``schema`` param,
fastjsonschema and jsonschema-rs where they agree; the task's own schema, jsonschema), and is compared with the
suite's expected validity and with jsonschema's (the reference json_schema follows, no format checker, no remote
``$ref``). Schemas without ``$schema`` get the draft of their folder. refRemote.json is skipped: its ``$ref``s need
the suite's server on localhost:1234, and crossgym never fetches a remote ``$ref`` (such a case is a bad task).
``--optional`` adds the optional/ folder (format assertion, ECMA-262 regexes...) with formats="assert".
Not a timing: it prints agreement counts and every disagreement (a suite checkout is not part of this repo).
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path
from typing import Any

from crossgym.protocol.task import Completion
from crossgym.verifiers.json_schema import JsonSchema

DRAFTS = {"draft4": "http://json-schema.org/draft-04/schema#", "draft6": "http://json-schema.org/draft-06/schema#",
          "draft7": "http://json-schema.org/draft-07/schema#",
          "draft2019-09": "https://json-schema.org/draft/2019-09/schema",
          "draft2020-12": "https://json-schema.org/draft/2020-12/schema"}


def reference(schema: Any, data: Any) -> Any:
    import jsonschema
    import referencing

    try:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        return bool(cls(schema, registry=referencing.Registry()).is_valid(data))
    except Exception as exc:  # noqa: BLE001 - a schema or $ref it cannot take: an error either way
        return f"error ({type(exc).__name__})"


def ours(schema: Any, text: str, trusted: bool, formats: str) -> Any:
    try:
        if trusted:
            v, task = JsonSchema(schema=schema, formats=formats), JsonSchema.task(None, params={"schema": schema})
        else:
            v, task = JsonSchema(formats=formats), JsonSchema.task(schema)
        verdict = v.verify(task, Completion.from_text(text))
    except Exception as exc:  # noqa: BLE001 - a config error for the schema param
        return f"error ({type(exc).__name__})"
    return verdict.passed if verdict.error is None else f"error ({verdict.error_kind})"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("suite", type=Path)
    ap.add_argument("--drafts", default=",".join(DRAFTS))
    ap.add_argument("--optional", action="store_true")
    args = ap.parse_args(argv)
    total: collections.Counter[tuple[str, str]] = collections.Counter()
    shown = 0
    for draft in args.drafts.split(","):
        folder = args.suite / "tests" / draft
        files = sorted(folder.glob("*.json")) + (sorted((folder / "optional").rglob("*.json")) if args.optional else [])
        for path in files:
            if path.name == "refRemote.json":
                continue
            formats = "assert" if "optional" in path.parts else "annotate"
            for group in json.loads(path.read_text(encoding="utf-8")):
                schema = group["schema"]
                if isinstance(schema, dict) and "$schema" not in schema:
                    schema = {"$schema": DRAFTS[draft], **schema}
                for case in group["tests"]:
                    text = json.dumps(case["data"])
                    ref = reference(schema, case["data"])
                    for trusted in (True, False):
                        got = ours(schema, text, trusted, formats)
                        same = got == ref or (isinstance(got, str) and isinstance(ref, str))  # both an error
                        kind = "optional" if formats == "assert" else "required"
                        total[(draft + " " + kind, "same as jsonschema" if same else "differs from jsonschema")] += 1
                        total[(draft + " " + kind, "as the suite says" if got == case["valid"] else "not as the suite says")] += 1
                        if not same and shown < 60:
                            shown += 1
                            print(f"  {draft}/{path.relative_to(folder)} [{'trusted' if trusted else 'task'}] "
                                  f"{group['description'][:50]!r} / {case['description'][:50]!r}: suite {case['valid']}, "
                                  f"jsonschema {ref}, crossgym {got}")
    print(f"\n{'':28s} {'cases':>7s}")
    for (where, what), n in sorted(total.items()):
        print(f"{where:28s} {n:7d}  {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
