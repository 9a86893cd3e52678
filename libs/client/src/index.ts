// @tidemark/client: Tidemark for an agent runtime, installable on its own. Publish a session's turns
// (TurnEvents, or a transcript in any format the adapters read) with the right key and seq, wait until
// the pipeline has applied, compacted and decided them, and fetch the session's resume in the format
// the runtime's model API takes.
import { convertTranscript, type InputFormat } from '@tidemark/adapters';
import { createPublisher, type Publisher } from '@tidemark/contract';
import { TidemarkError, type TurnEvent } from '@tidemark/core';

export { inputFormats, outputFormats, type InputFormat, type OutputFormat } from '@tidemark/adapters';
export type { TurnEvent } from '@tidemark/core';

export interface TidemarkClientOptions {
  /** Kafka brokers, e.g. ['127.0.0.1:19092']. */
  readonly brokers: readonly string[];
  /** The schema registry's Confluent-compatible URL. */
  readonly registryUrl: string;
  /** The deployment's TOPIC_PREFIX (default ''). */
  readonly topicPrefix?: string;
  /** The resume service, e.g. 'http://127.0.0.1:7400'. */
  readonly resumeUrl: string;
  /** A resume token of the tenant. */
  readonly token: string;
  readonly tenantId: string;
  /** A name for the connection (default 'tidemark-client'). */
  readonly clientId?: string;
}

/** Where a session stands (GET /v1/sessions/{tenant}/{session}). */
export interface SessionState {
  /** Every turn up to this seq is applied. */
  readonly appliedSeq: number;
  /** No compaction the applied turns make due is undecided. */
  readonly settled: boolean;
  /** Non-null when a turn was refused or a change skipped at `seq`: nothing from there on is trusted. */
  readonly broken: { readonly seq: number; readonly reason: string } | null;
  /** Non-null while the session waits for the turn at `expectedSeq` (refused, or never came): publish it. */
  readonly stalled: { readonly expectedSeq: number; readonly since: string | null } | null;
  readonly [field: string]: unknown;
}

/** A resume (GET …/resume?format=): the context as messages, or a provider's request body part. */
export interface ResumeAnswer {
  readonly mode: 'digest' | 'raw';
  /** The node the context starts from; null for the raw log alone. */
  readonly nodeId: string | null;
  readonly contextHash: string;
  /** `tidemark` (absent) or the provider format of `body`. */
  readonly format?: string;
  /** The provider's request body part: `{ messages }`, `{ system, messages }`, `{ instructions, input }`. */
  readonly body?: unknown;
  /** The `tidemark` format's messages. */
  readonly messages?: readonly { readonly role: string; readonly content: string }[];
  readonly [field: string]: unknown;
}

export interface TidemarkClient {
  /** Publishes turns (their seqs: the session's next ones); resolves once they are durable. */
  publish(turns: readonly TurnEvent[]): Promise<void>;
  /**
   * Converts a transcript's text and publishes the turns the session does not have yet (seqs and ids
   * derive from the transcript, so publishing a transcript again publishes only what it gained).
   */
  publishTranscript(
    sessionId: string,
    format: InputFormat,
    text: string,
  ): Promise<{ readonly turns: number; readonly published: number }>;
  /** The session's state, or null when the pipeline has no turn of it. */
  session(sessionId: string): Promise<SessionState | null>;
  /** Resolves once the session has applied `lastSeq` and settled; rejects after `timeoutMs` (default 60 s). */
  waitUntilSettled(sessionId: string, lastSeq: number, timeoutMs?: number): Promise<SessionState>;
  /** The session's resume: `tidemark` messages, or a provider's request body (`openai-chat`, …). */
  resume(sessionId: string, format?: string): Promise<ResumeAnswer>;
  /** Expand: a node of the session's summary (a resume's nodeId), its narrative and claims with their seqs. */
  node(sessionId: string, nodeId: string): Promise<{ readonly node: Record<string, unknown> }>;
  /** Expand: a page of the raw turns a node covers (default: from its first turn, up to 200). */
  nodeTurns(sessionId: string, nodeId: string, page?: NodeTurnsRequest): Promise<NodeTurnsAnswer>;
  close(): Promise<void>;
}

/** Which turns of a node to read, in which format. */
export interface NodeTurnsRequest {
  readonly fromSeq?: number;
  readonly toSeq?: number;
  readonly limit?: number;
  readonly format?: string;
}

/** A page of a node's turns: as messages (`tidemark`) or a provider's request body part. */
export interface NodeTurnsAnswer {
  readonly nodeId: string;
  readonly fromSeq: number;
  readonly toSeq: number;
  /** Where the next page starts; null on the last. */
  readonly nextFromSeq: number | null;
  readonly messages?: readonly { readonly role: string; readonly content: string }[];
  readonly format?: string;
  readonly body?: unknown;
  readonly [field: string]: unknown;
}

/** A call the resume service refused (its code and message), or an answer it could not give in time. */
export class TidemarkClientError extends TidemarkError<'resume_unavailable'> {
  override readonly name: string = 'TidemarkClientError';
  constructor(
    message: string,
    readonly status: number | null,
  ) {
    super('resume_unavailable', message, { retriable: status === null || status >= 500 });
  }
}

