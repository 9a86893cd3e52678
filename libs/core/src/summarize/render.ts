import type { Claims, Compaction, StateChange, TurnEvent } from '../model.js';

// Deterministic text renderings shared by the summarizers' narratives, the model prompt and the resume
// context's state block.

/** Whitespace collapsed, cut to at most `max` characters with an ellipsis. */
export function excerpt(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, Math.max(0, max - 1)).trimEnd()}…`;
}

export function turnLine(turn: TurnEvent, max = 200): string {
  return `#${turn.seq} ${turn.role}: ${excerpt(turn.content, max)}`;
}

export function spanLabel(fromSeq: number, toSeq: number): string {
  return fromSeq === toSeq ? `turn ${fromSeq}` : `turns ${fromSeq}–${toSeq}`;
}

export function nodeLabel(node: Pick<Compaction, 'tier' | 'span'>): string {
  return `L${node.tier}, ${spanLabel(node.span.fromSeq, node.span.toSeq)}`;
}

/** The state a node claims, as the block a resumed agent reads: every section, even when empty. */
export function stateBlock(claims: Claims): string {
  const section = (title: string, lines: readonly string[]): string =>
    `${title}:\n${lines.length === 0 ? '- none' : lines.map((line) => `- ${line}`).join('\n')}`;
  return [
    section(
      'UNRESOLVED (still open; do not assume a result)',
      claims.unresolved.map((c) => `${c.itemId} (${c.kind}) ${c.name}, opened at #${c.seq}`),
    ),
    section(
      'Dispositions (do not repeat)',
      claims.dispositions.map(
        (c) =>
          `${c.itemKey}: ${c.disposition}${c.supersededBy === null ? '' : ` by ${c.supersededBy}`} at #${c.seq}: ${c.reason}`,
      ),
    ),
    section(
      'Artifacts (they exist; do not recreate)',
      claims.artifacts.map(
        (c) => `${c.path}: ${c.action} at #${c.seq}${c.digest === null ? '' : ` (${c.digest})`}`,
      ),
    ),
    section(
      'Active constraints',
      claims.constraints.map(
        (c) => `${c.itemId}: ${c.name}${c.detail === null ? '' : `: ${c.detail}`} (since #${c.seq})`,
      ),
    ),
    section(
      'Resolved',
      claims.resolved.map((c) => `${c.itemId}: ${c.outcome} at #${c.seq}`),
    ),
  ].join('\n\n');
}

/**
 * A raw turn as a resume context gives it: its content, then the state changes it made on one line
 * (`[state: …]`), so that a call opened, a file written or an approach rejected after the boundary is in
 * the context too, not only in the turn's structure. A turn without changes is its content alone.
 */
export function rawTurnText(turn: Pick<TurnEvent, 'content' | 'changes'>): string {
  if (turn.changes.length === 0) return turn.content;
  return `${turn.content}\n[state: ${turn.changes.map(changeText).join('; ')}]`;
}

function changeText(change: StateChange): string {
  switch (change.type) {
    case 'item_opened': {
      const reach = [
        ...(change.handle === null ? [] : [`handle ${change.handle}`]),
        ...(change.logPath === null ? [] : [`log ${change.logPath}`]),
      ];
      const detail = change.detail === null ? '' : `: ${excerpt(change.detail, 160)}`;
      return `opened ${change.itemId} (${change.kind}) ${change.name}${detail}${reach.length === 0 ? '' : ` (${reach.join(', ')})`}`;
    }
    case 'item_closed':
      return `closed ${change.itemId}: ${change.outcome}${change.detail === null ? '' : ` (${excerpt(change.detail, 160)})`}`;
    case 'item_disposed':
      return `${change.itemKey} ${change.disposition}${change.supersededBy === null ? '' : ` by ${change.supersededBy}`}: ${change.reason}`;
    case 'artifact_recorded':
      return `${change.path} ${change.action}`;
    default: {
      const never: never = change;
      return String(never);
    }
  }
}
