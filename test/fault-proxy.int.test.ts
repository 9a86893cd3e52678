import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';
import { startFaultProxy, type FaultProxy } from '@tidemark/test-infra';
import { afterEach, describe, expect, it } from 'vitest';

// The network-fault tests' proxy must fail a connection the way a network does: bytes arrive in order or
// not at all. A cut forwards a few bytes of a response and resets; anything forwarded after them would be
// the middle of a frame, which a Kafka client reads as a garbage size (kafkajs then throws
// ERR_BUFFER_OUT_OF_BOUNDS outside any promise, failing the run that used the proxy).

let target: Server | null = null;
let proxy: FaultProxy | null = null;
afterEach(async () => {
  await proxy?.close();
  await new Promise((resolve) => (target === null ? resolve(null) : target.close(resolve)));
});

/** A target that answers each byte it reads with `answer` bytes, written in `pieces` separate writes. */
async function startTarget(answer: number, pieces: number): Promise<number> {
  target = createServer((socket) => {
    socket.on('error', () => undefined);
    socket.on('data', () => {
      const body = Buffer.alloc(answer, 7);
      const size = Math.ceil(answer / pieces);
      for (let i = 0; i < answer; i += size) socket.write(body.subarray(i, i + size));
    });
  });
  await new Promise<void>((resolve) => target!.listen(0, '127.0.0.1', resolve));
  return (target.address() as AddressInfo).port;
}

/** Everything the client receives until its connection ends. */
function received(socket: Socket): Promise<number> {
  let bytes = 0;
  socket.on('data', (chunk: Buffer) => (bytes += chunk.length));
  return new Promise((resolve) => {
    socket.on('close', () => resolve(bytes));
    socket.on('error', () => undefined);
  });
}

describe('the fault proxy', () => {
  it('forwards only the first bytes of a cut response, and nothing after them', async () => {
    const port = await startTarget(64 * 1024, 64);
    proxy = await startFaultProxy({ host: '127.0.0.1', port });
    const client = connect(proxy.port, '127.0.0.1');
    await new Promise((resolve) => client.once('connect', resolve));
    const total = received(client);
    proxy.cut();
    client.write('x');
    expect(await total).toBeLessThanOrEqual(10);
  });

  it('keeps the order of the bytes under latency', async () => {
    target = createServer((socket) => socket.pipe(socket).on('error', () => undefined));
    await new Promise<void>((resolve) => target!.listen(0, '127.0.0.1', resolve));
    proxy = await startFaultProxy({ host: '127.0.0.1', port: (target.address() as AddressInfo).port });
    const client = connect(proxy.port, '127.0.0.1');
    await new Promise((resolve) => client.once('connect', resolve));
    const echoed: Buffer[] = [];
    client.on('data', (chunk: Buffer) => echoed.push(chunk));
    const sent = Buffer.from(Array.from({ length: 2000 }, (_, i) => i % 251));
    for (let i = 0; i < sent.length; i += 100) {
      // Latency that changes while bytes are in flight.
      proxy.delay([30, 5, 0, 17][(i / 100) % 4]!);
      client.write(sent.subarray(i, i + 100));
      await new Promise((resolve) => setTimeout(resolve, 3));
    }
    while (Buffer.concat(echoed).length < sent.length) await new Promise((r) => setTimeout(r, 10));
    expect(Buffer.concat(echoed).equals(sent)).toBe(true);
    client.destroy();
  });
});
