"""The quickstart of docs/clients.md (examples/quickstart.py), run as a process against the real
binary: it hosts an app, drives it with /command through an approval, streams the turn to
completion, reports a typed error and unregisters its app with `forget`. Run twice on one server,
it leaves no window behind."""

import asyncio
import sys
from pathlib import Path

from support import TIMEOUT, running_server

from appserver_client import AppServerClient

QUICKSTART = Path(__file__).resolve().parents[1] / "examples" / "quickstart.py"


async def run_quickstart(url: str) -> str:
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(QUICKSTART), url,
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
    return text


def test_the_quickstart_of_the_docs_runs_twice_and_leaves_no_window():
    async def body():
        async with running_server() as server:
            for _ in range(2):
                text = await run_quickstart(server.url)
                assert "approve shell app_command sheet" in text
                assert "done: completed" in text
                assert "-32010" in text
            client = await asyncio.wait_for(
                AppServerClient.connect(server.url, client_info={"name": "examples-test", "version": "1.0.0"}), TIMEOUT
            )
            try:
                apps = (await client.request("app/list", {}))["apps"]
            finally:
                await client.close()
            left = [app for app in apps if app["appId"] == "sheet"]
            assert left == [], f"a quickstart run left its window (and its log) behind: {left}"

    asyncio.run(asyncio.wait_for(body(), 4 * TIMEOUT))
