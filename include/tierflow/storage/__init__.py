"""Remote storage: KIP-405's RemoteStorageManager over a pluggable object store.

Two layers keep the bucket separate from the segment layout: an ``ObjectStore`` knows only keys
and bytes (a local directory today, S3 later), while a ``RemoteStorageManager`` knows segments,
indexes and key layout. Transforming managers (chunking, compression, encryption) sit on the
same object stores.
"""
