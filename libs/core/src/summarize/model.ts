import { canonicalJson } from '../canonical.js';
import { TidemarkCoreError } from '../errors.js';
import type {
  ArtifactClaim,
  Claims,
  ConstraintClaim,
  DispositionClaim,
  ResolvedClaim,
  Summarizer,
  Summary,
  SummaryInput,
  UnresolvedClaim,
} from '../model.js';
import { fitToBudget } from '../tokens.js';
import {
  ArtifactActionSymbols,
  DispositionSymbols,
  ItemKindSymbols,
  ItemOutcomeSymbols,
} from '../wire/index.generated.js';
import { normalizeClaims, spanOf, summaryOf } from './claims.js';
import { nodeLabel, spanLabel, turnLine } from './render.js';

// A summarizer backed by an OpenAI-compatible chat-completions endpoint. The core stays pure: it builds
// the request and parses the response, and the caller injects the transport (the service passes one
// over globalThis.fetch). Output that is not the JSON asked for is an error, never a guess; output that
// parses is a claim like any other, and the check decides whether it may be trusted.

export interface ModelSummarizerConfig {
  /** The API base, e.g. https://api.openai.com/v1; /chat/completions is appended. */
  readonly baseUrl: string;
  readonly model: string;
  /** Sent as a bearer token; null for endpoints that need none (a local server). */
  readonly apiKey: string | null;
  /** Upper bound on the completion's tokens; default: enough for the budget and the claims. */
  readonly maxTokens?: number;
}

