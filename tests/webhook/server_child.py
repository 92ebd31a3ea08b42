"""A webhook server in a process of its own (its RSS and its signal handling are what some tests measure).

    python -m tests.webhook.server_child CERT KEY PORT_FILE '{"max_connections": 64, ...}'

Serves the admission tests' state over HTTPS on 127.0.0.1 with :class:`Settings` overridden by the
JSON argument, until SIGTERM (``WebhookServer.serve``: drain, then exit). Writes the port to
PORT_FILE once listening; logs go to stderr.
"""

from __future__ import annotations

import asyncio
import json
import logging
import resource
import sys
from pathlib import Path

from workerclass.adapters.tls import ReloadingContext
from workerclass.webhook import StaticSource
from workerclass.webhook.server import Settings, WebhookServer

from .cases import table_state


async def main(cert: Path, key: Path, port_file: Path, overrides: dict[str, object]) -> None:
    values: dict[str, object] = {"host": "127.0.0.1", "port": 0, "shutdown_delay": 0.0}
    values.update(overrides)
    server = WebhookServer(
        StaticSource(table_state()),
        tls=ReloadingContext(cert, key),
        settings=Settings(**values),  # type: ignore[arg-type]
    )
    stop = asyncio.Event()
    serving = asyncio.create_task(server.serve(stop=stop))
    while server._port is None:
        if serving.done():
            await serving  # raises why it did not start
        await asyncio.sleep(0.01)
    port_file.write_text(str(server.port))
    await serving


if __name__ == "__main__":
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    cert, key, port_file = (Path(arg) for arg in sys.argv[1:4])
    asyncio.run(main(cert, key, port_file, json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}))
