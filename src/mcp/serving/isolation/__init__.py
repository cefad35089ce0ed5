"""Worker isolation: each served model's engine in a sandboxed process of its own.

``models.WorkerModels`` loads a model as a ``Model`` over a ``worker_loop.WorkerLoop``;
``supervisor.WorkerSupervisor`` keeps its ``process.WorkerProcess`` running, made from a
``launch.LaunchedWorker`` (started and sandboxed, not yet given a model), which
``spares.SpareWorkers`` keeps ready ahead of the next load; the worker itself
(``worker.py``) enters ``sandbox.py``'s sandbox (network namespace, rlimits, no_new_privs, the
``seccomp.py`` filter) before it opens the model file; frames are ``wire.py``'s orjson frames
of ``codec.py``'s data; ``probe.py`` measures the sandbox from inside. docs/security.md says
what this protects and what it does not.
"""
