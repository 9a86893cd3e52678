import type { Claims, Summarizer, Summary, SummaryInput } from '../model.js';
import { fitToBudget } from '../tokens.js';
import { claimsFromState, mergeClaims, normalizeClaims, spanOf, summaryOf } from './claims.js';
import { excerpt, spanLabel } from './render.js';

// A deliberately lossy summarizer, deterministic, lossy the way fluency-tuned summarizers are: every
// sentence it writes is true, but negative state transitions have no narrative weight, so it folds
// rejections and failures into "explored approaches", drops artifact paths, and tells what was done, not
// what is still in flight: open tool calls, approvals, subprocesses and file handles are left out. Only
// the user's standing requests (constraints) survive, because the narrative mentions them. It exists to show, and to test, that the validator catches what it loses.

export function summarizeNarrative(input: SummaryInput): Summary {
  const { fromSeq, toSeq } = spanOf(input);
  const full = input.span.kind === 'turns' ? claimsFromState(input.state) : mergeClaims(input.span.nodes);
  const claims = lossy(full);
  const folded = full.dispositions.length - claims.dispositions.length;

  const sentences = [`${capitalize(spanLabel(fromSeq, toSeq))}.`];
  const asked = full.constraints.map((c) => c.detail ?? c.name);
  const opening =
    asked.length > 0
      ? `User requested ${asked.map((text) => excerpt(text, 120)).join(' and ')}`
      : `User and agent worked on ${excerpt(firstUserText(input) ?? 'the task', 160)}`;
  sentences.push(folded > 0 ? `${opening}; agent explored approaches.` : `${opening}; agent made progress.`);
  if (full.resolved.length > 0) sentences.push(`${full.resolved.length} step(s) completed.`);
  return summaryOf(fitToBudget(sentences.join(' '), input.budget), claims);
}

export const narrativeSummarizer: Summarizer = {
  name: 'narrative',
  summarize: (input) => new Promise((resolve) => resolve(summarizeNarrative(input))),
};

function lossy(claims: Claims): Claims {
  return normalizeClaims({
    ...claims,
    dispositions: claims.dispositions.filter((c) => c.disposition === 'superseded'),
    artifacts: [],
    unresolved: claims.unresolved.filter((c) => c.kind === 'constraint'),
  });
}

function firstUserText(input: SummaryInput): string | null {
  switch (input.span.kind) {
    case 'turns':
      return input.span.turns.find((turn) => turn.role === 'user')?.content ?? null;
    case 'nodes':
      return input.span.nodes[0]?.narrative ?? null;
    default: {
      const never: never = input.span;
      return never;
    }
  }
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
