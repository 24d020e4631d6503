"""The cluster: brokers, their log dirs, each partition's replicas and which one leads.

Kafka's RemoteLogManager copies only the partitions a broker leads; tierflow reads only the
leader's replica too, so a lagging follower never limits what is copied.
"""
