// Resuming a thread subscription after a reconnect by event number (`seq`): the events missed
// while disconnected arrive once each and in order, then live ones; a gap the server no longer
// keeps is reported with `onResyncNeeded`. The connection is cut with a proxy in front of the
// real server, which refuses the client's reconnects until the test lets them through.

import assert from "node:assert/strict";
import { test } from "node:test";

import { AppServerClient, seqOf, turnIdOf, type EventStream, type Notification } from "../src/index.js";
import { startProxy, startServer, within } from "./server.js";

const identity = { channelName: "test", userId: "user-1", channelContext: "ctx-1" };
const OPTIONS = { timeout: 60_000 };
const RECONNECT = { initialDelayMs: 20, maxDelayMs: 200, maxAttempts: 500 };

/** Pulls from `stream` until (and including) the terminal notification of `turnId`. */
async function untilTurnEnd(stream: EventStream<Notification>, turnId: string, what: string): Promise<Notification[]> {
  const seen: Notification[] = [];
  await within(
    (async () => {
      for (;;) {
        const next = await stream.next();
        if (next.done) throw new Error(`the stream ended while waiting for ${what}`);
        seen.push(next.value);
        if (next.value.method === "turn/completed" && turnIdOf(next.value) === turnId) return;
      }
    })(),
    what,
  );
  return seen;
}

/** The `seq` of each numbered event. */
function seqs(events: Notification[]): number[] {
  return events.flatMap((n) => {
    const numbered = seqOf(n);
    return numbered ? [numbered.seq] : [];
  });
}

/** Runs a whole turn as `user` and returns the seqs of its events. */
async function runTurn(user: AppServerClient, threadId: string, text: string): Promise<{ turnId: string; seqs: number[] }> {
  const { turn, events } = await user.startTurn({ threadId, input: [{ type: "text", text }] });
  const own: Notification[] = [];
  await within(
    (async () => {
      for await (const n of events) own.push(n);
    })(),
    `the turn "${text}"`,
  );
  assert.equal(own.at(-1)?.method, "turn/completed");
  return { turnId: turn.id, seqs: seqs(own) };
}

/** A thread started by `user` that `watcher` subscribes to, and the watcher's stream of it. */
async function watchedThread(user: AppServerClient, watcher: AppServerClient) {
  const { thread } = await user.request("thread/start", { identity });
  await watcher.request("thread/subscribe", { threadId: thread.id });
  return { thread, stream: watcher.threadEvents(thread.id) };
}

function assertContiguous(list: number[], first: number): void {
  assert.deepEqual(
    list,
    list.map((_, i) => first + i),
    `seqs ${list.join(",")} run on from ${first - 1}`,
  );
}

test("a subscriber that reconnects gets the turn it missed, each event once, then live ones", OPTIONS, async () => {
  const server = await startServer();
  const proxy = await startProxy(server.url);
  const user = await AppServerClient.connect({ url: server.url });
  const watcher = await AppServerClient.connect({ url: proxy.url, reconnect: RECONNECT });
  try {
    const resyncs: string[] = [];
    watcher.onResyncNeeded((threadId) => resyncs.push(threadId));
    const { thread, stream } = await watchedThread(user, watcher);

    const first = await runTurn(user, thread.id, "one");
    const seen1 = seqs(await untilTurnEnd(stream, first.turnId, "the first turn at the watcher"));
    assert.deepEqual(seen1, first.seqs);
    assertContiguous(seen1, seen1[0]!);
    const last = watcher.lastSeq(thread.id)!;
    assert.equal(last, seen1.at(-1));

    // Disconnected (and kept so), the watcher misses a whole turn.
    const back = new Promise<void>((resolve) => watcher.onReconnect(resolve));
    proxy.cut();
    const missed = await runTurn(user, thread.id, "two");
    assertContiguous(missed.seqs, last + 1);
    proxy.resume();
    await within(back, "the reconnect");

    const caughtUp = await untilTurnEnd(stream, missed.turnId, "the missed turn at the watcher");
    assert.deepEqual(seqs(caughtUp), missed.seqs, "exactly the missed turn's events, once each, in order");
    assert.ok(caughtUp.filter((n) => seqOf(n)).every((n) => turnIdOf(n) === missed.turnId));

    const live = await runTurn(user, thread.id, "three");
    assertContiguous(live.seqs, missed.seqs.at(-1)! + 1);
    const seenLive = await untilTurnEnd(stream, live.turnId, "the live turn at the watcher");
    assert.deepEqual(seqs(seenLive), live.seqs, "then the live turn's events");
    assert.equal(watcher.lastSeq(thread.id), live.seqs.at(-1));
    assert.deepEqual(resyncs, [], "nothing was lost");

    // Defence in depth: a frame numbered at or below the last delivered is dropped.
    const lastLive = live.seqs.at(-1)!;
    const frame = (seq: number) =>
      JSON.stringify({ jsonrpc: "2.0", method: "item/agentMessage/delta", params: { threadId: thread.id, turnId: live.turnId, itemId: "x", deltaKind: "agentMessage", delta: String(seq), seq } });
    (watcher as any).receive(frame(lastLive));
    (watcher as any).receive(frame(lastLive + 1));
    const injected = await within(
      (async () => {
        for (;;) {
          const next = await stream.next();
          if (next.done) throw new Error("the stream ended");
          if (seqOf(next.value)) return next.value;
        }
      })(),
      "the injected event",
    );
    assert.equal(seqOf(injected)?.seq, lastLive + 1, "the duplicate was dropped");
  } finally {
    watcher.close();
    user.close();
    await proxy.close();
    await server.stop();
  }
});

test("a gap the server no longer keeps is reported with onResyncNeeded, and live events go on", OPTIONS, async () => {
  // Only the current and the previous turn's events kept (by default the last 4,096 too).
  const server = await startServer(["--min-kept-events", "0"]);
  const proxy = await startProxy(server.url);
  const user = await AppServerClient.connect({ url: server.url });
  const watcher = await AppServerClient.connect({ url: proxy.url, reconnect: RECONNECT });
  try {
    const resyncs: string[] = [];
    watcher.onResyncNeeded((threadId) => resyncs.push(threadId));
    const { thread, stream } = await watchedThread(user, watcher);
    const first = await runTurn(user, thread.id, "one");
    await untilTurnEnd(stream, first.turnId, "the first turn at the watcher");

    // The log keeps the current turn's events and the previous turn's: three turns later, the
    // events right after the watcher's last are gone.
    const back = new Promise<void>((resolve) => watcher.onReconnect(resolve));
    proxy.cut();
    for (const text of ["two", "three", "four"]) await runTurn(user, thread.id, text);
    proxy.resume();
    await within(back, "the reconnect");
    assert.deepEqual(resyncs, [thread.id], "the thread needs a resync");
    assert.equal(watcher.lastSeq(thread.id), undefined, "its last seq is forgotten");

    const live = await runTurn(user, thread.id, "five");
    const seenLive = await untilTurnEnd(stream, live.turnId, "the live turn at the watcher");
    assert.deepEqual(seqs(seenLive), live.seqs, "subscribed again, the watcher gets live events");
  } finally {
    watcher.close();
    user.close();
    await proxy.close();
    await server.stop();
  }
});
