// Test vectors of the wire format: a few events as JSON (the shapes the TypeScript code sees) and as the
// Avro binary body the codec writes for them (no registry framing). Any Avro implementation given
// schemas/*.avsc must read each .bin as its .json, and write the .json as exactly the .bin.
//
//   pnpm --filter @tidemark/contract vectors     rewrite schemas/vectors/ from the values below
//
// In the JSON, a bytes value is written as { "base64": "…" } (JSON has no bytes).
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  regressionIdOf,
  revocationIdOf,
  type Compaction,
  type DeadLetter,
  type MarkerEmitted,
  type MarkerInvalid,
  type MarkerRevocation,
  type RegressionDetected,
  type TurnEvent,
} from '@tidemark/core';
import { encodeBody, type RecordName } from '@tidemark/contract';

export const vectorsDir = fileURLToPath(new URL('../../../schemas/vectors/', import.meta.url));

export interface Vector {
  readonly name: string;
  readonly record: RecordName;
  readonly value: unknown;
}

const hex = (c: string) => c.repeat(64);

const turn: TurnEvent = {
  tenantId: 'acme',
  sessionId: 'migration-42',
  seq: 312,
  turnId: 'turn-312',
  timestamp: 1_793_000_000_000,
  role: 'assistant',
  content: 'The dry run failed; the user rejected add-column-then-backfill. Using migrations/003_down.sql.',
  tokenCount: 24,
  changes: [
    {
      type: 'item_opened',
      itemId: 'call-7',
      kind: 'tool_call',
      name: 'run_migration',
      detail: '{"dryRun":true}',
      handle: null,
      logPath: null,
    },
    {
      type: 'item_opened',
      itemId: 'proc-3',
      kind: 'subprocess',
      name: 'psql -f migrations/003_up.sql',
      detail: null,
      handle: 'pid:4242',
      logPath: '/tmp/psql-4242.log',
    },
    { type: 'item_closed', itemId: 'call-7', outcome: 'error', detail: 'exit 1: column already exists' },
    {
      type: 'item_disposed',
      itemKey: 'approach:add-column-backfill',
      disposition: 'rejected',
      reason: 'the user rejected it after the failed dry run',
      supersededBy: null,
    },
    {
      type: 'item_disposed',
      itemKey: 'constraint-1',
      disposition: 'superseded',
      reason: 'the user now wants an online migration',
      supersededBy: 'constraint-2',
    },
    {
      type: 'artifact_recorded',
      path: 'migrations/003_down.sql',
      action: 'created',
      digest: `sha256:${hex('a')}`,
    },
    { type: 'artifact_recorded', path: 'migrations/002_tmp.sql', action: 'deleted', digest: null },
  ],
  original: null,
};

/** A turn converted from a provider transcript (@tidemark/adapters): the original message kept. */
const convertedTurn: TurnEvent = {
  tenantId: 'acme',
  sessionId: 'migration-42',
  seq: 313,
  turnId: 'openai-chat:call_7:313',
  timestamp: 1_793_000_000_500,
  role: 'assistant',
  content: 'run_migration({"dryRun":false})',
  tokenCount: 9,
  changes: [
    {
      type: 'item_opened',
      itemId: 'call_8',
      kind: 'tool_call',
      name: 'run_migration',
      detail: '{"dryRun":false}',
      handle: null,
      logPath: null,
    },
  ],
  original: {
    format: 'openai-chat',
    json: '{"content":null,"role":"assistant","tool_calls":[{"function":{"arguments":"{\\"dryRun\\":false}","name":"run_migration"},"id":"call_8","type":"function"}]}',
  },
};

const compaction: Compaction = {
  compactionId: hex('c'),
  tenantId: 'acme',
  sessionId: 'migration-42',
  tier: 2,
  generation: 1,
  policyId: hex('b'),
  policy: '{"digestFanIn":4,"l1EveryTurns":40}',
  span: { fromSeq: 1, toSeq: 320, l0Partition: 3, fromOffset: 1000, toOffset: 1319 },
  children: [hex('1'), hex('2')],
  narrative: 'Reversible schema migration; add-column-then-backfill rejected after a failed dry run.',
  claims: {
    resolved: [
      {
        itemId: 'call-7',
        outcome: 'error',
        seq: 312,
        name: 'run_migration',
        detail: '--dry-run against staging',
        outcomeDetail: 'lock timeout during backfill',
      },
    ],
    unresolved: [
      {
        itemId: 'proc-3',
        kind: 'subprocess',
        name: 'psql -f migrations/003_up.sql',
        seq: 312,
        detail: 'against staging',
        handle: 'pid:4242',
        logPath: '/tmp/003_up.log',
      },
    ],
    dispositions: [
      {
        itemKey: 'approach:add-column-backfill',
        disposition: 'rejected',
        reason: 'the user rejected it after the failed dry run',
        supersededBy: null,
        seq: 312,
      },
      {
        itemKey: 'constraint-1',
        disposition: 'superseded',
        reason: 'the user now wants an online migration',
        supersededBy: 'constraint-2',
        seq: 312,
      },
    ],
    artifacts: [
      { path: 'migrations/003_down.sql', action: 'created', digest: `sha256:${hex('a')}`, seq: 312 },
    ],
    constraints: [{ itemId: 'constraint-2', name: 'online migration', detail: null, seq: 300 }],
  },
  tokenCount: 180,
  compactorVersion: '0.1.0',
  summarizer: 'strict',
  marker: {
    markerId: hex('d'),
    nodeId: hex('c'),
    depth: 2,
    generation: 1,
    l0Partition: 3,
    l0Offset: 1319,
    toSeq: 320,
  },
  repairOf: hex('e'),
  attempt: 1,
};

