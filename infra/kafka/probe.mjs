#!/usr/bin/env node
// Kafka readiness probe with no dependencies (plain `net`), used by infra/stack.ts.
//
//   node infra/kafka/probe.mjs <host> <port> [expectedNodeId] [timeoutMs]
//
// Sends ApiVersions (v0), then a Metadata request (the highest non-flexible version, 4..8, the
// broker supports) and checks that the broker lists itself (node id, host, port) and a controller.
// A KRaft broker only serves its PLAINTEXT listener once it has caught up with the metadata log and
// been unfenced, so a good answer means clients can work. Exit 0 when ready; 1 (with a one-line
// reason on stderr) otherwise.
import { Buffer } from 'node:buffer';
import net from 'node:net';
import process from 'node:process';
import { clearTimeout, setTimeout } from 'node:timers';

const [host = '127.0.0.1', portArg = '9092', nodeArg = '1', timeoutArg = '3000'] = process.argv.slice(2);
const port = Number(portArg);
const expectedNode = Number(nodeArg);
const timeoutMs = Number(timeoutArg);

const API_METADATA = 3;
const API_VERSIONS = 18;
const CLIENT_ID = 'tidemark-probe';

function fail(msg) {
  process.stderr.write(`kafka probe: ${msg}\n`);
  process.exit(1);
}

function request(sock, apiKey, apiVersion, correlationId, body) {
  const clientId = Buffer.from(CLIENT_ID);
  const header = Buffer.alloc(2 + 2 + 4 + 2);
  header.writeInt16BE(apiKey, 0);
  header.writeInt16BE(apiVersion, 2);
  header.writeInt32BE(correlationId, 4);
  header.writeInt16BE(clientId.length, 8);
  const payload = Buffer.concat([header, clientId, body]);
  const size = Buffer.alloc(4);
  size.writeInt32BE(payload.length, 0);
  sock.write(Buffer.concat([size, payload]));
}

class Reader {
  constructor(buf) {
    this.buf = buf;
    this.off = 0;
  }
  i8() {
    const v = this.buf.readInt8(this.off);
    this.off += 1;
    return v;
  }
  i16() {
    const v = this.buf.readInt16BE(this.off);
    this.off += 2;
    return v;
  }
  i32() {
    const v = this.buf.readInt32BE(this.off);
    this.off += 4;
    return v;
  }
  str() {
    const n = this.i16();
    if (n < 0) return null;
    const s = this.buf.toString('utf8', this.off, this.off + n);
    this.off += n;
    return s;
  }
}

const sock = net.connect({ host, port });
const timer = setTimeout(() => {
  sock.destroy();
  fail(`no answer from ${host}:${port} within ${timeoutMs} ms`);
}, timeoutMs);

let pending = Buffer.alloc(0);
const waiters = [];
sock.on('data', (chunk) => {
  pending = Buffer.concat([pending, chunk]);
  while (pending.length >= 4) {
    const size = pending.readInt32BE(0);
    if (pending.length < 4 + size) break;
    const frame = pending.subarray(4, 4 + size);
    pending = pending.subarray(4 + size);
    const w = waiters.shift();
    if (w) w(frame);
  }
});
sock.on('error', (err) => fail(`${host}:${port}: ${err.code || err.message}`));
sock.on('close', () => {
  if (waiters.length) fail(`${host}:${port} closed the connection`);
});

function roundTrip(apiKey, version, correlationId, body) {
  return new Promise((resolve) => {
    waiters.push(resolve);
    request(sock, apiKey, version, correlationId, body);
  });
}

(async () => {
  await new Promise((resolve) => sock.once('connect', resolve));

  // ApiVersions v0: empty body; response: correlation id, error code, [api_key, min, max]
  const av = new Reader(await roundTrip(API_VERSIONS, 0, 1, Buffer.alloc(0)));
  if (av.i32() !== 1) fail('ApiVersions: wrong correlation id');
  const avErr = av.i16();
  if (avErr !== 0) fail(`ApiVersions: error code ${avErr}`);
  let mdMin = -1;
  let mdMax = -1;
  const n = av.i32();
  for (let i = 0; i < n; i++) {
    const key = av.i16();
    const min = av.i16();
    const max = av.i16();
    if (key === API_METADATA) {
      mdMin = min;
      mdMax = max;
    }
  }
  const version = Math.min(mdMax, 8);
  if (mdMax < 0 || version < Math.max(mdMin, 4))
    fail(`no usable Metadata version (broker: ${mdMin}..${mdMax})`);

  // Metadata v4..v8: topics = [] (none), allow_auto_topic_creation = false,
  // v8+: include_cluster_authorized_operations, include_topic_authorized_operations = false
  const body = Buffer.alloc(version >= 8 ? 7 : 5);
  body.writeInt32BE(0, 0);
  body.writeInt8(0, 4);
  if (version >= 8) {
    body.writeInt8(0, 5);
    body.writeInt8(0, 6);
  }
  const md = new Reader(await roundTrip(API_METADATA, version, 2, body));
  if (md.i32() !== 2) fail('Metadata: wrong correlation id');
  md.i32(); // throttle_time_ms
  const brokers = [];
  const nb = md.i32();
  for (let i = 0; i < nb; i++) {
    brokers.push({ id: md.i32(), host: md.str(), port: md.i32(), rack: md.str() });
  }
  const clusterId = md.str();
  const controllerId = md.i32();
  clearTimeout(timer);
  sock.end();

  const self = brokers.find((b) => b.id === expectedNode);
  if (!self) fail(`broker ${expectedNode} not in metadata yet (brokers: ${JSON.stringify(brokers)})`);
  if (self.port !== port)
    fail(`broker ${expectedNode} advertises ${self.host}:${self.port}, expected port ${port}`);
  if (controllerId < 0) fail('no controller in metadata yet');
  process.stdout.write(
    `kafka ok: cluster ${clusterId}, broker ${self.id} at ${self.host}:${self.port}, metadata v${version}\n`,
  );
  process.exit(0);
})().catch((err) => fail(err.stack || String(err)));
