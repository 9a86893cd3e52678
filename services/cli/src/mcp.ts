import { LedgerError, ledgerChanges, ledgerTools, ledgerTurnId } from '@tidemark/adapters';
import { createPublisher, SessionHistory, type Publisher } from '@tidemark/contract';
import { estimateTokens, type StateChange } from '@tidemark/core';
import { inFormat, isResumeFormat, resumeFormats } from '@tidemark/resume';
import { Projection } from '@tidemark/state';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  type CallToolResult,
} from '@modelcontextprotocol/sdk/types.js';
import type { Env } from './pipeline.js';
import { describeRegression } from './format.js';
import { regressionTail } from './regressions.js';
import { openStackAccess } from './stack-access.js';

// `tidemark mcp`: an MCP server (stdio) for one session, so that an agent can tell Tidemark the facts no
// transcript format has a field for. The four ledger tools (@tidemark/adapters' ledger: record a
// constraint, supersede it, reject an approach, record a failure) each append one turn to the session's
// L0 carrying the state change; `resume` answers the session's resume in any output format, and `status`
// where the session stands. The server is the session's writer: a runtime that also publishes the
// session's turns maps the same tool calls in its own transcript instead (`ledgerChanges`).
//
// After a resume, a step the agent starts again that the session had ruled out before the summary's
// boundary (the materializer's RegressionDetected) is told once, as a warning before the answer of the
// agent's next tool call (any tool): the agent learns it while it can still stop.
//
// A ledger call is idempotent: the same fact recorded again (by a retry, or after a restart) is found in
// the projection, or among the calls this server already sent, and is not appended twice.

export interface McpOptions {
  readonly env: Env;
  readonly tenantId: string;
  readonly sessionId: string;
}

export interface McpServerHandle {
  /** Resolves when the client closed the connection. */
  readonly closed: Promise<void>;
  close(): Promise<void>;
}

const serverInfo = { name: 'tidemark', version: '0.1.0' } as const;

const resumeTool = {
  name: 'resume',
  description:
    "This session's resume: the context to carry on from (the trusted summary and the raw turns after it, or the raw log), in the format a model API takes.",
  inputSchema: {
    type: 'object' as const,
    properties: {
      format: {
        type: 'string',
        enum: [...resumeFormats],
        description: 'tidemark ({role, content} messages, the default), or a provider request body format.',
      },
    },
    additionalProperties: false,
  },
};

const statusTool = {
  name: 'status',
  description:
    'Where this session stands: the turns applied, its resume plan (digest or raw), the next compaction due, and whether it is stale.',
  inputSchema: { type: 'object' as const, properties: {}, additionalProperties: false },
};

const expandTool = {
  name: 'expand',
  description:
    "Open one node of this session's summary (a resume names the one it starts from as nodeId): the node's narrative and claims, each with the turn it came from; with turns: true, the raw turns the node covers instead, a page at a time (fromSeq, toSeq, limit).",
  inputSchema: {
    type: 'object' as const,
    properties: {
      nodeId: { type: 'string', minLength: 1, description: 'The node (compaction) id.' },
      turns: { type: 'boolean', description: 'The raw turns the node covers instead of the node itself.' },
      fromSeq: {
        type: 'integer',
        minimum: 1,
        description: "The page's first turn (default: the node's first).",
      },
      toSeq: {
        type: 'integer',
        minimum: 1,
        description: "The range's last turn (default: the node's last).",
      },
      limit: { type: 'integer', minimum: 1, maximum: 200, description: 'Turns per page (default 200).' },
      format: {
        type: 'string',
        enum: [...resumeFormats],
        description: 'tidemark ({role, content} messages, the default), or a provider request body format.',
      },
    },
    required: ['nodeId'],
    additionalProperties: false,
  },
};

/** A page's bound of the expand tool: absent, or a positive integer (else the call is refused). */
const seqBound = (value: unknown): number | undefined | null =>
  value === undefined
    ? undefined
    : Number.isSafeInteger(value) && (value as number) > 0
      ? (value as number)
      : null;

