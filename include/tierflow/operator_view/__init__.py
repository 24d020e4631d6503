"""The operator's view of tiered storage: the Airflow UI's Tiered storage page and
``tierflow status`` print the same snapshot (``snapshot.build_snapshot``).

Kept import-free: the Airflow plugin imports ``operator_view.app`` in every Airflow process.
"""
