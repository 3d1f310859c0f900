"""A zip made as it is sent: a download of many files (a run's logs, a model or dataset
version's files) streams a zip without staging it, in a few chunks of memory whatever the
size."""

from __future__ import annotations

import time
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class ZipMember:
    """One file of the zip: its name in the archive, when it was last changed (epoch seconds),
    and its content as chunks."""

    name: str
    modified: float
    chunks: Iterator[bytes]


def zip_chunks(members: Iterable[ZipMember], *, deflate: bool) -> Iterator[bytes]:
    """The zip of ``members``, chunk by chunk. ``deflate`` for what shrinks (logs); stored as
    they are for what would not (model weights, images), which costs no CPU."""
    method = zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED
    sink = _Chunks()
    with zipfile.ZipFile(sink, "w", method, compresslevel=1 if deflate else None) as archive:
        for member in members:
            info = zipfile.ZipInfo(member.name, date_time=time.localtime(member.modified)[:6])
            info.compress_type = method
            with archive.open(info, "w", force_zip64=True) as opened:
                for chunk in member.chunks:
                    opened.write(chunk)
                    yield from sink.drain()
    yield from sink.drain()


class _Chunks:
    """A write-only, unseekable file that hands what was written to a generator."""

    def __init__(self) -> None:
        self.pending: list[bytes] = []
        self.position = 0

    def write(self, data: bytes) -> int:
        self.pending.append(bytes(data))
        self.position += len(data)
        return len(data)

    def tell(self) -> int:
        return self.position

    def flush(self) -> None:
        """Written bytes are handed over by ``drain``."""

    def drain(self) -> Iterator[bytes]:
        pending, self.pending = self.pending, []
        yield from pending
