import { compareText } from '../canonical.js';
import type { Claims, Compaction, ResolvedClaim, StateChange, TurnEvent, UnresolvedClaim } from '../model.js';

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

/**
 * The state a node claims, as the block a resumed agent reads: every section, even when empty. Items
 * are given by name and the key part of their detail, with their id in brackets (for expand and
 * provenance); calls that ended alike are grouped by name and detail with the seqs that closed them.
 */
export function stateBlock(claims: Claims): string {
  const section = (title: string, lines: readonly string[]): string =>
    `${title}:\n${lines.length === 0 ? '- none' : lines.map((line) => `- ${line}`).join('\n')}`;
  return [
    section(
      'UNRESOLVED (still open; do not assume a result)',
      claims.unresolved.filter((c) => c.kind !== 'constraint').map(unresolvedText),
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
        (c) => `${c.name}${c.detail === null ? '' : `: ${c.detail}`} (since #${c.seq}) [${c.itemId}]`,
      ),
    ),
    section('Resolved', resolvedLines(claims.resolved)),
  ].join('\n\n');
}

/** An item as a reader knows it: its name and the key part of its detail. */
export function itemText(name: string, detail: string | null): string {
  const key = detailKey(detail);
  return key === null || key === name ? name : `${name} ${key}`;
}

function unresolvedText(c: UnresolvedClaim): string {
  const reach = [
    ...(c.handle === null ? [] : [`handle ${c.handle}`]),
    ...(c.logPath === null ? [] : [`log ${c.logPath}`]),
  ];
  return `${itemText(c.name, c.detail)} (${c.kind} opened at #${c.seq}${reach.map((r) => `; ${r}`).join('')}) [${c.itemId}]`;
}

/**
 * Resolved calls by what they ran on, then by name: `src/a.ts: grep #3, edit_file #8 #57`, so that each
 * file or command is named once with everything done to it. A call that did not end ok is a line of its
 * own, with its outcome's detail and id; calls without a detail are grouped by name. A claim without a
 * name (a node written before claims carried names) is given by its id.
 */
function resolvedLines(claims: readonly ResolvedClaim[]): string[] {
  const lines: string[] = [];
  const ok = new Map<string, Map<string, number[]>>();
  for (const c of [...claims].sort((a, b) => a.seq - b.seq)) {
    if (c.name === null) {
      lines.push(`${c.itemId}: ${c.outcome} at #${c.seq}`);
      continue;
    }
    const key = detailKey(c.detail);
    if (c.outcome !== 'ok') {
      const why = c.outcomeDetail === null ? '' : ` (${clip(c.outcomeDetail, 160)})`;
      lines.push(`${c.name}${key === null ? '' : ` ${key}`}: ${c.outcome} at #${c.seq}${why} [${c.itemId}]`);
      continue;
    }
    const group = key === null || key === c.name ? '' : key;
    const byName = ok.get(group) ?? new Map<string, number[]>();
    ok.set(group, byName);
    byName.set(c.name, [...(byName.get(c.name) ?? []), c.seq]);
  }
  const calls = (byName: Map<string, number[]>): string[] =>
    [...byName.entries()].map(([name, seqs]) => `${name} ${seqList(seqs)}`);
  const grouped = [...ok.entries()]
    .sort(([a], [b]) => compareText(a, b))
    .flatMap(([key, byName]) => (key === '' ? calls(byName) : [`${key}: ${calls(byName).join(', ')}`]));
  return [...lines, ...grouped];
}

/** Seqs as `#3 #8 #12`, or `×12 #3…#90` past three. */
function seqList(seqs: readonly number[]): string {
  const each = seqs.map((seq) => `#${seq}`);
  return each.length <= 3 ? each.join(' ') : `×${each.length} ${each[0]}…${each.at(-1)}`;
}

// Argument fields that say what a call ran on, most telling first.
const keyFields = [
  'path',
  'file_path',
  'filePath',
  'file',
  'filename',
  'command',
  'cmd',
  'pattern',
  'query',
  'url',
];

/**
 * The key part of an item's detail: for JSON arguments (what the adapters record), the path or command
 * they name, else their first text value; otherwise the detail's first line. At most 120 characters,
 * cut at a word. Null without a detail.
 */
export function detailKey(detail: string | null): string | null {
  if (detail === null) return null;
  const text = detail.trim();
  if (text.startsWith('{')) {
    const fields = jsonObject(text);
    if (fields !== null) {
      const named = keyFields.map((field) => fields[field]).find(isText);
      const value = named ?? Object.values(fields).find(isText);
      if (value !== undefined) return clip(value, 120);
    }
  }
  const line = text.split('\n', 1)[0]!;
  return line.length === 0 ? null : clip(line, 120);
}

// A tool whose name says it writes, run on something that looks like a path: the file it touched.
const writing = /(edit|write|creat|patch|apply|replace|delet|remov|move|renam|save|append|insert)/i;
const pathLike = /^\S*[/.]\S*$/;

/** The file a call wrote, when its name says it writes and its detail's key part is a path; else null. */
export function fileWritten(name: string, detail: string | null): string | null {
  const key = detailKey(detail);
  return key !== null && writing.test(name) && pathLike.test(key) ? key : null;
}

/** Whitespace collapsed; whole up to `max` characters, else cut at the last word that fits, with "…". */
export function clip(text: string, max: number): string {
  // Only a prefix can show: a long text (a tool's output, a file) is collapsed a prefix at a time.
  // Collapsing only shortens, and a prefix collapses to a prefix of the whole's collapse; when that holds
  // more than `max` characters before any trailing whitespace, the whole does too, and the cut is the same.
  const prefix = 2 * max + 16;
  if (text.length > prefix) {
    const head = text.slice(0, prefix).replace(/\s+/g, ' ').trimStart();
    if (head.trimEnd().length > max) return cut(head, max);
  }
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : cut(flat, max);
}

/** `flat` (longer than `max`) cut at the last word that fits, with "…". */
function cut(flat: string, max: number): string {
  const fits = flat.slice(0, Math.max(1, max - 1));
  const space = fits.lastIndexOf(' ');
  return `${(space > max / 2 ? fits.slice(0, space) : fits).trimEnd()}…`;
}

function jsonObject(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}

function isText(value: unknown): value is string {
  return typeof value === 'string' && value.trim().length > 0;
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
