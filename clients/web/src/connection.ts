// The page's connection to its server, and what the user is told about it: connecting,
// connected, reconnecting (with a countdown to the next attempt and "Retry now"), or offline
// (the browser is offline, or the attempts ran out: "Retry"). A dropped WebSocket is noticed at
// once (its close event ends the client's notification stream) and each reconnect is a fresh
// `AppServerClient`, handed to the page to catch up (`afterSeq`), host its windows again and
// send its outbox. A server that hangs without closing the socket is found by a heartbeat.

import { AppServerClient, TimeoutError, type ConnectOptions, type Notification } from "../../typescript/src/index.js";

export type ConnectionState = "connecting" | "connected" | "reconnecting" | "offline";

/** Seconds between attempts, growing; the last repeats until MAX_ATTEMPTS. */
const DELAYS_S = [1, 2, 3, 5, 8, 10];
/** Attempts before the page says "offline" and waits for the user (or the browser going online). */
const MAX_ATTEMPTS = 12;
/** Bound on opening a connection. */
const CONNECT_TIMEOUT_MS = 5_000;
/** A connection that is up but says nothing (a hung server, a dead network path) is found by a
 * heartbeat: a cheap request every HEARTBEAT_MS that must be answered (any answer, an error
 * included) within HEARTBEAT_TIMEOUT_MS. */
const HEARTBEAT_MS = 10_000;
const HEARTBEAT_TIMEOUT_MS = 5_000;

export interface ConnectionEvents {
  /** A new connection is up (`first`: the page's first). Its failure drops the connection. */
  connected(client: AppServerClient, first: boolean): Promise<void>;
  /** The connection is gone (pending requests on it have failed). */
  disconnected(): void;
  notification(n: Notification): void;
  state(state: ConnectionState, text: string): void;
}

export class Connection {
  client: AppServerClient | undefined;
  state: ConnectionState = "connecting";
  private attempt = 0;
  private everConnected = false;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private ticker: ReturnType<typeof setInterval> | undefined;
  private connecting = false;
  private heartbeat: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly options: ConnectOptions,
    private readonly events: ConnectionEvents,
  ) {
    window.addEventListener("online", () => {
      if (this.state === "offline" || this.state === "reconnecting") this.retryNow();
    });
    window.addEventListener("offline", () => {
      if (this.state === "connected") return;
      // No countdown while there is no network: the browser going online retries.
      this.clearTimers();
      this.set("offline", "offline: the browser has no network");
    });
  }

  get connected(): boolean {
    return this.state === "connected";
  }

  start(): void {
    this.set("connecting", "connecting…");
    void this.tryConnect();
  }

  /** Skips the countdown (or leaves "offline"): tries at once. */
  retryNow(): void {
    if (this.connecting || this.state === "connected") return;
    this.clearTimers();
    this.attempt = 0;
    void this.tryConnect();
  }

  private async tryConnect(): Promise<void> {
    this.connecting = true;
    this.set(this.everConnected ? "reconnecting" : "connecting", this.everConnected ? "reconnecting: trying now…" : "connecting…");
    let client: AppServerClient;
    try {
      client = await AppServerClient.connect({ ...this.options, reconnect: false, connectTimeoutMs: CONNECT_TIMEOUT_MS });
    } catch {
      this.connecting = false;
      this.scheduleRetry();
      return;
    }
    this.client = client;
    const stream = client.notifications();
    const first = !this.everConnected;
    this.everConnected = true;
    this.attempt = 0;
    this.set("connected", "connected");
    this.beat(client);
    // The stream ends (with an error) when the socket closes: that is the drop, noticed at once.
    void (async () => {
      try {
        for await (const n of stream) this.events.notification(n);
      } catch {
        // Closed: handled below.
      }
      this.dropped(client);
    })();
    try {
      await this.events.connected(client, first);
    } catch (err) {
      console.warn("desktop: setting up the connection failed", err);
      if (this.client === client) client.dropConnection();
    } finally {
      this.connecting = false;
    }
  }

  private beat(client: AppServerClient): void {
    clearInterval(this.heartbeat);
    this.heartbeat = setInterval(() => {
      client.request("command/list", {} as any, { timeoutMs: HEARTBEAT_TIMEOUT_MS }).catch((err) => {
        if (!(err instanceof TimeoutError) || this.client !== client) return;
        // No answer: the connection is as good as gone (its close may never come).
        this.dropped(client);
        client.close();
      });
    }, HEARTBEAT_MS);
  }

  private dropped(client: AppServerClient): void {
    if (this.client !== client) return;
    clearInterval(this.heartbeat);
    this.client = undefined;
    this.events.disconnected();
    this.attempt = 0;
    this.scheduleRetry();
  }

  private scheduleRetry(): void {
    this.clearTimers();
    if (this.attempt >= MAX_ATTEMPTS || navigator.onLine === false) {
      this.set("offline", navigator.onLine === false ? "offline: the browser has no network" : "offline: the server does not answer");
      return;
    }
    const delay = DELAYS_S[Math.min(this.attempt, DELAYS_S.length - 1)]!;
    this.attempt++;
    const at = Date.now() + delay * 1000;
    const show = () => {
      const left = Math.max(0, Math.ceil((at - Date.now()) / 1000));
      this.set(this.everConnected ? "reconnecting" : "connecting", `${this.everConnected ? "reconnecting" : "connecting"} in ${left} s`);
    };
    show();
    this.ticker = setInterval(show, 250);
    this.timer = setTimeout(() => {
      this.clearTimers();
      void this.tryConnect();
    }, delay * 1000);
  }

  private clearTimers(): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.ticker) clearInterval(this.ticker);
    this.timer = undefined;
    this.ticker = undefined;
  }

  private set(state: ConnectionState, text: string): void {
    this.state = state;
    this.events.state(state, text);
  }
}
