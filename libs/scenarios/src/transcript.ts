import {
  estimateTokens,
  type Policy,
  type StateChange,
  TidemarkError,
  type TurnEvent,
  type TurnRole,
} from '@tidemark/core';
import { z } from 'zod';

// A fixture transcript is an agent session written the way a person reads one: the turns that matter,
// in order, with their state changes in the wire's own shape, and "work" stretches of routine turns in
// between (reading files, running checks), so that sessions reach the lengths at which compaction fires.
// Seqs, turn ids, timestamps and token counts are derived, so a transcript cannot contradict the contract.

const change = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('item_opened'),
    itemId: z.string().min(1),
    kind: z.enum(['tool_call', 'approval_request', 'file_handle', 'subprocess', 'constraint']),
    name: z.string().min(1),
    detail: z.string().nullable().default(null),
    handle: z.string().nullable().default(null),
    logPath: z.string().nullable().default(null),
  }),
  z.object({
    type: z.literal('item_closed'),
    itemId: z.string().min(1),
    outcome: z.enum(['ok', 'error', 'cancelled']),
    detail: z.string().nullable().default(null),
  }),
  z.object({
    type: z.literal('item_disposed'),
    itemKey: z.string().min(1),
    disposition: z.enum(['rejected', 'failed', 'superseded']),
    reason: z.string(),
    supersededBy: z.string().nullable().default(null),
  }),
  z.object({
    type: z.literal('artifact_recorded'),
    path: z.string().min(1),
    action: z.enum(['created', 'modified', 'deleted']),
    digest: z.string().nullable().default(null),
  }),
]);

const entry = z.union([
  z.object({
    role: z.enum(['user', 'assistant', 'tool', 'system']),
    content: z.string().min(1),
    changes: z.array(change).default([]),
  }),
  z.object({
    /** This many routine turns of the named topic. */
    work: z.number().int().positive(),
    topic: z.string().min(1),
  }),
]);

const policyOverrides = z
  .object({
    l1EveryTurns: z.number().int().positive(),
    l1TokenBudget: z.number().int().positive().nullable(),
    digestFanIn: z.number().int().min(2),
    digestTokenBudget: z.number().int().positive().nullable(),
    maxDepth: z.number().int().min(1),
    narrativeTokenBudget: z.number().int().positive(),
    summarizer: z.string().min(1),
  })
  .partial();

export const transcriptSchema = z.object({
  name: z.string().regex(/^[a-z0-9-]+$/),
  title: z.string().min(1),
  description: z.string().min(1),
  tenantId: z.string().min(1),
  /**
   * The transcript is played as one session per entry, each compacted under its own policy (overrides
   * of the default): the same agent run under a strict and a lossy summarizer, say.
   */
  sessions: z.array(z.object({ sessionId: z.string().min(1), policy: policyOverrides.default({}) })).min(1),
  /** A replay the demo runs after the live pipeline, under these overrides, as the next generation. */
  replay: policyOverrides.nullable().default(null),
  startTimestamp: z
    .number()
    .int()
    .default(Date.UTC(2026, 10, 2, 9, 0, 0)),
  turns: z.array(entry).min(1),
});

export type Transcript = z.infer<typeof transcriptSchema>;
export type PolicyOverrides = Partial<Policy>;

/** One session of a transcript, expanded into the L0 turns an agent runtime would publish. */
export interface ScenarioSession {
  readonly transcript: Transcript;
  readonly tenantId: string;
  readonly sessionId: string;
  readonly policy: PolicyOverrides;
  readonly turns: readonly TurnEvent[];
}

/** A scenario transcript file that does not parse. */
export class TranscriptError extends TidemarkError<'invalid_scenario'> {
  override readonly name: string = 'TranscriptError';
  constructor(message: string) {
    super('invalid_scenario', message);
  }
}

