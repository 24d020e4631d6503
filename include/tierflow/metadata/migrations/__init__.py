"""Alembic scripts for the metadata store (a package so env.py ships in the wheel)."""