export async function connectTidemark(options: TidemarkClientOptions): Promise<TidemarkClient> {
  const publisher: Publisher = await createPublisher({
    brokers: [...options.brokers],
    registryUrl: options.registryUrl,
    clientId: options.clientId ?? 'tidemark-client',
    topicPrefix: options.topicPrefix ?? '',
  });
  const { tenantId } = options;
  const base = `${options.resumeUrl.replace(/\/+$/, '')}/v1/sessions/${encodeURIComponent(tenantId)}`;
  /** The last seq this client sent, per session: turns past it are the ones to publish. */
  const sent = new Map<string, number>();
  /** The first seq this client sent, per session: it sent every seq from there to `sent` (no gaps). */
  const firstSent = new Map<string, number>();

  const get = async (path: string): Promise<{ status: number; body: unknown }> => {
    const response = await fetch(`${base}/${path}`, {
      headers: { authorization: `Bearer ${options.token}` },
    });
    return { status: response.status, body: await response.json() };
  };
  const refused = (what: string, { status, body }: { status: number; body: unknown }) => {
    const { code, message } = (body ?? {}) as { code?: string; message?: string };
    return new TidemarkClientError(`${what}: ${status} ${code ?? ''} ${message ?? ''}`.trim(), status);
  };

  const session = async (sessionId: string): Promise<SessionState | null> => {
    const answer = await get(encodeURIComponent(sessionId));
    if (answer.status === 404) return null;
    if (answer.status !== 200) throw refused(`session ${tenantId}/${sessionId}`, answer);
    return answer.body as SessionState;
  };

  const publish = async (turns: readonly TurnEvent[]): Promise<void> => {
    await publisher.publishTurns(turns);
    for (const turn of turns) {
      sent.set(turn.sessionId, Math.max(sent.get(turn.sessionId) ?? 0, turn.seq));
      firstSent.set(turn.sessionId, Math.min(firstSent.get(turn.sessionId) ?? turn.seq, turn.seq));
    }
  };

  return {
    publish,
    async publishTranscript(sessionId, format, text) {
      const { turns } = convertTranscript(format, text, { tenantId, sessionId });
      const from = sent.get(sessionId) ?? (await session(sessionId))?.appliedSeq ?? 0;
      const fresh = turns.filter((turn) => turn.seq > from);
      if (fresh.length > 0) {
        publisher.resumeSession(tenantId, sessionId, fresh[0]!.seq - 1);
        await publish(fresh);
      }
      return { turns: turns.length, published: fresh.length };
    },
    session,
    async waitUntilSettled(sessionId, lastSeq, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const state = await session(sessionId);
        if (state !== null && state.appliedSeq >= lastSeq && state.settled) return state;
        // Waiting for a turn at or before lastSeq that was refused or never came, and that this client
        // has not sent (one it sent is on its way): waiting longer cannot help.
        const expected = state?.stalled?.expectedSeq;
        const onItsWay =
          expected !== undefined &&
          (firstSent.get(sessionId) ?? Infinity) <= expected &&
          expected <= (sent.get(sessionId) ?? 0);
        if (state?.stalled != null && state.stalled.expectedSeq <= lastSeq && !onItsWay) {
          // Turns parked after the gap follow on their own; refused ones must be published again.
          const why = state.broken === null ? '' : ` (${state.broken.reason} at seq ${state.broken.seq})`;
          const todo = state.broken === null ? 'publish it (again)' : 'publish it (again) and what follows';
          throw new TidemarkClientError(
            `${tenantId}/${sessionId} is waiting for seq ${state.stalled.expectedSeq}${why}${state.stalled.since === null ? '' : ` since ${state.stalled.since}`}: ${todo}`,
            409,
          );
        }
        if (Date.now() > deadline) {
          throw new TidemarkClientError(
            `${tenantId}/${sessionId} did not settle within ${timeoutMs} ms (applied ${state?.appliedSeq ?? 0} of ${lastSeq})`,
            null,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    },
    async resume(sessionId, format = 'tidemark') {
      const answer = await get(
        `${encodeURIComponent(sessionId)}/resume?format=${encodeURIComponent(format)}`,
      );
      if (answer.status !== 200) throw refused(`resume ${tenantId}/${sessionId}`, answer);
      return answer.body as ResumeAnswer;
    },
    async node(sessionId, nodeId) {
      const answer = await get(`${encodeURIComponent(sessionId)}/nodes/${encodeURIComponent(nodeId)}`);
      if (answer.status !== 200) throw refused(`node ${nodeId} of ${tenantId}/${sessionId}`, answer);
      return answer.body as { node: Record<string, unknown> };
    },
    async nodeTurns(sessionId, nodeId, page = {}) {
      const query = new URLSearchParams(
        Object.entries(page)
          .filter(([, value]) => value !== undefined)
          .map(([name, value]): [string, string] => [name, String(value)]),
      );
      const answer = await get(
        `${encodeURIComponent(sessionId)}/nodes/${encodeURIComponent(nodeId)}/turns?${query.toString()}`,
      );
      if (answer.status !== 200) throw refused(`turns of node ${nodeId} of ${tenantId}/${sessionId}`, answer);
      return answer.body as NodeTurnsAnswer;
    },
    close: () => publisher.close(),
  };
}
