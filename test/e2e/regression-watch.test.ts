import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { TidemarkClient } from '@tidemark/client';
import { Bus, SessionHistory, topicNames } from '@tidemark/contract';
import type { RegressionDetected, TurnEvent } from '@tidemark/core';
import { hashToken } from '@tidemark/resume';
import { loadScenario } from '@tidemark/scenarios';
import { createLogger } from '@tidemark/service';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectClient, connectMcp, e2ePipeline, runTidemark } from './pipeline.js';

// The regression watch on the whole pipeline: the migration session (its dry run against staging failed
// at turn 11) is compacted and resumed from a digest; the resumed agent then runs the same dry run again
// (a RegressionDetected naming turns 93 and 11), a similar call against another target and a call that
// had gone well (neither flagged). `tidemark inspect` lists it, the MCP server warns of it once, and a
// session that never resumed is not watched at all.

const tenantId = 'watch';
const token = 'watch-resume-token';
const [migration] = loadScenario('migration');

let e2e: Awaited<ReturnType<typeof e2ePipeline>>;
let client: TidemarkClient;
let bus: Bus;
let history: SessionHistory;
beforeAll(async () => {
  e2e = await e2ePipeline([], { RESUME_TOKENS: `${tenantId}:${hashToken(token)}` });
  client = await connectClient(e2e, tenantId, token);
  bus = await Bus.connect({
    brokers: e2e.env.KAFKA_BROKERS!.split(','),
    registryUrl: e2e.env.SCHEMA_REGISTRY_URL!,
    clientId: 'e2e-regressions',
    topics: topicNames(e2e.env.TOPIC_PREFIX ?? ''),
    service: 'e2e',
    logger: createLogger('e2e', 'warn'),
  });
  history = new SessionHistory(bus);
}, 120_000);
afterAll(async () => {
  await history?.close();
  await bus?.disconnect();
  await client?.close();
  await e2e?.stop();
});

/** The migration session's 92 turns, as a session of this tenant. */
const migrationAs = (sessionId: string): TurnEvent[] =>
  migration!.turns.map((turn) => ({ ...turn, tenantId, sessionId }));

/** The turn at seq that runs a tool call (a new item). */
const callTurn = (sessionId: string, seq: number, name: string, detail: string): TurnEvent => ({
  tenantId,
  sessionId,
  seq,
  turnId: `after-resume-${seq}`,
  timestamp: 1_767_225_600_000 + seq * 1000,
  role: 'assistant',
  content: `Calling ${name} ${detail}.`,
  tokenCount: 8,
  changes: [
    {
      type: 'item_opened',
      itemId: `call:${seq}`,
      kind: 'tool_call',
      name,
      detail,
      handle: null,
      logPath: null,
    },
  ],
  original: null,
});

async function regressionsOf(sessionId: string): Promise<RegressionDetected[]> {
  const { records } = await history.read('regressions', { tenantId, sessionId });
  return records.map((r) => r.value);
}

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

const tidemark = (args: readonly string[]) => runTidemark(e2e, args);

describe('the regression watch', () => {
  it('flags the resumed agent repeating the failed dry run, naming both turns, and nothing else', async () => {
    const sessionId = 'migration-resumed';
    // A session that never resumed runs the same dry run again: nobody resumed it, nothing is watched.
    const unresumed = 'migration-not-resumed';
    await client.publish([
      ...migrationAs(unresumed),
      callTurn(unresumed, 93, 'run_migration', '--dry-run against staging'),
    ]);
    await client.publish(migrationAs(sessionId));
    await client.waitUntilSettled(sessionId, 92, 90_000);
    await client.waitUntilSettled(unresumed, 93, 90_000);

    const response = await fetch(`${e2e.pipeline.url}/v1/sessions/${tenantId}/${sessionId}/resume`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const resumed = (await response.json()) as { mode: string; nodeId: string; rawFromSeq: number };
    expect(resumed.mode).toBe('digest');
    // The failure at turn 11 is behind the digest's boundary: the agent knows it only from the summary.
    expect(resumed.rawFromSeq - 1).toBeGreaterThan(11);

    await client.publish([
      callTurn(sessionId, 93, 'run_migration', '--dry-run against staging'),
      callTurn(sessionId, 94, 'run_migration', '--dry-run against dev'),
      callTurn(sessionId, 95, 'read_file', 'README.md'),
      callTurn(sessionId, 96, 'run_migration', '  --dry-run   against staging '),
    ]);
    const found = await until(
      () => regressionsOf(sessionId),
      (r) => r.some((e) => e.seq === 96),
    );
    expect(
      [...new Map(found.map((r) => [r.regressionId, r])).values()].map((r) => ({
        seq: r.seq,
        itemId: r.itemId,
        priorSeq: r.priorSeq,
        priorItemId: r.priorItemId,
        name: r.name,
        detail: r.detail,
        ruledOut: r.ruledOut,
        nodeId: r.nodeId,
        boundarySeq: r.boundarySeq,
        resumedAtSeq: r.resumedAtSeq,
      })),
    ).toEqual(
      [93, 96].map((seq) => ({
        seq,
        itemId: `call:${seq}`,
        priorSeq: 11,
        priorItemId: 'call:dry-run',
        name: 'run_migration',
        detail: '--dry-run against staging',
        ruledOut: 'failed',
        nodeId: resumed.nodeId,
        boundarySeq: resumed.rawFromSeq - 1,
        resumedAtSeq: 92,
      })),
    );
    expect(await regressionsOf(unresumed)).toEqual([]);

    // The metric counts them.
    const metrics = await (await fetch(`${e2e.pipeline.url}/metrics`)).text();
    expect(metrics).toMatch(/tidemark_materializer_regressions_total\{ruled_out="failed"\} 2/);

    // `tidemark inspect` lists them, and inspecting is not a resume: it leaves no watch of its own.
    const inspected = await tidemark(['inspect', `${tenantId}/${sessionId}`]);
    expect(inspected.code, inspected.stderr).toBe(0);
    expect(inspected.stdout).toContain('regressions (2):');
    expect(inspected.stdout).toContain(
      '⚠ regression  turn 93 starts run_migration (--dry-run against staging) again: failed at turn 11 (call:dry-run)',
    );

    // The MCP server warns of each once, on the agent's next tool call.
    const mcp: Client = await connectMcp(e2e, tenantId, sessionId);
    try {
      const text = async () =>
        ((await mcp.callTool({ name: 'status', arguments: {} })).content as { text: string }[])
          .map((c) => c.text)
          .join('\n');
      const first = await text();
      expect(first.match(/Warning from Tidemark: ⚠ regression {2}turn (\d+)/g)).toEqual([
        'Warning from Tidemark: ⚠ regression  turn 93',
        'Warning from Tidemark: ⚠ regression  turn 96',
      ]);
      expect(await text()).not.toContain('Warning from Tidemark');
    } finally {
      await mcp.close();
    }
  });
});
