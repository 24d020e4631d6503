"""Retention of tiered partitions, remote and local, each planned purely and then executed.

Remote (Kafka's RLMExpirationTask): ``remote_plan.py`` decides, ``remote.py`` feeds the plan from
the store and carries it out through ``lifecycle/remote_delete.py``.
Local (UnifiedLog.deleteOldSegments for a tiered log): ``local.py`` plans and deletes local
segments, never one whose remote copy is not verified.
"""
