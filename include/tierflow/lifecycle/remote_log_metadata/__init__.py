"""tierflow and Kafka's ``__remote_log_metadata``: publishing what tierflow copies, so brokers
serve it, and following what brokers copy, so tierflow's read side works on it."""
