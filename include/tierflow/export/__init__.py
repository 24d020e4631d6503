"""Tiered data as an Apache Iceberg table: remote segments read back, their committed records
written as Parquet, and the files committed to a table with the offsets they hold."""
