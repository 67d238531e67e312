"""Backends registered before their integration is built: `crossgym list` shows them as not available yet."""

from crossgym.plugins.pending import pending

TRLPending = pending("trl", "crossgym's TRL backend is not built yet (issue: TRL backend)")
UnslothPending = pending("unsloth", "crossgym's Unsloth backend is not built yet (issue: Unsloth backend)")
VerlPending = pending("verl", "crossgym's veRL backend is not built yet (issue: veRL backend)")
OpenRLHFPending = pending("openrlhf", "crossgym's OpenRLHF backend is not built yet (issue: OpenRLHF backend)")
