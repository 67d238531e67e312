"""Task sources: seeded procedural generators (one module per family), file loaders and the reasoning-gym bridge.

A task source is a callable ``source(**params) -> Iterable[Task]``; generators take ``n`` and ``seed`` and give the
same tasks for the same params in any process.
"""
