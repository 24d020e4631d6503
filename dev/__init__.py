"""Development machinery of tierflow: not installed, it runs from a checkout.

A local Airflow 3 (``airflow_server``, for ``make airflow``, the end-to-end tests and the
benchmarks) and DAG runs through ``dag.test()`` (``airflow_local``, for ``make demo`` and the
DAG tests). The ``tierflow`` commands that need it (``demo``, ``airflow ...``) put the checkout
tierflow is installed from on ``sys.path``, so the console script finds it as ``python -m
tierflow.cli`` does, from any directory.
"""
