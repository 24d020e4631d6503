"""Lifecycle operations: each one a resumable sequence of atomic state transitions.

Airflow tasks call these functions; so do the CLI and the tests. Nothing here imports Airflow.
"""
