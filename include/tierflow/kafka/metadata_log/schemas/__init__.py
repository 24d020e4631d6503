"""Wire schemas of the KRaft metadata records, in Kafka's message-JSON form.

kafka-python's ``ApiData`` reads these to encode and decode the record bodies (compact strings
and arrays, tagged fields). They are written from the field tables of Kafka's
``metadata/src/main/resources/common/metadata/*.json``: only the fields tierflow replays, plus
every non-tagged field (needed to find the end of a body). Tagged fields not listed here are
skipped as unknown tags, as Kafka's own readers do.
"""
