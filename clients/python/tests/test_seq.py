"""Resuming a thread subscription after a reconnect by event number (`seq`): the events missed
while disconnected arrive once each and in order, then live ones; a gap the server no longer
keeps is reported with `on_resync_needed`. The connection is cut with a proxy in front of the
real server, which refuses the client's reconnects until the test lets them through."""

import asyncio
import json
from typing import List, Tuple

from support import IDENTITY, TIMEOUT, Proxy, running_server

from appserver_client import AppServerClient, Notification, NotificationStream, Reconnect

RECONNECT = Reconnect(initial_delay=0.02, max_delay=0.2, max_attempts=500)


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 3 * TIMEOUT))


def seqs(events: List[Notification]) -> List[int]:
    return [n.seq for n in events if n.seq is not None]


async def until_turn_end(stream: NotificationStream, turn_id: str) -> List[Notification]:
    """Pulls from `stream` until (and including) the `turn/completed` of `turn_id`."""

    async def pull() -> List[Notification]:
        seen = []
        async for n in stream:
            seen.append(n)
            if n.method == "turn/completed" and n.turn_id == turn_id:
                return seen
        raise AssertionError("the stream ended before the turn did")

    return await asyncio.wait_for(pull(), TIMEOUT)


async def run_turn(user: AppServerClient, thread_id: str, text: str) -> Tuple[str, List[int]]:
    """Runs a whole turn as `user`; returns its id and the seqs of its events."""
    turn, events = await user.start_turn({"threadId": thread_id, "input": [{"type": "text", "text": text}]})
    own = await events.collect(TIMEOUT)
    assert own[-1].method == "turn/completed"
    return turn["id"], seqs(own)


def assert_contiguous(values: List[int], first: int) -> None:
    assert values == list(range(first, first + len(values))), f"seqs {values} run on from {first - 1}"


async def connected(server_url: str, proxy: Proxy) -> Tuple[AppServerClient, AppServerClient, List[str]]:
    user = await AppServerClient.connect(server_url)
    watcher = await AppServerClient.connect(proxy.url, reconnect=RECONNECT)
    resyncs: List[str] = []
    watcher.on_resync_needed(resyncs.append)
    return user, watcher, resyncs


async def watched_thread(user, watcher):
    """A thread started by `user` that `watcher` subscribes to, and the watcher's stream of it."""
    thread_id = (await user.thread_start({"identity": IDENTITY}))["thread"]["id"]
    await watcher.request("thread/subscribe", {"threadId": thread_id})
    return thread_id, watcher.thread_events(thread_id)


def test_a_subscriber_that_reconnects_gets_the_turn_it_missed_once_then_live_ones():
    async def body():
        async with running_server() as server:
            proxy = await Proxy(server.url).start()
            user, watcher, resyncs = await connected(server.url, proxy)
            try:
                thread_id, stream = await watched_thread(user, watcher)

                first, first_seqs = await run_turn(user, thread_id, "one")
                seen1 = seqs(await until_turn_end(stream, first))
                assert seen1 == first_seqs
                assert_contiguous(seen1, seen1[0])
                last = watcher.last_seq(thread_id)
                assert last == seen1[-1]

                # Disconnected (and kept so), the watcher misses a whole turn.
                back = asyncio.Event()
                watcher.on_reconnect(back.set)
                proxy.cut()
                missed, missed_seqs = await run_turn(user, thread_id, "two")
                assert_contiguous(missed_seqs, last + 1)
                proxy.resume()
                await asyncio.wait_for(back.wait(), TIMEOUT)

                caught_up = await until_turn_end(stream, missed)
                assert seqs(caught_up) == missed_seqs, "exactly the missed turn's events, once each, in order"
                assert all(n.turn_id == missed for n in caught_up if n.seq is not None)

                live, live_seqs = await run_turn(user, thread_id, "three")
                assert_contiguous(live_seqs, missed_seqs[-1] + 1)
                assert seqs(await until_turn_end(stream, live)) == live_seqs, "then the live turn's events"
                assert watcher.last_seq(thread_id) == live_seqs[-1]
                assert resyncs == [], "nothing was lost"

                # Defence in depth: a frame numbered at or below the last delivered is dropped.
                def frame(seq: int) -> str:
                    params = {"threadId": thread_id, "turnId": live, "itemId": "x", "deltaKind": "agentMessage", "delta": str(seq), "seq": seq}
                    return json.dumps({"jsonrpc": "2.0", "method": "item/agentMessage/delta", "params": params})

                watcher._receive(frame(live_seqs[-1]))
                watcher._receive(frame(live_seqs[-1] + 1))

                async def next_numbered() -> Notification:
                    async for n in stream:
                        if n.seq is not None:
                            return n
                    raise AssertionError("the stream ended")

                injected = await asyncio.wait_for(next_numbered(), TIMEOUT)
                assert injected.seq == live_seqs[-1] + 1, "the duplicate was dropped"
            finally:
                await watcher.close()
                await user.close()
                proxy.close()

    run(body())


def test_a_gap_the_server_no_longer_keeps_is_reported_and_live_events_go_on():
    async def body():
        # Only the current and the previous turn's events kept (by default the last 4,096 too).
        async with running_server(["--min-kept-events", "0"]) as server:
            proxy = await Proxy(server.url).start()
            user, watcher, resyncs = await connected(server.url, proxy)
            try:
                thread_id, stream = await watched_thread(user, watcher)
                first, _ = await run_turn(user, thread_id, "one")
                await until_turn_end(stream, first)

                # The log keeps the current turn's events and the previous turn's here: three
                # turns later, the events right after the watcher's last are gone.
                back = asyncio.Event()
                watcher.on_reconnect(back.set)
                proxy.cut()
                for text in ("two", "three", "four"):
                    await run_turn(user, thread_id, text)
                proxy.resume()
                await asyncio.wait_for(back.wait(), TIMEOUT)
                assert resyncs == [thread_id], "the thread needs a resync"
                assert watcher.last_seq(thread_id) is None, "its last seq is forgotten"

                live, live_seqs = await run_turn(user, thread_id, "five")
                assert seqs(await until_turn_end(stream, live)) == live_seqs, "subscribed again, live events arrive"
            finally:
                await watcher.close()
                await user.close()
                proxy.close()

    run(body())
