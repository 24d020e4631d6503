"""Development machinery of tierflow: not installed, it runs from a checkout.

A local Airflow 3 (``airflow_server``, for ``make airflow``, the end-to-end tests and the
benchmarks) and DAG runs through ``dag.test()`` (``airflow_local``, for ``make demo`` and the
DAG tests). ``python -m tierflow.cli`` finds this package when run from the checkout's root.
"""
