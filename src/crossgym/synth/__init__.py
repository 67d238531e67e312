"""``crossgym synth``: a model writes new tasks of a family from seed tasks; the family's verifier keeps the good ones.

``prompts`` builds what the model is asked, ``generate`` asks it and reads its drafts, ``filter`` keeps a task only
when the model's own reference solution passes the verifier and the draft's known-wrong answer fails it,
``provenance`` records where each task came from, ``run`` ties them together (``synthesize``).
"""

from __future__ import annotations

from crossgym.synth.run import SynthResult, synthesize

__all__ = ["SynthResult", "synthesize"]
