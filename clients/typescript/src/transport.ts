// Transports: a text frame in, a text frame out. WebSocket (the browser's, or `ws` on Node) and
// stdio (a spawned `appserver` speaking JSON lines).

import type { ChildProcessWithoutNullStreams } from "node:child_process";

/** One connection's frames. `onClose` fires once, whoever closed. */
export interface Transport {
  send(text: string): void;
  close(): void;
  onMessage: (text: string) => void;
  onClose: (reason: string) => void;
}

/** Opens a WebSocket (the global one in browsers and Node 22+, else the `ws` package). */
export async function openWebSocket(url: string, timeoutMs: number): Promise<Transport> {
  const Impl: any = (globalThis as any).WebSocket ?? (await import("ws")).default;
  const socket: any = new Impl(url);
  const transport: Transport = {
    send: (text) => socket.send(text),
    close: () => socket.close(),
    onMessage: () => {},
    onClose: () => {},
  };
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      socket.close();
      reject(new Error(`connecting to ${url} timed out after ${timeoutMs} ms`));
    }, timeoutMs);
    socket.onopen = () => {
      clearTimeout(timer);
      resolve();
    };
    socket.onerror = (event: any) => {
      clearTimeout(timer);
      reject(new Error(`cannot connect to ${url}: ${event?.message ?? "error"}`));
    };
  });
  let closed = false;
  socket.onmessage = (event: any) => transport.onMessage(String(event.data));
  socket.onerror = () => {};
  socket.onclose = (event: any) => {
    if (!closed) {
      closed = true;
      transport.onClose(`WebSocket closed (${event?.code ?? "?"})`);
    }
  };
  return transport;
}

/** Speaks JSON lines over a spawned server's stdin/stdout (Node only). */
export async function spawnStdio(command: string, args: string[], env?: Record<string, string | undefined>): Promise<Transport & { process: ChildProcessWithoutNullStreams }> {
  const { spawn } = await import("node:child_process");
  const child = spawn(command, args, { stdio: ["pipe", "pipe", "pipe"], env: env ?? process.env });
  let buffer = "";
  let closed = false;
  const transport = {
    process: child,
    send: (text: string) => {
      child.stdin.write(text + "\n");
    },
    close: () => {
      child.stdin.end();
    },
    onMessage: (_text: string) => {},
    onClose: (_reason: string) => {},
  };
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk: string) => {
    buffer += chunk;
    let newline: number;
    while ((newline = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + 1);
      if (line.trim() !== "") transport.onMessage(line);
    }
  });
  child.stderr.resume();
  const finish = (reason: string) => {
    if (!closed) {
      closed = true;
      transport.onClose(reason);
    }
  };
  child.stdout.on("end", () => finish("stdout closed"));
  child.on("error", (err) => finish(`spawn failed: ${err.message}`));
  child.stdin.on("error", () => {});
  return transport;
}
