"""Airflow wiring shared by DAG files. Only DAG files import this package (it needs Airflow);
every task body it wires lives in ``tierflow.tasks`` and is imported when the task runs."""
