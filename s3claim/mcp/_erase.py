"""The erase door of a proxy serving HTTP: `POST /erase`, a request signed with the handle key.

A proxy on the memory store holds claims no other process can reach, so `s3claim forget
--proxy URL` erases a tenant (or one run) through it: the request (`s3claim.erasure.
EraseRequest`) is signed under S3CLAIM_HANDLE_KEY, which the proxy's store must share (a
memory store that drew its own key refuses every request), and the answer is the erasure's
signed receipt. Only sizes and tags are logged, never a name (docs/mcp-proxy.md, "Erasing
a tenant").
"""

from __future__ import annotations

import logging
import time
from functools import partial

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from s3claim.claim_tools import failure_reason
from s3claim.erasure import ERASE_PATH, ERASE_SIGNATURE_HEADER, EraseRequest
from s3claim.scope import Scope
from s3claim.store import RangedStore

__all__ = ["erase_route"]

_log = logging.getLogger("s3claim")
_MAX_BODY = 4096
"""More than any request's body (a tenant and a run name, 256 characters each at most)."""


def _said(status: int, line: str) -> Response:
    return PlainTextResponse(line + "\n", status_code=status)


def erase_route(store: RangedStore) -> Route:
    """`POST /erase` for `store`: the erasure a signed, fresh request names."""

    async def erase(request: Request) -> Response:
        body = b""
        async for piece in request.stream():
            body += piece
            if len(body) > _MAX_BODY:
                return _said(413, f"an erase request is at most {_MAX_BODY} bytes")
        signature = request.headers.get(ERASE_SIGNATURE_HEADER, "")
        try:
            wanted = EraseRequest.received(body, signature, store.handle_key, now=time.time())
        except ValueError as exc:  # unsigned, another key's, stale, or no request at all
            return _said(403, f"erase refused: {str(exc).splitlines()[0]}")
        try:
            Scope(wanted.tenant, wanted.run or "any")
        except ValueError:  # the names are the client's: not quoted back
            return _said(400, "erase refused: the tenant or the run is not a name s3claim takes")
        erasing = partial(store.erase, tenant=wanted.tenant, run=wanted.run)
        try:
            receipt = await anyio.to_thread.run_sync(erasing)
        except Exception as exc:  # the store's fault: said as its reason, the proxy goes on
            _log.warning("erase over HTTP failed: %s", failure_reason(exc))
            return _said(503, f"the store could not erase: {failure_reason(exc)}")
        _log.info(
            "erased over HTTP: tenant %s%s, %d claim(s)",
            receipt.tenant,
            f" run {receipt.run}" if receipt.run else "",
            receipt.claims,
        )
        return Response(receipt.to_json(), media_type="application/json")

    return Route(ERASE_PATH, erase, methods=["POST"])
