import { connect, createServer, type Server, type Socket } from 'node:net';

// A TCP proxy for network-fault tests, in front of the local stack's fault-test listener: the broker
// listens on 127.0.0.1:19094 and advertises 127.0.0.1:19095, so a client bootstrapped from the proxy
// on 19095 sends all its traffic (metadata and produce alike) through it (infra/README.md). The proxy
// can refuse (a broker down or restarting: connections reset, new ones refused) or freeze (a network
// partition: connections stay open, nothing goes through), and come back.

export const proxiedPort = Number(process.env.TIDEMARK_KAFKA_PROXIED_PORT ?? 19094);
export const proxyPort = Number(process.env.TIDEMARK_KAFKA_PROXY_PORT ?? 19095);

export interface KafkaProxy {
  /** The bootstrap address for a client whose traffic must go through the proxy. */
  readonly brokers: string[];
  /** Resets every connection, and each new one, as a broker that went down (the port stays held). */
  refuse(): Promise<void>;
  /** Keeps connections open but forwards nothing, either way (new ones are accepted and held). */
  freeze(): void;
  /**
   * A link that fails in the middle of a response: the next bytes the broker sends on any connection are
   * forwarded only in part (the first few), then every connection is reset; new ones are forwarded as
   * before. Resolves once it happened.
   */
  cutMidResponse(): Promise<void>;
  /** Forwards again (listening again after `refuse`). */
  restore(): Promise<void>;
  close(): Promise<void>;
}

/** Whether the fault-test listener is there (it is not when the endpoints come from elsewhere). */
export function faultListenerUp(): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port: proxiedPort });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

interface Pair {
  readonly client: Socket;
  upstream: Socket | null;
}

/**
 * Starts the proxy on the advertised port. Only one proxy can hold the port: another test's proxy is
 * waited for (up to `waitForPortMs`).
 */
export async function startKafkaProxy(waitForPortMs = 60_000): Promise<KafkaProxy> {
  const pairs = new Set<Pair>();
  let frozen = false;
  // Refusing keeps the port: a refusing proxy resets each new connection rather than stop listening,
  // or another test's proxy (waiting for the port) would take it over and forward in its place.
  let refusing = false;

  const forward = (pair: Pair): void => {
    if (pair.upstream !== null || pair.client.destroyed) return;
    const upstream = connect({ host: '127.0.0.1', port: proxiedPort });
    pair.upstream = upstream;
    pair.client.pipe(upstream);
    upstream.pipe(pair.client);
    const end = () => {
      pair.client.destroy();
      upstream.destroy();
      pairs.delete(pair);
    };
    upstream.on('error', end).on('close', end);
  };

  const server: Server = createServer((client) => {
    if (refusing) {
      client.on('error', () => undefined).resetAndDestroy();
      return;
    }
    const pair: Pair = { client, upstream: null };
    pairs.add(pair);
    client
      .on('error', () => undefined)
      .on('close', () => {
        pair.upstream?.destroy();
        pairs.delete(pair);
      });
    // Frozen: the connection is accepted and held (its bytes stay in the kernel's buffers).
    if (frozen) client.pause();
    else forward(pair);
  });

  const listen = async (): Promise<void> => {
    const deadline = Date.now() + waitForPortMs;
    for (;;) {
      try {
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen(proxyPort, '127.0.0.1', () => {
            server.off('error', reject);
            resolve();
          });
        });
        return;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
  };

  const stopListening = (): Promise<void> =>
    new Promise((resolve) => {
      if (!server.listening) resolve();
      else server.close(() => resolve());
    });

  await listen();
  return {
    brokers: [`127.0.0.1:${proxyPort}`],
    refuse() {
      frozen = false;
      refusing = true;
      for (const pair of pairs) {
        pair.client.resetAndDestroy();
        pair.upstream?.destroy();
      }
      pairs.clear();
      return Promise.resolve();
    },
    cutMidResponse() {
      return new Promise<void>((resolve) => {
        let cut = false;
        for (const pair of pairs) {
          const { client, upstream } = pair;
          if (upstream === null) continue;
          upstream.unpipe(client);
          upstream.once('data', (chunk: Buffer) => {
            if (cut) return;
            cut = true;
            client.write(chunk.subarray(0, Math.min(10, chunk.length - 1)));
            // A moment for those bytes to reach the client: a reset discards what it has not read yet.
            setTimeout(() => {
              for (const p of pairs) {
                p.client.resetAndDestroy();
                p.upstream?.destroy();
              }
              pairs.clear();
              resolve();
            }, 50);
          });
          upstream.resume();
        }
      });
    },
    freeze() {
      frozen = true;
      for (const { client, upstream } of pairs) {
        client.unpipe();
        upstream?.unpipe();
        client.pause();
        upstream?.pause();
      }
    },
    async restore() {
      frozen = false;
      refusing = false;
      for (const pair of pairs) {
        if (pair.upstream === null) {
          pair.client.resume();
          forward(pair);
        } else {
          pair.client.pipe(pair.upstream);
          pair.upstream.pipe(pair.client);
        }
      }
      if (!server.listening) await listen();
    },
    async close() {
      const closed = stopListening();
      for (const pair of pairs) {
        pair.client.destroy();
        pair.upstream?.destroy();
      }
      pairs.clear();
      await closed;
    },
  };
}
