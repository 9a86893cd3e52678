import { canonicalJson, sha256Hex, type StateChange, TidemarkError } from '@tidemark/core';

// The ledger: the negative facts no transcript format has a field for — "this constraint holds", "this
// one replaces that one", "this approach is rejected", "this failed, do not retry" — as tools an agent
// calls. The same four tools serve the MCP server (`tidemark mcp`) and any runtime without MCP, as plain
// function tools for OpenAI and Anthropic; a call of one maps to the L0 state change it records.

/** A JSON Schema (draft 2020-12 subset) of a tool's arguments. */
export interface JsonSchema {
  readonly type: 'object';
  readonly properties: Readonly<Record<string, { readonly type: 'string'; readonly description: string }>>;
  readonly required: readonly string[];
  readonly additionalProperties: false;
}

export interface LedgerTool {
  readonly name: LedgerToolName;
  readonly description: string;
  readonly parameters: JsonSchema;
}

export const ledgerToolNames = [
  'record_constraint',
  'supersede_constraint',
  'reject_approach',
  'record_failure',
] as const;
export type LedgerToolName = (typeof ledgerToolNames)[number];

const text = (description: string) => ({ type: 'string' as const, description });
const schema = (properties: JsonSchema['properties'], required: readonly string[]): JsonSchema => ({
  type: 'object',
  properties,
  required,
  additionalProperties: false,
});

export const ledgerTools: readonly LedgerTool[] = [
  {
    name: 'record_constraint',
    description:
      'Record a constraint the work must keep to from now on (a user requirement, a rule of the codebase). It stays in force, and is carried through every compaction, until superseded.',
    parameters: schema(
      {
        id: text('A short stable id for the constraint, e.g. "reversible-migration".'),
        constraint: text('The constraint in a few words, e.g. "the migration must be reversible".'),
        detail: text('Optional: where it comes from or what exactly it rules out.'),
      },
      ['id', 'constraint'],
    ),
  },
  {
    name: 'supersede_constraint',
    description:
      'Record that a constraint no longer holds because another replaces it (record the new one with record_constraint).',
    parameters: schema(
      {
        id: text('The id of the constraint that no longer holds.'),
        by: text('The id of the constraint that replaces it.'),
        reason: text('Why it was replaced.'),
      },
      ['id', 'by', 'reason'],
    ),
  },
  {
    name: 'reject_approach',
    description:
      'Record that an approach was rejected (by the user, or after review), with the reason, so that it is not proposed again after the context is compacted.',
    parameters: schema(
      {
        approach: text('A short stable name of the approach, e.g. "add-column-then-backfill".'),
        reason: text('Why it was rejected.'),
      },
      ['approach', 'reason'],
    ),
  },
  {
    name: 'record_failure',
    description:
      'Record that an approach was tried and failed, with what happened, so that it is not retried after the context is compacted.',
    parameters: schema(
      {
        approach: text('A short stable name of the approach, e.g. "online-index-build".'),
        reason: text('What failed: the error, the symptom.'),
      },
      ['approach', 'reason'],
    ),
  },
];

/** The ledger tools as OpenAI function tools (Chat Completions `tools`). */
export function openAIChatLedgerTools(): {
  readonly type: 'function';
  readonly function: { readonly name: string; readonly description: string; readonly parameters: JsonSchema };
}[] {
  return ledgerTools.map(({ name, description, parameters }) => ({
    type: 'function',
    function: { name, description, parameters },
  }));
}

/** The ledger tools as OpenAI Responses function tools. */
export function openAIResponsesLedgerTools(): {
  readonly type: 'function';
  readonly name: string;
  readonly description: string;
  readonly parameters: JsonSchema;
  readonly strict: false;
}[] {
  return ledgerTools.map(({ name, description, parameters }) => ({
    type: 'function',
    name,
    description,
    parameters,
    strict: false,
  }));
}

/** The ledger tools as Anthropic Messages tools. */
export function anthropicLedgerTools(): {
  readonly name: string;
  readonly description: string;
  readonly input_schema: JsonSchema;
}[] {
  return ledgerTools.map(({ name, description, parameters }) => ({
    name,
    description,
    input_schema: parameters,
  }));
}

/** A ledger call whose name or arguments do not fit its schema. */
export class LedgerError extends TidemarkError<'invalid_ledger_call'> {
  override readonly name: string = 'LedgerError';
  constructor(message: string) {
    super('invalid_ledger_call', message);
  }
}

/**
 * The L0 state change a ledger call records. Keys are stable (`constraint:<id>`, `approach:<name>`), so
 * recording the same fact twice names the same item, and a rejection is found again by its key.
 */
export function ledgerChanges(name: string, args: unknown): StateChange[] {
  const tool = ledgerTools.find((t) => t.name === name);
  if (tool === undefined)
    throw new LedgerError(`${name} is not a ledger tool (${ledgerToolNames.join(', ')})`);
  const values = argumentsOf(tool, args);
  switch (tool.name) {
    case 'record_constraint':
      return [
        {
          type: 'item_opened',
          itemId: `constraint:${values.id}`,
          kind: 'constraint',
          name: values.constraint!,
          detail: values.detail ?? null,
          handle: null,
          logPath: null,
        },
      ];
    case 'supersede_constraint':
      return [
        {
          type: 'item_disposed',
          itemKey: `constraint:${values.id}`,
          disposition: 'superseded',
          reason: values.reason!,
          supersededBy: `constraint:${values.by}`,
        },
      ];
    case 'reject_approach':
    case 'record_failure':
      return [
        {
          type: 'item_disposed',
          itemKey: `approach:${values.approach}`,
          disposition: tool.name === 'reject_approach' ? 'rejected' : 'failed',
          reason: values.reason!,
          supersededBy: null,
        },
      ];
    default: {
      const never: never = tool.name;
      throw new LedgerError(`unknown ledger tool ${String(never)}`);
    }
  }
}

/** A turn id for a ledger call: the same call, the same id (a republished call is a redelivery). */
export function ledgerTurnId(name: string, args: unknown): string {
  return `ledger:${name}:${sha256Hex(canonicalJson({ name, args })).slice(0, 24)}`;
}

function argumentsOf(tool: LedgerTool, args: unknown): Record<string, string | undefined> {
  const parsed: unknown = typeof args === 'string' ? parseJson(tool, args) : args;
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new LedgerError(`${tool.name}: the arguments must be an object`);
  }
  const values: Record<string, string | undefined> = {};
  for (const [key, value] of Object.entries(parsed)) {
    if (!(key in tool.parameters.properties)) throw new LedgerError(`${tool.name}: unknown argument ${key}`);
    if (typeof value !== 'string') throw new LedgerError(`${tool.name}: ${key} must be a string`);
    values[key] = value.trim();
  }
  for (const key of tool.parameters.required) {
    if (values[key] === undefined || values[key] === '') {
      throw new LedgerError(`${tool.name}: ${key} is required and must not be empty`);
    }
  }
  return values;
}

function parseJson(tool: LedgerTool, args: string): unknown {
  try {
    return JSON.parse(args) as unknown;
  } catch {
    throw new LedgerError(`${tool.name}: the arguments are not JSON`);
  }
}