const emitted: MarkerEmitted = {
  type: 'marker_emitted',
  markerId: hex('d'),
  compactionId: hex('c'),
  tenantId: 'acme',
  sessionId: 'migration-42',
  depth: 2,
  generation: 1,
  toSeq: 320,
  l0Partition: 3,
  l0Offset: 1319,
  compactorVersion: '0.1.0',
};

const invalid: MarkerInvalid = {
  ...emitted,
  type: 'marker_invalid',
  cause: 'check',
  violations: [
    { condition: 'closure', ids: ['proc-3'], detail: 'proc-3: open at 320 but not claimed UNRESOLVED' },
    {
      condition: 'retention',
      ids: ['approach:add-column-backfill'],
      detail: 'approach:add-column-backfill: rejected at 312, not claimed',
    },
  ],
  fallback: { markerId: hex('f'), compactionId: hex('9'), toSeq: 280, l0Partition: 3, l0Offset: 1279 },
};

const revocation: MarkerRevocation = {
  revocationId: revocationIdOf({ tenantId: 'acme', sessionId: 'migration-42', markerId: emitted.markerId }),
  tenantId: 'acme',
  sessionId: 'migration-42',
  markerId: emitted.markerId,
  reason: 'the digest lost the rollback plan',
  requestedBy: 'operator:0123456789abcdef',
};

const revoked: MarkerInvalid = {
  ...emitted,
  type: 'marker_invalid',
  cause: 'revoked',
  violations: [
    {
      condition: 'revoked',
      ids: [emitted.markerId],
      detail: `${emitted.markerId}: revoked by operator:0123456789abcdef: the digest lost the rollback plan`,
    },
  ],
  fallback: { markerId: null, compactionId: null, toSeq: 0, l0Partition: 3, l0Offset: null },
};

const regression: RegressionDetected = {
  regressionId: regressionIdOf({
    tenantId: 'acme',
    sessionId: 'migration-42',
    seq: 340,
    itemId: 'call:migrate-again',
    priorSeq: 17,
  }),
  tenantId: 'acme',
  sessionId: 'migration-42',
  seq: 340,
  itemId: 'call:migrate-again',
  name: 'run_migration',
  detail: '{"target":"staging","dryRun":true}',
  priorSeq: 17,
  priorItemId: 'call:dry-run',
  ruledOut: 'failed',
  nodeId: hex('c'),
  boundarySeq: 320,
  resumedAtSeq: 336,
};

const deadLetter: DeadLetter = {
  originalTopic: 'turns.l0',
  partition: 3,
  offset: 1320,
  key: new TextEncoder().encode('acme/migration-42'),
  value: new Uint8Array([1, 0, 0, 0, 7, 2, 4]),
  reason: 'wrong_magic_byte',
  message: 'magic byte 1, expected 0',
  service: 'materializer',
  observedAt: 1_793_000_000_123,
};

export const vectors: readonly Vector[] = [
  { name: 'turn-event', record: 'TurnEvent', value: turn },
  { name: 'turn-event-original', record: 'TurnEvent', value: convertedTurn },
  { name: 'compaction', record: 'Compaction', value: compaction },
  { name: 'marker-emitted', record: 'MarkerEmitted', value: emitted },
  { name: 'marker-invalid', record: 'MarkerInvalid', value: invalid },
  { name: 'marker-revoked', record: 'MarkerInvalid', value: revoked },
  { name: 'marker-revocation', record: 'MarkerRevocation', value: revocation },
  { name: 'regression-detected', record: 'RegressionDetected', value: regression },
  { name: 'dead-letter', record: 'DeadLetter', value: deadLetter },
];

/** The vector as JSON: bytes as { base64 }, two-space indented, with a final newline. */
export function toJson(value: unknown): string {
  const replacer = (_key: string, v: unknown): unknown =>
    v instanceof Uint8Array ? { base64: Buffer.from(v).toString('base64') } : v;
  return `${JSON.stringify({ ...(value as object) }, replacer, 2)}\n`;
}

/** Parses a vector's JSON back to the TypeScript value (bytes as Uint8Array). */
export function fromJson(text: string): unknown {
  return JSON.parse(text, (_key, v: unknown) =>
    typeof v === 'object' && v !== null && !Array.isArray(v) && Object.keys(v).length === 1 && 'base64' in v
      ? new Uint8Array(Buffer.from(String(v.base64), 'base64'))
      : v,
  );
}

export function readVector(name: string): { json: string; bin: Buffer } {
  return {
    json: readFileSync(`${vectorsDir}${name}.json`, 'utf8'),
    bin: readFileSync(`${vectorsDir}${name}.bin`),
  };
}

function main(): void {
  mkdirSync(vectorsDir, { recursive: true });
  for (const { name, record, value } of vectors) {
    writeFileSync(`${vectorsDir}${name}.json`, toJson(value));
    writeFileSync(`${vectorsDir}${name}.bin`, encodeBody(record, value));
    process.stdout.write(`wrote schemas/vectors/${name}.{json,bin} (${record})\n`);
  }
  // The JSON is formatted as the repository formats JSON, so `pnpm lint` stays green.
  execFileSync('pnpm', ['exec', 'prettier', '--log-level', 'warn', '--write', `${vectorsDir}*.json`], {
    stdio: 'inherit',
  });
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) main();
