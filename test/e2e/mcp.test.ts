import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ledgerToolNames } from '@tidemark/adapters';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectMcp, e2ePipeline } from './pipeline.js';
import { sleep } from './reference-check.js';

// `tidemark mcp` as an agent's MCP client sees it: the official SDK's client starts the server over
// stdio against the real pipeline, records the ledger's facts through its tools, and reads the resume
// back once the session is compacted and decided: the constraint in force, the rejected and failed
// approaches as such. The same fact recorded twice is one turn.

const tenantId = 'mcp';
const sessionId = 'checkout-refactor';

let e2e: Awaited<ReturnType<typeof e2ePipeline>>;
let client: Client;
const connect = (): Promise<Client> => connectMcp(e2e, tenantId, sessionId);

beforeAll(async () => {
  // Short spans: a few ledger turns make L1s and a digest.
  e2e = await e2ePipeline([], { L1_EVERY_TURNS: '2', DIGEST_FAN_IN: '2' });
  client = await connect();
});
afterAll(async () => {
  await client?.close();
  await e2e?.stop();
});

const textOf = (result: Awaited<ReturnType<Client['callTool']>>): string =>
  (result.content as { type: string; text: string }[]).map((c) => c.text).join('\n');

/** A ledger call that was recorded: no tool error, and the answer names where. */
function expectRecorded(answer: { text: string; isError: boolean }, pattern: RegExp): void {
  expect(answer.isError).toBe(false);
  expect(answer.text).toMatch(pattern);
}

async function call(name: string, args: Record<string, unknown>) {
  const result = await client.callTool({ name, arguments: args });
  return { text: textOf(result), isError: result.isError === true };
}

describe('tidemark mcp', () => {
  it('lists the four ledger tools with their JSON Schemas, and resume, status and expand', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(
      [...ledgerToolNames, 'resume', 'status', 'expand'].sort(),
    );
    const record = tools.find((t) => t.name === 'record_constraint')!;
    expect(record.inputSchema).toMatchObject({ type: 'object', required: ['id', 'constraint'] });
  });

  it('records facts as turns, once each; resume then shows the constraint in force and the approaches disposed', async () => {
    const constraint = { id: 'reversible', constraint: 'the migration must be reversible' };
    expectRecorded(await call('record_constraint', constraint), /^recorded at seq 1:/);
    expect((await call('record_constraint', constraint)).text).toMatch(/^already recorded:/);
    expectRecorded(
      await call('reject_approach', { approach: 'drop-column', reason: 'loses the column data on rollback' }),
      /^recorded at seq 2:/,
    );
    expectRecorded(
      await call('record_failure', { approach: 'online-index-build', reason: 'lock timeout on orders' }),
      /^recorded at seq 3:/,
    );
    expectRecorded(
      await call('record_constraint', { id: 'no-downtime', constraint: 'no downtime during the deploy' }),
      /^recorded at seq 4:/,
    );

    // A call that does not fit its tool is the model's to fix: a tool error that names the fault.
    const bad = await call('reject_approach', { approach: 'x' });
    expect(bad.isError).toBe(true);
    expect(bad.text).toMatch(/reason/);

    // Compacted and decided: the resume starts from a trusted node that states the ledger.
    const deadline = Date.now() + 60_000;
    let resume: { mode: string; nodeId: string | null; rawToSeq: number; messages: { content: string }[] };
    for (;;) {
      const answer = await call('resume', {});
      if (!answer.isError) {
        resume = JSON.parse(answer.text) as typeof resume;
        if (resume.nodeId !== null && resume.rawToSeq === 4) break;
      }
      if (Date.now() > deadline) throw new Error(`the session did not settle: ${answer.text}`);
      await sleep(250);
    }
    expect(resume.mode).toBe('digest');
    const context = resume.messages.map((m) => m.content).join('\n');
    // Each fact, whether the node states it or a raw turn after the node carries it.
    expect(context).toMatch(/the migration must be reversible \(since #\d+\) \[constraint:reversible\]/);
    expect(context).toMatch(/approach:drop-column:? rejected\b.*loses the column data on rollback/);
    expect(context).toMatch(/approach:online-index-build:? failed\b.*lock timeout on orders/);

    // In a provider's format too, and the status says where the session stands.
    const anthropic = JSON.parse((await call('resume', { format: 'anthropic' })).text) as {
      body: { messages: unknown[] };
    };
    expect(anthropic.body.messages.length).toBeGreaterThan(0);
    expect(JSON.parse((await call('status', {})).text)).toMatchObject({ tenantId, sessionId, appliedSeq: 4 });
    expect((await call('resume', { format: 'fax' })).isError).toBe(true);

    // Expand: the node the resume starts from, then the turns it covers.
    const node = JSON.parse((await call('expand', { nodeId: resume.nodeId })).text) as {
      node: { compactionId: string; span: { fromSeq: number; toSeq: number } };
    };
    expect(node.node.compactionId).toBe(resume.nodeId);
    const covered = JSON.parse(
      (await call('expand', { nodeId: resume.nodeId, turns: true, limit: 2 })).text,
    ) as { fromSeq: number; toSeq: number; nextFromSeq: number | null; messages: { content: string }[] };
    expect(covered).toMatchObject({ fromSeq: node.node.span.fromSeq, toSeq: node.node.span.fromSeq + 1 });
    expect(covered.messages).toHaveLength(2);
    const outside = await call('expand', { nodeId: resume.nodeId, turns: true, fromSeq: 999 });
    expect(outside.isError).toBe(true);
    expect(outside.text).toMatch(/^bad_range: the node covers turns \d+–\d+/);
  });

  it('started again, finds what it recorded in the projection and appends after the last turn', async () => {
    await client.close();
    client = await connect();
    const again = await call('record_constraint', {
      id: 'reversible',
      constraint: 'the migration must be reversible',
    });
    expect(again.text).toMatch(/^already recorded:/);
    // The same id for another constraint is not skipped in silence: the model is told to pick another.
    const taken = await call('record_constraint', { id: 'reversible', constraint: 'something else' });
    expect(taken.isError).toBe(true);
    expect(taken.text).toMatch(
      /constraint:reversible is already recorded as "the migration must be reversible"/,
    );
    const next = await call('supersede_constraint', {
      id: 'no-downtime',
      by: 'reversible',
      reason: 'a maintenance window was granted',
    });
    expectRecorded(next, /^recorded at seq 5:/);
  });
});
