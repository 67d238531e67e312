"""HTTP service for verifiers and environments (`crossgym serve`), and Ray scale-out for batch verification.

Nothing here is imported by ``import crossgym``: fastapi, uvicorn and ray load only when a serve or Ray function
runs (install them with ``pip install 'crossgym[serve]'`` or ``'crossgym[ray]'``). Modules:

- ``settings``: limits and options of a server (``ServeSettings``), and the bind/token rule;
- ``app``: ``create_app(settings)``, the FastAPI application; ``models``: its request and response bodies;
- ``errors`` and ``middleware``: structured 4xx errors, bearer auth, body-size limit;
- ``sessions``: environment sessions with idle expiry and a cap; ``runner``: concurrency and timeouts;
- ``nemo_gym`` and ``openrlhf``: NeMo Gym's /verify shape and OpenRLHF's remote-reward shape;
- ``client``: a keep-alive Python client and veRL's ``compute_score`` pointing at a server;
- ``ray_scale``: ``verify_many_ray`` over Ray actors holding warm verifiers and sandbox pools;
- ``command`` and ``batch_cmd``: `crossgym serve` and `crossgym verify-batch`.
"""
