import { contextIn } from '@tidemark/adapters';
import { sessionKey, turnMessages, type Compaction, type CompactionSpan } from '@tidemark/core';
import type { TurnReader } from './client.js';
import type { ResumeFormat } from './formats.js';

// Expand: a resumed agent (or its user) opens one node of the summary it was given — the node itself,
// its narrative and its claims (each claim with the L0 seq it came from), and the raw turns it covers,
// read from turns.l0 by their positions, a page at a time, in any resume output format. Nothing here
// decides anything: it reads what the compactor published and what turns.l0 holds.

/** Turns per page at most (a page asks for fewer with `limit`). */
export const maxTurnsPerPage = 200;

/** Where the nodes and the turns' positions are read from (the plan store and the projection). */
export interface ExpandDeps {
  /** A stored node of the session (null: none with that id), or 'rebuilding' while the store is. */
  node(ref: SessionRef, nodeId: string): Promise<Compaction | null | 'rebuilding'>;
  /** Where the session's turn at seq is on turns.l0 (null: not applied). */
  position(ref: SessionRef, seq: number): Promise<{ partition: number; offset: number } | null>;
  readonly turns: Pick<TurnReader, 'read'>;
  readonly turnsTopic: string;
}

interface SessionRef {
  readonly tenantId: string;
  readonly sessionId: string;
}

export type ExpandRefusal = 'node_not_found' | 'bad_range' | 'rebuilding' | 'l0_incomplete';

export type ExpandOutcome<T> =
  | { readonly ok: true; readonly body: T }
  | { readonly ok: false; readonly code: ExpandRefusal; readonly message: string };

export interface NodeTurnsPage {
  readonly nodeId: string;
  readonly span: CompactionSpan;
  /** The turns of this page, inclusive. */
  readonly fromSeq: number;
  readonly toSeq: number;
  /** Where the next page starts, or null when this one reaches the end of the range asked. */
  readonly nextFromSeq: number | null;
  /** The turns as resume messages (format `tidemark`), or the provider's request body part (`body`). */
  readonly messages?: unknown;
  readonly format?: ResumeFormat;
  readonly body?: unknown;
}

export interface TurnRange {
  readonly fromSeq?: number;
  readonly toSeq?: number;
  readonly limit?: number;
}

export function createExpander(deps: ExpandDeps) {
  const nodeOf = async (ref: SessionRef, nodeId: string): Promise<ExpandOutcome<Compaction>> => {
    const node = await deps.node(ref, nodeId);
    if (node === 'rebuilding')
      return { ok: false, code: 'rebuilding', message: 'the resume store is being rebuilt; retry shortly' };
    if (node === null) return { ok: false, code: 'node_not_found', message: 'no such node in this session' };
    return { ok: true, body: node };
  };

  return {
    /** The node: its span, narrative and claims, each claim with its L0 seq. */
    node: nodeOf,

    /** A page of the raw turns the node covers, within its span. */
    async turns(
      ref: SessionRef,
      nodeId: string,
      range: TurnRange,
      format: ResumeFormat,
    ): Promise<ExpandOutcome<NodeTurnsPage>> {
      const found = await nodeOf(ref, nodeId);
      if (!found.ok) return found;
      const { span } = found.body;
      const fromSeq = range.fromSeq ?? span.fromSeq;
      const toSeq = range.toSeq ?? span.toSeq;
      if (fromSeq < span.fromSeq || toSeq > span.toSeq || fromSeq > toSeq) {
        return {
          ok: false,
          code: 'bad_range',
          message: `the node covers turns ${span.fromSeq}–${span.toSeq}; ask for a range inside it`,
        };
      }
      const limit = Math.min(range.limit ?? maxTurnsPerPage, maxTurnsPerPage);
      const last = Math.min(toSeq, fromSeq + limit - 1);
      // Read from the page's first turn (the projection knows where it is), not the node's.
      const start =
        fromSeq === span.fromSeq
          ? { partition: span.l0Partition, offset: span.fromOffset }
          : await deps.position(ref, fromSeq);
      const turns =
        start === null
          ? []
          : await deps.turns.read({
              topic: deps.turnsTopic,
              partition: start.partition,
              fromOffset: start.offset,
              toOffset: span.toOffset,
              key: sessionKey(ref.tenantId, ref.sessionId),
              fromSeq,
              toSeq: last,
            });
      if (turns.length !== last - fromSeq + 1) {
        return {
          ok: false,
          code: 'l0_incomplete',
          message: 'the turns are not all readable on turns.l0 yet',
        };
      }
      const messages = turnMessages(turns);
      const page = { nodeId, span, fromSeq, toSeq: last, nextFromSeq: last < toSeq ? last + 1 : null };
      if (format === 'tidemark') return { ok: true, body: { ...page, messages } };
      return { ok: true, body: { ...page, format, body: contextIn(format, { messages }).body } };
    },
  };
}

export type Expander = ReturnType<typeof createExpander>;
