import type { Compaction, SummaryInput, TurnEvent } from '../model.js';
import { clip } from './render.js';

// The lines every node carries so that a resume from any node knows what the session is for: its goal
// (the first user request) and the newest instruction. Both are read from turns, carried from the prior
// frame or the children, and found again by their prefix, whichever summarizer wrote the node.

const goalPrefix = 'Goal: ';
const latestPrefix = 'Latest instruction';

/**
 * The session's goal: carried from the prior frame or the first child (so every node has it, however
 * far from the session's start), else the span's first user request.
 */
export function goalLine(input: SummaryInput, earlier: readonly Compaction[]): string[] {
  const carried = earlier.flatMap((node) => node.narrative.split('\n')).find((l) => l.startsWith(goalPrefix));
  if (carried !== undefined) return [carried];
  // Only a span with nothing before it holds the first request; a later span's first user turn is not
  // the goal, and a node that lost it (a model that left the line out) cannot bring it back.
  if (input.span.kind !== 'turns' || input.priorFrame !== null) return [];
  const request = input.span.turns.find((turn) => turn.role === 'user');
  return request === undefined ? [] : [`${goalPrefix}${sentences(request.content, 300)}`];
}

/**
 * The newest user turn at the boundary: the span's last one (unless it is the goal itself), else the
 * one the last child or the prior frame carries.
 */
export function latestInstruction(input: SummaryInput): string[] {
  const { span, priorFrame } = input;
  if (span.kind === 'turns') {
    const users = span.turns.filter((turn) => turn.role === 'user');
    const last: TurnEvent | undefined = users.at(-1);
    if (last !== undefined) {
      const isGoal = priorFrame === null && users.length === 1;
      return isGoal ? [] : [`${latestPrefix} (#${last.seq}): ${sentences(last.content, 300)}`];
    }
  }
  const sources = [...(span.kind === 'nodes' ? [...span.nodes].reverse() : []), priorFrame];
  for (const node of sources) {
    const line = node?.narrative.split('\n').find((l) => l.startsWith(latestPrefix));
    if (line !== undefined) return [line];
  }
  return [];
}

/** The `- …` lines under a section title of a narrative. */
export function section(narrative: string, title: string): string[] {
  const lines = narrative.split('\n');
  const start = lines.indexOf(title);
  if (start < 0) return [];
  const out: string[] = [];
  for (const line of lines.slice(start + 1)) {
    if (!line.startsWith('- ')) break;
    out.push(line);
  }
  return out;
}

/** Whole up to `max` characters, else the leading sentences that fit, else cut at a word. */
export function sentences(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (flat.length <= max) return flat;
  const ends = [...flat.matchAll(/[.!?](?=\s|$)/g)].map((m) => m.index + 1).filter((end) => end <= max);
  return ends.length > 0 ? flat.slice(0, ends.at(-1)) : clip(flat, max);
}
