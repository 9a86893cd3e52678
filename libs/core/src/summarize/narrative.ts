import type { Claims, Compaction, Summarizer, Summary, SummaryInput } from '../model.js';
import { fitToBudget } from '../tokens.js';
import { claimsFromState, mergeClaims, normalizeClaims, spanOf, summaryOf } from './claims.js';
import { clip, spanLabel } from './render.js';
import { goalLine } from './sections.js';

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
      ? `User requested ${asked.map((text) => clip(text, 120)).join(' and ')}`
      : 'User and agent worked towards the goal';
  sentences.push(folded > 0 ? `${opening}; agent explored approaches.` : `${opening}; agent made progress.`);
  if (full.resolved.length > 0) sentences.push(`${full.resolved.length} step(s) completed.`);
  // The goal is named like the strict summarizer names it, so that it survives any mix of nodes.
  const earlier = [input.priorFrame, ...(input.span.kind === 'nodes' ? input.span.nodes.slice(0, 1) : [])];
  const goal = goalLine(
    input,
    earlier.filter((node): node is Compaction => node !== null),
  );
  return summaryOf(fitToBudget([...goal, sentences.join(' ')].join('\n'), input.budget), claims);
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

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
