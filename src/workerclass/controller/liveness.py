"""The controller's liveness endpoint: ``/healthz`` answers 200 while the process's loop runs.

Every replica answers it, the leader and the ones waiting for the Lease alike. Its edge: one
aiohttp route on loopback or all addresses.
"""

from __future__ import annotations

from aiohttp import web

__all__ = ["serve_liveness"]


async def serve_liveness(port: int, path: str, host: str = "0.0.0.0") -> web.AppRunner:
    """Start answering ``GET path`` with 200 on ``host:port``; ``await runner.cleanup()`` stops it."""

    async def healthy(_: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    app = web.Application()
    app.router.add_get(path, healthy)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner
