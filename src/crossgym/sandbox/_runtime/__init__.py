"""Code that runs inside the sandbox server process (stdlib only; started as ``python3 -S -I``).

Nothing here may import crossgym: the server runs under a clean system interpreter with only this
directory's parent on ``sys.path``.
"""
