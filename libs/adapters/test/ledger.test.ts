import type { Tool as AnthropicTool } from '@anthropic-ai/sdk/resources/messages';
import { buildResumeContext, definePolicy, resumePlan, runReference, type TurnEvent } from '@tidemark/core';
import type { ChatCompletionTool } from 'openai/resources/chat/completions';
import type { FunctionTool } from 'openai/resources/responses/responses';
import { describe, expect, it } from 'vitest';
import {
  anthropicLedgerTools,
  ledgerChanges,
  LedgerError,
  ledgerTurnId,
  openAIChatLedgerTools,
  openAIResponsesLedgerTools,
} from '../src/ledger.js';

// The ledger tools: what each call records on L0, what it refuses, and that what it records survives a
// compaction into the resume context (in force, or rejected, as the log says).

describe('the ledger tools', () => {
  it('map a call to the state change it records, under stable keys', () => {
    expect(
      ledgerChanges('record_constraint', { id: 'reversible', constraint: 'the migration is reversible' }),
    ).toEqual([
      {
        type: 'item_opened',
        itemId: 'constraint:reversible',
        kind: 'constraint',
        name: 'the migration is reversible',
        detail: null,
        handle: null,
        logPath: null,
      },
    ]);
    expect(
      ledgerChanges('supersede_constraint', '{"id":"postgres","by":"sqlite","reason":"runs on the edge"}'),
    ).toEqual([
      {
        type: 'item_disposed',
        itemKey: 'constraint:postgres',
        disposition: 'superseded',
        reason: 'runs on the edge',
        supersededBy: 'constraint:sqlite',
      },
    ]);
    expect(
      ledgerChanges('reject_approach', { approach: 'backfill', reason: 'locks the table' }),
    ).toMatchObject([{ itemKey: 'approach:backfill', disposition: 'rejected', reason: 'locks the table' }]);
    expect(ledgerChanges('record_failure', { approach: 'online-index', reason: 'timeout' })).toMatchObject([
      { itemKey: 'approach:online-index', disposition: 'failed', reason: 'timeout' },
    ]);
    // The same call, the same turn id: a republished call is a redelivery.
    expect(ledgerTurnId('reject_approach', { approach: 'a', reason: 'r' })).toBe(
      ledgerTurnId('reject_approach', { reason: 'r', approach: 'a' }),
    );
  });

  it('refuse what does not fit the schema, naming the tool and the argument', () => {
    expect(() => ledgerChanges('forget_everything', {})).toThrow(LedgerError);
    expect(() => ledgerChanges('reject_approach', { approach: 'x' })).toThrow(
      /reject_approach: reason is required/,
    );
    expect(() => ledgerChanges('reject_approach', { approach: 'x', reason: ' ' })).toThrow(
      /reason is required/,
    );
    expect(() => ledgerChanges('record_failure', { approach: 'x', reason: 'r', extra: 'y' })).toThrow(
      /unknown argument extra/,
    );
    expect(() => ledgerChanges('record_failure', '{not json')).toThrow(/not JSON/);
    expect(() => ledgerChanges('record_failure', { approach: 1, reason: 'r' })).toThrow(
      /approach must be a string/,
    );
  });

  it('are valid tools for each provider (typed against the official SDKs)', () => {
    const chat: ChatCompletionTool[] = openAIChatLedgerTools().map((t) => ({
      ...t,
      function: { ...t.function, parameters: { ...t.function.parameters } },
    }));
    const responses: FunctionTool[] = openAIResponsesLedgerTools().map((t) => ({
      ...t,
      parameters: { ...t.parameters },
    }));
    const anthropic: AnthropicTool[] = anthropicLedgerTools().map((t) => ({
      ...t,
      input_schema: { ...t.input_schema, required: [...t.input_schema.required] },
    }));
    expect([chat.length, responses.length, anthropic.length]).toEqual([4, 4, 4]);
  });

  it('record facts that a compaction carries into the resume: the constraint in force, the rejection with its reason', () => {
    const turn = (seq: number, content: string, changes: TurnEvent['changes'] = []): TurnEvent => ({
      tenantId: 't',
      sessionId: 'ledger',
      seq,
      turnId: `turn-${seq}`,
      timestamp: seq,
      role: seq % 2 === 1 ? 'user' : 'assistant',
      content,
      tokenCount: 4,
      changes,
      original: null,
    });
    const turns = [
      turn(
        1,
        'Migrate the users table.',
        ledgerChanges('record_constraint', { id: 'rev', constraint: 'reversible' }),
      ),
      turn(
        2,
        'Trying the backfill.',
        ledgerChanges('reject_approach', { approach: 'backfill', reason: 'locks' }),
      ),
      ...Array.from({ length: 10 }, (_, i) => turn(i + 3, `step ${i + 3}`)),
    ];
    const run = runReference(turns, { policy: definePolicy({ l1EveryTurns: 6 }) });
    const plan = resumePlan(run.state, { tenantId: 't', sessionId: 'ledger', l0Partition: 0 });
    expect(plan.mode).toBe('digest');
    const node = run.compactions.find(
      (c) => plan.mode === 'digest' && c.compactionId === plan.marker.compactionId,
    )!;
    const context = buildResumeContext({ plan, node, turns: turns.filter((t) => t.seq >= plan.rawFromSeq) });
    const system = context.messages[0]!.content;
    expect(system).toContain('- reversible (since #1) [constraint:rev]');
    expect(system).toContain('approach:backfill: rejected at #2: locks');
  });
});
