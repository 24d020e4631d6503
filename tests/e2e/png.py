"""Just enough of a PNG reader to tell a rendered page from a blank one, without Pillow."""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

SIGNATURE = b"\x89PNG\r\n\x1a\n"
CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}  # colour type -> samples per pixel


@dataclass(frozen=True)
class PngSummary:
    width: int
    height: int
    colours: int  # distinct pixel values


def summarize_png(path: Path) -> PngSummary:
    """Dimensions and the number of distinct colours of an 8-bit, non-interlaced PNG."""
    data = Path(path).read_bytes()
    if not data.startswith(SIGNATURE):
        raise ValueError(f"{path}: not a PNG file")
    header, idat = _chunks(data[len(SIGNATURE) :])
    width, height, depth, colour_type, _, _, interlace = struct.unpack(">IIBBBBB", header)
    if depth != 8 or colour_type not in CHANNELS or interlace:
        raise ValueError(f"{path}: unsupported PNG (depth {depth}, colour type {colour_type})")
    pixel = CHANNELS[colour_type]
    rows = _unfilter(zlib.decompress(idat), width * pixel, height, pixel)
    colours = {row[i : i + pixel] for row in rows for i in range(0, len(row), pixel)}
    return PngSummary(width, height, len(colours))


def _chunks(body: bytes) -> tuple[bytes, bytes]:
    header, idat, offset = b"", bytearray(), 0
    while offset < len(body):
        length, kind = struct.unpack(">I4s", body[offset : offset + 8])
        payload = body[offset + 8 : offset + 8 + length]
        if kind == b"IHDR":
            header = payload
        elif kind == b"IDAT":
            idat += payload
        offset += 12 + length
    return header, bytes(idat)


def _unfilter(raw: bytes, stride: int, height: int, bpp: int) -> list[bytes]:
    """Undo PNG's per-row filters (none, sub, up, average, Paeth)."""
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind, row = raw[start], bytearray(raw[start + 1 : start + 1 + stride])
        if kind == 1:
            for i in range(bpp, stride):
                row[i] = (row[i] + row[i - bpp]) & 0xFF
        elif kind == 2:
            row = bytearray((a + b) & 0xFF for a, b in zip(row, previous, strict=True))
        elif kind == 3:
            for i in range(stride):
                left = row[i - bpp] if i >= bpp else 0
                row[i] = (row[i] + ((left + previous[i]) >> 1)) & 0xFF
        elif kind == 4:
            for i in range(stride):
                left = row[i - bpp] if i >= bpp else 0
                corner = previous[i - bpp] if i >= bpp else 0
                row[i] = (row[i] + _paeth(left, previous[i], corner)) & 0xFF
        rows.append(bytes(row))
        previous = row
    return rows


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c
