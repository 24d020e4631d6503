"""A generator for realistic Kafka broker log directories.

``make demo`` and the tests need segments that look like a live broker's (several codecs,
leader epochs, idempotent and transactional producers, preallocated active indexes) without
running Kafka, so :mod:`tierflow.demo.broker` simulates the broker's append path instead.
"""