/** Serves the session's ledger and resume over `transport` (stdio by default) until the client leaves. */
export async function serveMcp(
  options: McpOptions,
  transport: Transport = new StdioServerTransport(),
): Promise<McpServerHandle> {
  const { tenantId, sessionId } = options;
  // stdout is the protocol's: nothing else may be written there.
  const access = await openStackAccess(options.env, 'tidemark-mcp');
  const { config, redis, client } = access;
  const projection = new Projection(redis, { prefix: config.REDIS_PREFIX });
  const publisher: Publisher = await createPublisher({
    brokers: config.KAFKA_BROKERS,
    registryUrl: config.SCHEMA_REGISTRY_URL,
    clientId: 'tidemark-mcp',
    topicPrefix: config.TOPIC_PREFIX,
    assignSeq: true,
  });
  const { appliedSeq } = await projection.watermark(tenantId, sessionId);
  publisher.resumeSession(tenantId, sessionId, appliedSeq);
  const history = new SessionHistory(access.bus);
  const newRegressions = regressionTail(history, { tenantId, sessionId });
  /** The call's answer, after a warning for each regression not told yet (never failing the call). */
  const withWarnings = async (result: CallToolResult): Promise<CallToolResult> => {
    const found = await newRegressions().catch(() => []);
    if (found.length === 0) return result;
    const warnings = found.map((r) => ({
      type: 'text' as const,
      text: `Warning from Tidemark: ${describeRegression(r)}. You are repeating a step this session had already ruled out; check why before going on.`,
    }));
    return { ...result, content: [...warnings, ...result.content] };
  };
  /** Turn ids this server appended (a repeat before the projection applied the first is caught here). */
  const sent = new Set<string>();

  /**
   * How the projection holds these changes already: every one as given (`recorded`), an item id taken by
   * another fact (a conflict, told to the model: recording it again would be silently skipped), or not.
   */
  const standing = async (
    changes: readonly StateChange[],
  ): Promise<'recorded' | 'new' | { conflict: string }> => {
    const { appliedSeq: toSeq } = await projection.watermark(tenantId, sessionId);
    if (toSeq === 0) return 'new';
    const itemIds = changes.flatMap((c) => (c.type === 'item_opened' ? [c.itemId] : []));
    const itemKeys = changes.flatMap((c) => (c.type === 'item_disposed' ? [c.itemKey] : []));
    const state = await projection.stateAt({
      tenantId,
      sessionId,
      fromSeq: 1,
      toSeq,
      itemIds,
      itemKeys,
      paths: [],
    });
    for (const change of changes) {
      if (change.type !== 'item_opened') continue;
      const held = state.lookup.items.get(change.itemId);
      if (held !== undefined && (held.name !== change.name || held.detail !== change.detail)) {
        return {
          conflict: `${change.itemId} is already recorded as "${held.name}" (at #${held.openedSeq}); record the new one under another id and supersede this one`,
        };
      }
    }
    const all = changes.every((change) => {
      if (change.type === 'item_opened') return state.lookup.items.has(change.itemId);
      if (change.type !== 'item_disposed') return false;
      const disposed = state.lookup.dispositions.get(change.itemKey);
      return disposed?.disposition === change.disposition && disposed.reason === change.reason;
    });
    return all ? 'recorded' : 'new';
  };

  const record = async (name: string, args: unknown): Promise<CallToolResult> => {
    const changes = ledgerChanges(name, args);
    const turnId = ledgerTurnId(name, args);
    if (sent.has(turnId)) return reply(`already recorded: ${describe(changes)}`);
    const before = await standing(changes);
    if (before === 'recorded') return reply(`already recorded: ${describe(changes)}`);
    if (before !== 'new') return failure(before.conflict);
    const content = `ledger ${name}: ${describe(changes)}`;
    const turn = await publisher.publishTurn({
      tenantId,
      sessionId,
      turnId,
      timestamp: Date.now(),
      role: 'tool',
      content,
      tokenCount: estimateTokens(content),
      changes,
      original: null,
    });
    sent.add(turnId);
    return reply(`recorded at seq ${turn.seq}: ${describe(changes)}`);
  };

  const server = new Server(serverInfo, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [
      ...ledgerTools.map(({ name, description, parameters }) => ({
        name,
        description,
        inputSchema: parameters,
      })),
      resumeTool,
      statusTool,
      expandTool,
    ],
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request) =>
    withWarnings(await callTool(request.params.name, request.params.arguments ?? {})),
  );
  const callTool = async (name: string, args: Record<string, unknown>): Promise<CallToolResult> => {
    try {
      if (name === resumeTool.name) {
        const format = args['format'] ?? 'tidemark';
        if (!isResumeFormat(format)) return failure(`format must be one of ${resumeFormats.join(', ')}`);
        const outcome = await client.resume(tenantId, sessionId);
        if (!outcome.ok) return failure(`${outcome.code}: ${outcome.message}`);
        return reply(JSON.stringify(inFormat(outcome.result, format), null, 2));
      }
      if (name === statusTool.name) {
        const outcome = await client.status(tenantId, sessionId);
        return outcome.ok
          ? reply(JSON.stringify(outcome.status, null, 2))
          : failure(`${outcome.code}: ${outcome.message}`);
      }
      if (name === expandTool.name) {
        const nodeId = args['nodeId'];
        const format = args['format'] ?? 'tidemark';
        if (typeof nodeId !== 'string' || nodeId.length === 0) return failure('nodeId is required');
        if (!isResumeFormat(format)) return failure(`format must be one of ${resumeFormats.join(', ')}`);
        const ref = { tenantId, sessionId };
        if (args['turns'] !== true) {
          const outcome = await client.expand.node(ref, nodeId);
          return outcome.ok
            ? reply(JSON.stringify({ node: outcome.body }, null, 2))
            : failure(`${outcome.code}: ${outcome.message}`);
        }
        const [fromSeq, toSeq, limit] = [args['fromSeq'], args['toSeq'], args['limit']].map(seqBound);
        if (fromSeq === null || toSeq === null || limit === null)
          return failure('fromSeq, toSeq and limit must be positive integers');
        const range = { ...(fromSeq && { fromSeq }), ...(toSeq && { toSeq }), ...(limit && { limit }) };
        const outcome = await client.expand.turns(ref, nodeId, range, format);
        return outcome.ok
          ? reply(JSON.stringify(outcome.body, null, 2))
          : failure(`${outcome.code}: ${outcome.message}`);
      }
      return await record(name, args);
    } catch (error) {
      // A call that does not fit its tool is the model's to fix: told as a tool error, not a crash.
      if (error instanceof LedgerError) return failure(error.message);
      throw error;
    }
  };

  let resolveClosed!: () => void;
  const closed = new Promise<void>((resolve) => (resolveClosed = resolve));
  let closing: Promise<void> | null = null;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      await server.close().catch(() => undefined);
      await publisher.close();
      await history.close();
      await access.close();
      resolveClosed();
    })();
    return closing;
  };
  server.onclose = () => void close();
  await server.connect(transport);
  return { closed, close };
}

function reply(text: string): CallToolResult {
  return { content: [{ type: 'text', text }] };
}

function failure(text: string): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}

/** A ledger change in words: what the model reads back. */
function describe(changes: readonly StateChange[]): string {
  return changes
    .map((change) => {
      switch (change.type) {
        case 'item_opened':
          return `${change.itemId} in force (${change.name})`;
        case 'item_disposed':
          return `${change.itemKey} ${change.disposition}: ${change.reason}`;
        case 'item_closed':
        case 'artifact_recorded':
          return change.type;
      }
    })
    .join('; ');
}
