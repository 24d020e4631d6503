"""Chunked, compressed, encrypted segment layout, byte-compatible with Aiven's plugin.

A segment file is cut into fixed-size chunks; each chunk is transformed on its own (zstd, then
AES-256-GCM), so any byte range is read back by fetching and decoding only the chunks it
covers. The manifest (manifest version "1") records where each transformed chunk lies.
"""
