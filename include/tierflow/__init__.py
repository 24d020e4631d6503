"""tierflow: Kafka tiered-storage lifecycle (KIP-405, KIP-950) run from Apache Airflow."""

__version__ = "0.1.0"
