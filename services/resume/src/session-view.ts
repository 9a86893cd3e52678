import type { Compaction, MarkerDecision, RegressionDetected, TurnEvent } from '@tidemark/core';
import type { SessionStatus } from './outcomes.js';

// A picture of a session, as data: what the session page (session-page.ts) shows, assembled from what
// the pipeline published — the L0 turns (a label each, and what they opened, closed, disposed or
// recorded), the compaction nodes by tier over the turns they cover, every marker decision with its
// violations (each failing id linked to the turns that name it), and the session's status (plan, frame,
// resume mode). Pure: the reader (session-view-reader.ts) fetches, this module only arranges.

/** The newest turns a view carries at most (older ones are counted, not listed). */
export const maxViewTurns = 2000;

/** One state change of a turn, as the page lists it: the id it is about and a line of text. */
export interface TurnChangeRow {
  readonly type: TurnEvent['changes'][number]['type'];
  /** The item id, disposition key or artifact path. */
  readonly id: string;
  readonly text: string;
}

/** One L0 turn, as the page's timeline shows it. */
export interface TurnRow {
  readonly seq: number;
  readonly role: TurnEvent['role'];
  /** Role and the tools or kinds of items the turn opened (`assistant · read_file`). */
  readonly label: string;
  /** The start of the turn's content. */
  readonly excerpt: string;
  readonly changes: readonly TurnChangeRow[];
}

export interface NodeRow {
  readonly nodeId: string;
  readonly tier: number;
  readonly generation: number;
  readonly fromSeq: number;
  readonly toSeq: number;
  readonly summarizer: string;
  readonly attempt: number;
  readonly repairOf: string | null;
  readonly markerId: string;
}

/** A failing id of a violation and the turns it points at (where the id was opened, closed, disposed or recorded). */
export interface ViolationIdRow {
  readonly id: string;
  /**
   * The turn to follow the id to: where the item was disposed (retention), the artifact last recorded
   * (artifacts), the item opened (closure), else the first turn naming it; null when no listed turn does
   * (a node or marker id: the page links the node's span).
   */
  readonly seq: number | null;
  /** Every listed turn naming the id, in order. */
  readonly seqs: readonly number[];
}

export interface ViolationRow {
  readonly condition: string;
  readonly detail: string;
  readonly ids: readonly ViolationIdRow[];
}

/** One decision of the markers topic, in topic order. */
export interface DecisionRow {
  /** The decision's offset on the markers topic: unique in a session, stable across polls. */
  readonly offset: number;
  readonly decision: 'emitted' | 'invalid';
  /** Invalid only: why (check, depth_change, revoked, or whatever a newer validator says). */
  readonly cause: string | null;
  readonly markerId: string;
  readonly nodeId: string;
  readonly depth: number;
  readonly generation: number;
  /** The node's span (fromSeq null when the node itself is not among the session's compactions). */
  readonly fromSeq: number | null;
  readonly toSeq: number;
  readonly violations: readonly ViolationRow[];
}

/** A step the resumed agent started again (a RegressionDetected): the new turn, linked, and the earlier. */
export interface RegressionRow {
  readonly what: string;
  readonly detail: string;
  /** The turn that started the step again. */
  readonly seq: number | null;
  readonly priorSeq: number;
}

export interface SessionView {
  readonly tenantId: string;
  readonly sessionId: string;
  readonly status: SessionStatus;
  readonly turns: {
    /** The first and last seq listed (0 and 0 when none are). */
    readonly fromSeq: number;
    readonly toSeq: number;
    /** Turns applied in all (appliedSeq): more than listed when the session is longer than maxViewTurns. */
    readonly total: number;
    readonly rows: readonly TurnRow[];
  };
  readonly nodes: readonly NodeRow[];
  readonly decisions: readonly DecisionRow[];
  /** The decisions that revoked a marker (cause revoked). */
  readonly revocations: readonly DecisionRow[];
  readonly regressions: readonly RegressionRow[];
}

const excerptLength = 120;

const clip = (text: string, length: number): string =>
  text.length <= length ? text : `${text.slice(0, length - 1)}…`;

function changeRow(change: TurnEvent['changes'][number]): TurnChangeRow {
  switch (change.type) {
    case 'item_opened':
      return {
        type: change.type,
        id: change.itemId,
        text: `opened ${change.kind} ${change.name}${change.detail === null ? '' : `: ${clip(change.detail, 80)}`}`,
      };
    case 'item_closed':
      return {
        type: change.type,
        id: change.itemId,
        text: `closed ${change.outcome}${change.detail === null ? '' : `: ${clip(change.detail, 80)}`}`,
      };
    case 'item_disposed':
      return {
        type: change.type,
        id: change.itemKey,
        text: `${change.disposition}: ${clip(change.reason, 80)}${change.supersededBy === null ? '' : ` (by ${change.supersededBy})`}`,
      };
    case 'artifact_recorded':
      return { type: change.type, id: change.path, text: `artifact ${change.action}` };
    default: {
      const unknown: never = change;
      throw new Error(`unknown change ${JSON.stringify(unknown)}`);
    }
  }
}

