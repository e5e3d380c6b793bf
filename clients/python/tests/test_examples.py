"""The quickstart of docs/clients.md (examples/quickstart.py), run as a process against the real
binary: it hosts an app, drives it with /command through an approval, streams the turn to
completion and reports a typed error."""

import asyncio
import sys
from pathlib import Path

from support import TIMEOUT, running_server

QUICKSTART = Path(__file__).resolve().parents[1] / "examples" / "quickstart.py"


def test_the_quickstart_of_the_docs_runs():
    async def body():
        async with running_server() as server:
            process = await asyncio.create_subprocess_exec(
                sys.executable, str(QUICKSTART), server.url,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            )
            try:
                out, _ = await asyncio.wait_for(process.communicate(), TIMEOUT)
            finally:
                if process.returncode is None:
                    process.kill()
                    await process.wait()
            text = out.decode()
            assert process.returncode == 0, text
            assert "approve shell app_command sheet" in text
            assert "done: completed" in text
            assert "-32010" in text

    asyncio.run(asyncio.wait_for(body(), 3 * TIMEOUT))