export interface ChatCompletionRequest {
  readonly url: string;
  readonly method: 'POST';
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

export interface ChatCompletionResponse {
  readonly status: number;
  readonly body: string;
}

/** How the model summarizer reaches the endpoint; injected so that the core does no I/O. */
export type ChatTransport = (request: ChatCompletionRequest) => Promise<ChatCompletionResponse>;

/** The shape of fetch the transport needs; globalThis.fetch satisfies it. */
export type FetchLike = (
  url: string,
  init: { method: string; headers: Record<string, string>; body: string },
) => Promise<{ readonly status: number; text(): Promise<string> }>;

/** A transport over a fetch function. */
export function fetchTransport(fetchFn: FetchLike): ChatTransport {
  return async (request) => {
    const response = await fetchFn(request.url, {
      method: request.method,
      headers: { ...request.headers },
      body: request.body,
    });
    return { status: response.status, body: await response.text() };
  };
}

export function createModelSummarizer(config: ModelSummarizerConfig, transport: ChatTransport): Summarizer {
  return {
    name: `model:${config.model}`,
    summarize: async (input) => {
      spanOf(input);
      const request = chatRequestFor(config, input);
      let response: ChatCompletionResponse;
      try {
        response = await transport(request);
      } catch (cause) {
        throw new TidemarkCoreError(
          'model_transport',
          `the model endpoint ${request.url} could not be reached`,
          {
            retriable: true,
            cause,
          },
        );
      }
      return parseChatResponse(response, input.budget);
    },
  };
}

const systemPrompt = (budget: number): string =>
  [
    'You summarise a span of an AI agent session so that the agent can resume from the summary alone.',
    'Reply with exactly one JSON object and nothing else, of this shape:',
    '{"narrative": string, "claims": {',
    '  "resolved": [{"itemId": string, "outcome": "ok"|"error"|"cancelled", "seq": integer, "name": string|null, "detail": string|null, "outcomeDetail": string|null}],',
    '  "unresolved": [{"itemId": string, "kind": "tool_call"|"approval_request"|"file_handle"|"subprocess"|"constraint", "name": string, "seq": integer, "detail": string|null, "handle": string|null, "logPath": string|null}],',
    '  "dispositions": [{"itemKey": string, "disposition": "rejected"|"failed"|"superseded", "reason": string, "supersededBy": string|null, "seq": integer}],',
    '  "artifacts": [{"path": string, "action": "created"|"modified"|"deleted", "digest": string|null, "seq": integer}],',
    '  "constraints": [{"itemId": string, "name": string, "detail": string|null, "seq": integer}]}}',
    'Rules: resolved lists every item closed in the span, with the seq of the turn that closed it.',
    'unresolved lists every item still open at the end of the span, wherever it was opened, with the seq that opened it.',
    'dispositions lists every rejected, failed or superseded key in the span with its latest disposition; never fold them into prose only.',
    'artifacts lists every artifact created or modified in the span and not deleted, with its latest action.',
    'constraints lists every user constraint still in force at the end of the span.',
    "Give each item the name and detail the log opened it with, and each closed one the detail it was closed with; copy an open item's handle and logPath whenever the log has them.",
    'Copy ids, keys, names, details, paths, digests and seqs exactly as they appear. Do not invent results for open items.',
    `The narrative is at most ${budget} tokens (about ${budget * 4} characters), in these sections, one per line or list:`,
    '"Goal: " and the first user request, copied from the prior frame or the first child when they have it;',
    '"Latest instruction (#seq): " and the newest user instruction;',
    '"Done:" then one "- turns A–B: " line per stretch of turns (per child node for a digest, earlier stretches copied from the prior frame): the tools run, grouped and counted, with what they ran on (the path, the command), and the files touched and how;',
    '"Failed (do not retry as it was):" then one "- " line per call that ended in error or was cancelled: what it ran, "at #seq", and why.',
  ].join('\n');

/** The chat-completions request for a summary input: deterministic, temperature 0, JSON output. */
export function chatRequestFor(config: ModelSummarizerConfig, input: SummaryInput): ChatCompletionRequest {
  const { fromSeq, toSeq } = spanOf(input);
  const lines = [`Session ${input.state.tenantId}/${input.state.sessionId}, ${spanLabel(fromSeq, toSeq)}.`];
  const prior = input.priorFrame;
  if (prior !== null) {
    lines.push(
      `Prior frame (${nodeLabel(prior)}): ${prior.narrative}`,
      `Prior frame claims: ${canonicalJson(prior.claims)}`,
    );
  }
  switch (input.span.kind) {
    case 'turns':
      for (const turn of input.span.turns) {
        lines.push(turnLine(turn, 4000));
        if (turn.changes.length > 0) lines.push(`  changes at #${turn.seq}: ${canonicalJson(turn.changes)}`);
      }
      break;
    case 'nodes':
      for (const node of input.span.nodes) {
        lines.push(`[${nodeLabel(node)}] ${node.narrative}`, `  claims: ${canonicalJson(node.claims)}`);
      }
      break;
    default: {
      const never: never = input.span;
      return never;
    }
  }
  const body = {
    model: config.model,
    temperature: 0,
    max_tokens: config.maxTokens ?? input.budget * 2 + 2048,
    response_format: { type: 'json_object' },
    messages: [
      { role: 'system', content: systemPrompt(input.budget) },
      { role: 'user', content: lines.join('\n') },
    ],
  };
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (config.apiKey !== null) headers['authorization'] = `Bearer ${config.apiKey}`;
  return {
    url: `${config.baseUrl.replace(/\/+$/, '')}/chat/completions`,
    method: 'POST',
    headers,
    body: JSON.stringify(body),
  };
}

/**
 * The summary in a chat-completions response. Throws model_http for a non-2xx status (retriable for
 * 408, 429 and 5xx) and model_malformed for anything but the JSON asked for. A narrative over budget is
 * cut to it: the narrative is prose, not a claim, and the budget is the policy's, not the model's.
 */
export function parseChatResponse(response: ChatCompletionResponse, budget: number): Summary {
  if (response.status < 200 || response.status >= 300) {
    const retriable = response.status === 408 || response.status === 429 || response.status >= 500;
    throw new TidemarkCoreError(
      'model_http',
      `the model endpoint answered ${response.status}: ${response.body.slice(0, 200)}`,
      {
        retriable,
      },
    );
  }
  const envelope = parseJson(response.body, 'the response body');
  const content = at(at(at(at(envelope, 'choices'), 0), 'message'), 'content');
  if (typeof content !== 'string') throw malformed('choices[0].message.content is not a string');
  const output = parseJson(content, 'the message content');
  const narrative = at(output, 'narrative');
  if (typeof narrative !== 'string') throw malformed('narrative is not a string');
  const claims = parseClaims(at(output, 'claims'));
  return summaryOf(fitToBudget(narrative, budget), normalizeClaims(claims));
}

/** Claims from untrusted JSON; every field checked, extra fields ignored. */
export function parseClaims(value: unknown): Claims {
  if (!isRecord(value)) throw malformed('claims is not an object');
  return {
    resolved: list(value, 'resolved', (c, where): ResolvedClaim => ({
      itemId: text(c, 'itemId', where),
      outcome: symbol(c, 'outcome', ItemOutcomeSymbols, where),
      seq: seq(c, where),
      name: nullableText(c, 'name', where),
      detail: nullableText(c, 'detail', where),
      outcomeDetail: nullableText(c, 'outcomeDetail', where),
    })),
    unresolved: list(value, 'unresolved', (c, where): UnresolvedClaim => ({
      itemId: text(c, 'itemId', where),
      kind: symbol(c, 'kind', ItemKindSymbols, where),
      name: text(c, 'name', where, true),
      seq: seq(c, where),
      detail: nullableText(c, 'detail', where),
      handle: nullableText(c, 'handle', where),
      logPath: nullableText(c, 'logPath', where),
    })),
    dispositions: list(value, 'dispositions', (c, where): DispositionClaim => ({
      itemKey: text(c, 'itemKey', where),
      disposition: symbol(c, 'disposition', DispositionSymbols, where),
      reason: text(c, 'reason', where, true),
      supersededBy: nullableText(c, 'supersededBy', where),
      seq: seq(c, where),
    })),
    artifacts: list(value, 'artifacts', (c, where): ArtifactClaim => ({
      path: text(c, 'path', where),
      action: symbol(c, 'action', ArtifactActionSymbols, where),
      digest: nullableText(c, 'digest', where),
      seq: seq(c, where),
    })),
    constraints: list(value, 'constraints', (c, where): ConstraintClaim => ({
      itemId: text(c, 'itemId', where),
      name: text(c, 'name', where, true),
      detail: nullableText(c, 'detail', where),
      seq: seq(c, where),
    })),
  };
}

function malformed(message: string, cause?: unknown): TidemarkCoreError {
  return new TidemarkCoreError('model_malformed', `the model's output is malformed: ${message}`, { cause });
}

function parseJson(textValue: string, what: string): unknown {
  try {
    return JSON.parse(textValue) as unknown;
  } catch (cause) {
    throw malformed(`${what} is not JSON`, cause);
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function at(value: unknown, key: string | number): unknown {
  if (typeof key === 'number') return Array.isArray(value) ? (value[key] as unknown) : undefined;
  return isRecord(value) && Object.hasOwn(value, key) ? value[key] : undefined;
}

function list<T>(
  claims: Record<string, unknown>,
  key: string,
  item: (c: Record<string, unknown>, where: string) => T,
): T[] {
  const value = claims[key];
  if (!Array.isArray(value)) throw malformed(`claims.${key} is not an array`);
  return value.map((entry: unknown, index) => {
    const where = `claims.${key}[${index}]`;
    if (!isRecord(entry)) throw malformed(`${where} is not an object`);
    return item(entry, where);
  });
}

function text(c: Record<string, unknown>, key: string, where: string, mayBeEmpty = false): string {
  const value = c[key];
  if (typeof value !== 'string' || (!mayBeEmpty && value.length === 0)) {
    throw malformed(`${where}.${key} is not a non-empty string`);
  }
  return value;
}

function nullableText(c: Record<string, unknown>, key: string, where: string): string | null {
  const value = c[key] ?? null;
  if (value !== null && typeof value !== 'string') throw malformed(`${where}.${key} is not a string or null`);
  return value;
}

function symbol<T extends string>(
  c: Record<string, unknown>,
  key: string,
  symbols: readonly T[],
  where: string,
): T {
  const value = c[key];
  if (!symbols.includes(value as T)) throw malformed(`${where}.${key} is not one of ${symbols.join(', ')}`);
  return value as T;
}

function seq(c: Record<string, unknown>, where: string): number {
  const value = c['seq'];
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw malformed(`${where}.seq is not a seq`);
  }
  return value;
}
