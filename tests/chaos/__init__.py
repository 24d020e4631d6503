"""Crash-injection harness: every lifecycle operation SIGKILLed at every step boundary.

``python -m tests.chaos`` (``make chaos``) runs the full harness; ``test_chaos.py`` runs a
sampled subset in ``make test``. See harness.py.
"""