/** Parses and expands a transcript; a malformed one is a TranscriptError naming the fault. */
export function expandTranscript(json: unknown, source = 'transcript'): ScenarioSession[] {
  const parsed = transcriptSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new TranscriptError(`${source}: ${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}`);
  }
  const transcript = parsed.data;
  return transcript.sessions.map(({ sessionId, policy }) => ({
    transcript,
    tenantId: transcript.tenantId,
    sessionId,
    policy,
    turns: expandTurns(transcript, sessionId),
  }));
}

function expandTurns(transcript: Transcript, sessionId: string): TurnEvent[] {
  const turns: TurnEvent[] = [];
  const add = (role: TurnRole, content: string, changes: readonly StateChange[]): void => {
    const seq = turns.length + 1;
    turns.push({
      tenantId: transcript.tenantId,
      sessionId,
      seq,
      turnId: `${sessionId}-${String(seq).padStart(4, '0')}`,
      timestamp: transcript.startTimestamp + seq * 7_000,
      role,
      content,
      tokenCount: estimateTokens(content),
      changes,
      original: null,
    });
  };
  for (const item of transcript.turns) {
    if ('work' in item) {
      for (let index = 0; index < item.work; index++) {
        const step = routineStep(item.topic, turns.length + 1, index, item.work);
        add(step.role, step.content, step.changes);
      }
    } else {
      add(item.role, item.content, item.changes);
    }
  }
  return turns;
}

// Routine work alternates an assistant step that calls a tool with the tool's answer, which closes the
// call. Real agents do this most of the time; it gives the summaries something true to say.
const routine: readonly { readonly tool: string; readonly ask: string; readonly answer: string }[] = [
  {
    tool: 'read_file',
    ask: 'Reading {file} to see how {topic} is handled.',
    answer: '{file}: 214 lines; the code for {topic} is in the second half.',
  },
  {
    tool: 'grep',
    ask: 'Searching the tree for other callers of the code for {topic}.',
    answer: '7 matches in 4 files; none outside {file}.',
  },
  {
    tool: 'run_tests',
    ask: 'Running the unit tests around {topic}.',
    answer: 'Tests: 48 passed, 0 failed (3.2 s).',
  },
  {
    tool: 'edit_file',
    ask: 'Tidying {file}: naming and a comment on the branch for {topic}.',
    answer: 'Edited {file} (+6 −3).',
  },
  { tool: 'lint', ask: 'Linting the files touched so far.', answer: 'No problems found.' },
];
const files = [
  'src/db/schema.ts',
  'src/db/migrate.ts',
  'src/api/users.ts',
  'config/database.yml',
  'README.md',
];

function routineStep(
  topic: string,
  seq: number,
  index: number,
  length: number,
): { role: TurnRole; content: string; changes: readonly StateChange[] } {
  // Pairs within the stretch: a call at an even index, its answer right after. An odd stretch ends on
  // an assistant note with no call, so a stretch never leaves a call of its own open.
  const openSeq = index % 2 === 0 ? seq : seq - 1;
  const round = Math.floor(openSeq / 2);
  const step = routine[round % routine.length]!;
  const file = files[Math.floor(round / routine.length) % files.length]!;
  const fill = (text: string): string => text.replaceAll('{topic}', topic).replaceAll('{file}', file);
  const itemId = `call:${step.tool}-${openSeq}`;
  if (index === length - 1 && index % 2 === 0) {
    return { role: 'assistant', content: fill(`Noting progress on ${topic}; continuing.`), changes: [] };
  }
  if (index % 2 === 0) {
    return {
      role: 'assistant',
      content: fill(step.ask),
      changes: [
        {
          type: 'item_opened',
          itemId,
          kind: 'tool_call',
          name: step.tool,
          detail: file,
          handle: null,
          logPath: null,
        },
      ],
    };
  }
  return {
    role: 'tool',
    content: fill(step.answer),
    changes: [{ type: 'item_closed', itemId, outcome: 'ok', detail: null }],
  };
}
