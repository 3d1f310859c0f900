"""A bound on the size of a request's body: the API reads JSON documents whole before judging
them, so a body of 60 MiB was read (18-42 s) before its 422. Bodies above the bound answer 413
at once, naming the bound and the setting that changes it (``OCTOTRAIN_MAX_REQUEST_BYTES``).

Uploads (``multipart/form-data``: dataset and model versions) are not bounded here: their
files are streamed to disk, never held whole. A body without a ``Content-Length`` (chunked) is
read up to the bound and handed on as it was sent.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

UNBOUNDED_TYPES = (b"multipart/form-data",)


class BodyLimit:
    """ASGI middleware: a request body over ``limit`` bytes answers 413."""

    def __init__(self, app: App, *, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self._unbounded(scope):
            await self.app(scope, receive, send)
            return
        length = self._header(scope, b"content-length")
        if length is not None:
            if length.isdigit() and int(length) > self.limit:
                await self._refuse(send)
                return
            await self.app(scope, receive, send)
            return
        chunks: list[Message] = []
        size = 0
        while True:
            message = await receive()
            chunks.append(message)
            size += len(message.get("body", b""))
            if size > self.limit:
                await self._refuse(send)
                return
            if message["type"] != "http.request" or not message.get("more_body"):
                break
        await self.app(scope, _replay(chunks, receive), send)

    def _unbounded(self, scope: Scope) -> bool:
        media = self._header(scope, b"content-type") or ""
        return media.encode().lower().startswith(UNBOUNDED_TYPES)

    @staticmethod
    def _header(scope: Scope, name: bytes) -> str | None:
        for key, value in scope.get("headers", []):
            if key.lower() == name:
                return value.decode("latin-1")
        return None

    async def _refuse(self, send: Send) -> None:
        detail = (
            f"the request body is larger than {self.limit} bytes, the most this API reads "
            "(OCTOTRAIN_MAX_REQUEST_BYTES); uploads of files go as multipart/form-data"
        )
        body = json.dumps({"detail": detail, "problems": [{"field": "body", "rule": detail}]})
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(body)).encode())]})  # fmt: skip
        await send({"type": "http.response.body", "body": body.encode()})


def _replay(chunks: list[Message], receive: Receive) -> Receive:
    """``receive`` that gives the chunks already read first."""
    pending = list(chunks)

    async def replayed() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replayed
