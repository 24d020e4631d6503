"""Imported by an early pool's workers only (early_jobs.MARKER)."""
