import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

// A TCP proxy on loopback for network-fault tests: put between a client and Kafka or Redis, it forwards
// bytes both ways and, on demand, adds latency, drops every connection (reset, as a crashed middlebox
// or a flapping link), or freezes (a partition: connections stay open, nothing goes through either way,
// new ones are accepted and held), and comes back. Order within a connection is always kept.

export interface FaultProxy {
  /** `127.0.0.1:<port>`: where a client connects instead of the target. */
  readonly address: string;
  readonly port: number;
  /** Delays every chunk by this long, each way (0: none). */
  delay(ms: number): void;
  /** Resets every open connection; new ones are forwarded as before. */
  drop(): void;
  /**
   * Resets every open connection in the middle of a response: of the next bytes the target sends on any
   * of them, only the first few are forwarded before the reset (a link failing mid-transfer). If the
   * target sends nothing within a second, resets them then.
   */
  cut(): void;
  /** Forwards nothing, either way, until `restore` (open connections kept, new ones held). */
  freeze(): void;
  /** Ends a freeze: held bytes and connections go on. */
  restore(): void;
  close(): Promise<void>;
}

interface Pair {
  readonly client: Socket;
  readonly upstream: Socket;
}

/** Starts a proxy to `target` on `port` (0: any free port). */
export async function startFaultProxy(
  target: { readonly host: string; readonly port: number },
  port = 0,
): Promise<FaultProxy> {
  const pairs = new Set<Pair>();
  let delayMs = 0;
  let frozen = false;
  /** Set by `cut` until the cut happens (or its fallback drop). */
  let cutting: NodeJS.Timeout | null = null;

  /**
   * Copies `from` to `to`, delayed as set when each chunk arrives, in order: one queue per direction,
   * drained by one timer at a time (timers of different durations may fire out of order). After a cut
   * on the connection, nothing more is forwarded: the bytes after the partial chunk would corrupt the
   * stream instead of ending it.
   */
  const relay = (from: Socket, to: Socket, fromTarget: boolean, link: { severed: boolean }): void => {
    const queue: { due: number; chunk: Buffer }[] = [];
    let draining = false;
    const drain = (): void => {
      while (queue.length > 0 && queue[0]!.due <= Date.now()) {
        const { chunk } = queue.shift()!;
        if (!to.destroyed && !link.severed) to.write(chunk);
      }
      draining = queue.length > 0;
      if (draining) setTimeout(drain, Math.max(0, queue[0]!.due - Date.now()));
    };
    from.on('data', (chunk: Buffer) => {
      if (link.severed) return;
      if (fromTarget && cutting !== null && chunk.length > 1) {
        clearTimeout(cutting);
        cutting = null;
        link.severed = true;
        to.write(chunk.subarray(0, Math.min(10, chunk.length - 1)));
        // A moment for those bytes to reach the client: a reset discards what it has not read yet.
        setTimeout(drop, 50);
        return;
      }
      if (delayMs === 0 && queue.length === 0) {
        to.write(chunk);
        return;
      }
      queue.push({ due: Date.now() + delayMs, chunk });
      if (!draining) {
        draining = true;
        setTimeout(drain, delayMs);
      }
    });
  };

  const server: Server = createServer((client) => {
    const upstream = connect(target);
    const pair = { client, upstream };
    pairs.add(pair);
    const end = () => {
      client.destroy();
      upstream.destroy();
      pairs.delete(pair);
    };
    for (const socket of [client, upstream]) socket.on('error', end).on('close', end);
    const link = { severed: false };
    relay(client, upstream, false, link);
    relay(upstream, client, true, link);
    if (frozen) {
      client.pause();
      upstream.pause();
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const bound = (server.address() as AddressInfo).port;

  const drop = (): void => {
    for (const { client, upstream } of pairs) {
      client.resetAndDestroy();
      upstream.destroy();
    }
    pairs.clear();
  };
  return {
    address: `127.0.0.1:${bound}`,
    port: bound,
    delay(ms) {
      delayMs = ms;
    },
    drop,
    cut() {
      if (cutting !== null) return;
      cutting = setTimeout(() => {
        cutting = null;
        drop();
      }, 1_000);
    },
    freeze() {
      frozen = true;
      for (const { client, upstream } of pairs) {
        client.pause();
        upstream.pause();
      }
    },
    restore() {
      frozen = false;
      for (const { client, upstream } of pairs) {
        client.resume();
        upstream.resume();
      }
    },
    async close() {
      drop();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
