"""Lifecycle operations: each one a resumable sequence of atomic state transitions.

Airflow tasks call these functions; so do the CLI and the tests. Nothing here imports Airflow.
One room per operation, each with its entry module named in the room's docstring:

* ``copy/``: tier rolled segments (RLMCopyTask); entry ``copy/steps.py``.
* ``retention/``: expire remote segments (RLMExpirationTask) and delete local ones once tiered;
  entries ``retention/remote.py`` and ``retention/local.py``.
* ``removal/``: RemotePartitionRemover for deleted topics: detect, mark, remove; entry
  ``removal/remove.py``.
* ``reconcile/``: compare the bucket with the store and repair what a crash left; entry
  ``reconcile/__init__.py``.

Beside them: ``disablement.py`` (KIP-950), ``remote_delete.py`` (the one way every room deletes
a remote segment), ``key_rewrap.py`` (rotating the key-encryption key) and ``clock.py``.
"""