/** A turn as the timeline lists it. */
export function turnRowOf(turn: TurnEvent): TurnRow {
  const changes = turn.changes.map(changeRow);
  const opened = turn.changes.flatMap((c) =>
    c.type === 'item_opened' ? [c.kind === 'tool_call' ? c.name : c.kind] : [],
  );
  const label = [turn.role, ...new Set(opened)].join(' · ');
  return { seq: turn.seq, role: turn.role, label, excerpt: clip(turn.content, excerptLength), changes };
}

/** Where each id is named by the listed turns: id → the turns' changes about it, in seq order. */
function mentionsById(
  turns: readonly TurnRow[],
): Map<string, { seq: number; type: TurnChangeRow['type'] }[]> {
  const index = new Map<string, { seq: number; type: TurnChangeRow['type'] }[]>();
  for (const turn of turns) {
    for (const change of turn.changes) {
      const mentions = index.get(change.id) ?? [];
      mentions.push({ seq: turn.seq, type: change.type });
      index.set(change.id, mentions);
    }
  }
  return index;
}

/** The change a condition is about: a disposal (retention), a recording (artifacts), an opening (closure). */
const targetChange: Readonly<Record<string, TurnChangeRow['type']>> = {
  retention: 'item_disposed',
  artifacts: 'artifact_recorded',
  closure: 'item_opened',
};

function violationIdRow(
  condition: string,
  id: string,
  mentions: readonly { seq: number; type: TurnChangeRow['type'] }[],
): ViolationIdRow {
  const seqs = [...new Set(mentions.map((m) => m.seq))];
  const wanted = mentions.filter((m) => m.type === targetChange[condition]);
  // The newest recording of an artifact, the first disposal or opening of an item.
  const target = condition === 'artifacts' ? wanted.at(-1) : wanted[0];
  return { id, seq: target?.seq ?? seqs[0] ?? null, seqs };
}

function nodeRowOf(node: Compaction): NodeRow {
  return {
    nodeId: node.compactionId,
    tier: node.tier,
    generation: node.generation,
    fromSeq: node.span.fromSeq,
    toSeq: node.span.toSeq,
    summarizer: node.summarizer,
    attempt: node.attempt,
    repairOf: node.repairOf,
    markerId: node.marker.markerId,
  };
}

export interface ViewInput {
  readonly status: SessionStatus;
  /** The session's compactions, in topic order (a republished node appears once). */
  readonly compactions: readonly Compaction[];
  /** The session's decisions with their markers-topic offsets, in topic order. */
  readonly decisions: readonly { readonly offset: number; readonly decision: MarkerDecision }[];
  /** The listed turns, in seq order. */
  readonly turns: readonly TurnRow[];
  /** The session's regressions, in topic order (a redelivered one appears once). */
  readonly regressions?: readonly RegressionDetected[];
}

/** The picture of a session from what was read. */
export function assembleSessionView(input: ViewInput): SessionView {
  const { status, turns } = input;
  const nodesById = new Map<string, NodeRow>();
  for (const node of input.compactions) nodesById.set(node.compactionId, nodeRowOf(node));
  const nodes = [...nodesById.values()].sort(
    (a, b) =>
      b.tier - a.tier || a.fromSeq - b.fromSeq || a.generation - b.generation || a.attempt - b.attempt,
  );
  const index = mentionsById(turns);
  const decisions = input.decisions.map(({ offset, decision }): DecisionRow => {
    const node = nodesById.get(decision.compactionId);
    const base = {
      offset,
      markerId: decision.markerId,
      nodeId: decision.compactionId,
      depth: decision.depth,
      generation: decision.generation,
      fromSeq: node?.fromSeq ?? null,
      toSeq: decision.toSeq,
    };
    if (decision.type === 'marker_emitted')
      return { ...base, decision: 'emitted', cause: null, violations: [] };
    return {
      ...base,
      decision: 'invalid',
      cause: String(decision.cause),
      violations: decision.violations.map((v) => ({
        condition: String(v.condition),
        detail: v.detail,
        ids: v.ids.map((id) => violationIdRow(String(v.condition), id, index.get(id) ?? [])),
      })),
    };
  });
  return {
    tenantId: status.tenantId,
    sessionId: status.sessionId,
    status,
    turns: {
      fromSeq: turns[0]?.seq ?? 0,
      toSeq: turns.at(-1)?.seq ?? 0,
      total: status.appliedSeq,
      rows: turns,
    },
    nodes,
    decisions,
    revocations: decisions.filter((d) => d.cause === 'revoked'),
    regressions: [...new Map((input.regressions ?? []).map((r) => [r.regressionId, r])).values()].map(
      (r): RegressionRow => ({
        what: `turn ${r.seq}: ${r.name}${r.detail === null ? '' : ` ${clip(r.detail, excerptLength)}`} again`,
        detail: `${r.ruledOut} at turn ${r.priorSeq} (${r.priorItemId}), before the resume's boundary at turn ${r.boundarySeq}`,
        seq: r.seq,
        priorSeq: r.priorSeq,
      }),
    ),
  };
}
