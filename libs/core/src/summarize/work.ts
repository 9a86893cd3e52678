import { compareText } from '../canonical.js';
import type { ArtifactFact, ItemFact, StateAtBoundary } from '../model.js';
import { clip, fileWritten, itemText, spanLabel } from './render.js';

// What was done and what failed, as a strict node states it: tools run, grouped by name and counted,
// with the key part of what they ran on (the path, the command); files touched and how; and every call
// that ended badly with its detail, so that a resumed model neither redoes the work nor retries the
// failure. Read from the log's state, never from turn text.

/** A line of the "Done" section: `- turns 1–40: …`, so that later nodes can carry it by its span. */
export const doneLine = (fromSeq: number, toSeq: number, text: string): string =>
  `- ${spanLabel(fromSeq, toSeq)}: ${text}`;

/** The span a `doneLine` (or any `- turns a–b: …` line) names, or null for another line. */
export function lineSpan(line: string): { readonly fromSeq: number; readonly toSeq: number } | null {
  const match = /^- turns? (\d+)(?:–(\d+))?: /.exec(line);
  if (match === null) return null;
  const fromSeq = Number(match[1]);
  return { fromSeq, toSeq: match[2] === undefined ? fromSeq : Number(match[2]) };
}

/**
 * What was done in fromSeq..toSeq, from the state of a span containing it: the calls that ended in it
 * (by name, counted, with their distinct key details and outcomes other than ok) and the files touched
 * (artifacts with their action; paths a writing tool ran on).
 */
export function workDone(state: StateAtBoundary, fromSeq: number, toSeq: number): string {
  const inside = (seq: number): boolean => seq >= fromSeq && seq <= toSeq;
  const calls = state.closed.filter(
    (item) => item.kind !== 'constraint' && item.end !== null && inside(item.end.seq),
  );
  const byName = new Map<string, ItemFact[]>();
  for (const call of calls) byName.set(call.name, [...(byName.get(call.name) ?? []), call]);
  const tools = [...byName.entries()]
    .sort(([a, x], [b, y]) => y.length - x.length || compareText(a, b))
    .map(([name, items]) => `${name} ×${items.length}${outcomes(items)}`);
  const files = filesTouched(
    calls,
    state.artifacts.filter((fact) => inside(fact.seq)),
  );
  const parts = [tools.length === 0 ? 'no tool calls ended' : tools.join(', ')];
  if (files.length > 0) parts.push(`files: ${files.join('; ')}`);
  return `${parts.join('; ')}.`;
}

/** Calls the state's span closed in error or cancelled, each with what it ran and why. */
export function failedCalls(state: StateAtBoundary): string[] {
  return state.closed
    .filter((item) => item.end?.type === 'closed' && item.end.outcome !== 'ok')
    .sort((a, b) => endSeq(a) - endSeq(b) || compareText(a.itemId, b.itemId))
    .map((item) => `- ${itemText(item.name, item.detail)}: ${ending(item)} [${item.itemId}]`);
}

function ending(item: ItemFact): string {
  const end = item.end;
  if (end?.type !== 'closed') return 'open';
  const why = end.detail === null ? '' : ` (${clip(end.detail, 160)})`;
  return `${end.outcome} at #${end.seq}${why}`;
}

function outcomes(items: readonly ItemFact[]): string {
  const bad = new Map<string, number>();
  for (const item of items) {
    if (item.end?.type === 'closed' && item.end.outcome !== 'ok') {
      bad.set(item.end.outcome, (bad.get(item.end.outcome) ?? 0) + 1);
    }
  }
  if (bad.size === 0) return '';
  return ` (${[...bad.entries()].map(([outcome, count]) => `${count} ${outcome}`).join(', ')})`;
}

function filesTouched(calls: readonly ItemFact[], artifacts: readonly ArtifactFact[]): string[] {
  const how = new Map<string, Set<string>>();
  const add = (action: string, path: string): void => {
    how.set(action, (how.get(action) ?? new Set<string>()).add(path));
  };
  for (const fact of artifacts) add(fact.action, fact.path);
  for (const call of calls) {
    const path = fileWritten(call.name, call.detail);
    if (call.end?.type === 'closed' && call.end.outcome === 'ok' && path !== null) add(call.name, path);
  }
  return [...how.entries()]
    .sort(([a], [b]) => compareText(a, b))
    .map(([action, paths]) => `${action} ${[...paths].sort(compareText).join(', ')}`);
}

function endSeq(item: ItemFact): number {
  return item.end?.seq ?? item.openedSeq;
}
