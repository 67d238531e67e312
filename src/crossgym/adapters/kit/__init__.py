"""The backend kit: what a backend that launches a framework's own command line shares with the others.

``launch`` (one process group, its log streamed, stop honoured), ``gpu`` (GPUs visible here, without importing torch)
and ``files`` (writing a run's generated files, the launch script, describing big files in a Plan). A backend folder
holds only what is native to its framework; see docs/guides/writing-a-backend.md.
"""
