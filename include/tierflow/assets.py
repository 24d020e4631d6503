"""Airflow Asset names shared between DAGs, as plain strings.

The copy DAG updates REMOTE_SEGMENTS when it finishes new segments; the index-cache DAG runs on
it. Kept free of imports so that DAG files can use it at parse time.
"""

REMOTE_SEGMENTS = "tierflow://remote-segments"
