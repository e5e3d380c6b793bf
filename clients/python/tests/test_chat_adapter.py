"""The example chat adapter (examples/chat_adapter.py) as a process against the real binary: a
chat line gets the agent's answer, and an app command asks for approval as a prompt."""

import asyncio
import sys
from pathlib import Path

from sheet import MANIFEST, Sheet
from support import TIMEOUT, running_server

from appserver_client import AppServerClient

ADAPTER = Path(__file__).resolve().parents[1] / "examples" / "chat_adapter.py"


async def read_until(stdout: asyncio.StreamReader, needle: str) -> list:
    lines = []
    while True:
        line = await asyncio.wait_for(stdout.readline(), TIMEOUT)
        if not line:
            raise AssertionError(f"the adapter ended before printing {needle!r}: {lines}")
        lines.append(line.decode())
        if needle in lines[-1]:
            return lines


def test_the_chat_adapter_answers_and_asks_for_approval():
    async def body():
        async with running_server() as server:
            host = await AppServerClient.connect(server.url)
            adapter = await asyncio.create_subprocess_exec(
                sys.executable, str(ADAPTER), server.url, "--user", "alice",
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
            )
            try:
                sheet = Sheet()
                window = (await host.register_app(MANIFEST, sheet.handlers)).window_id
                adapter.stdin.write(b"hello\n")
                lines = await read_until(adapter.stdout, "bot: ")
                assert "No language model is configured" in lines[-1]

                adapter.stdin.write(f'/command {window} setCells {{"cells":{{"A1":"5"}}}}\n'.encode())
                prompt = (await read_until(adapter.stdout, "approve "))[-1]
                assert "setCells" in prompt and "[y]es" in prompt
                adapter.stdin.write(b"y\n")
                await read_until(adapter.stdout, "bot: ")
                assert sheet.cells == {"A1": "5"}

                adapter.stdin.close()
                assert await asyncio.wait_for(adapter.wait(), TIMEOUT) == 0
            finally:
                if adapter.returncode is None:
                    adapter.kill()
                    await adapter.wait()
                await host.close()

    asyncio.run(asyncio.wait_for(body(), 3 * TIMEOUT))
