"""Wire schemas of the ``__remote_log_metadata`` records, in Kafka's message-JSON form.

kafka-python's ``ApiData`` reads these to encode and decode the record bodies (compact strings
and arrays, uuids, tagged fields). They are written from the field tables of Kafka's
``storage/src/main/resources/message/Remote*.json`` (version 0, the only one released): every
field, in Kafka's order, since a broker's consumer decodes them and stops its tiered-storage
metadata for good on a record it cannot read. ``tests/kafka/test_remote_log_metadata_serde.py``
holds them to Kafka's own serde. (The struct fields say ``"default": "null"`` only because
kafka-python wants a default for each: they are not nullable, and every record sets them.)
"""
