import type { Summarizer, Summary, SummaryInput } from '../model.js';
import { fitToBudget } from '../tokens.js';
import { carryForward, claimsFromState, spanOf, summaryOf } from './claims.js';
import { excerpt, nodeLabel, spanLabel, turnLine } from './render.js';

// The default summarizer. Deterministic; its claims are taken from the log's state, so they carry
// every fact the check needs, plus the prior frame's earlier facts as the log has them now. Its
// narrative is a plain digest of the span, each line shortened so that the whole fits the budget.

export function summarizeStrict(input: SummaryInput): Summary {
  const { fromSeq, toSeq, tier } = spanOf(input);
  const claims = carryForward(claimsFromState(input.state), input.state, input.priorFrame);
  const budgetChars = input.budget * 4;
  const head: string[] = [];
  let body: string[];
  switch (input.span.kind) {
    case 'turns': {
      head.push(`L1 summary of ${spanLabel(fromSeq, toSeq)}.`, ...earlier(input, budgetChars));
      const each = allowance(budgetChars, head, input.span.turns.length);
      body = input.span.turns.map((turn) => turnLine(turn, each));
      break;
    }
    case 'nodes': {
      const { nodes } = input.span;
      head.push(
        `L${tier} digest of ${spanLabel(fromSeq, toSeq)} (${nodes.length} L${tier - 1} nodes).`,
        ...earlier(input, budgetChars),
      );
      const each = allowance(budgetChars, head, nodes.length);
      body = nodes.map((node) => `[${nodeLabel(node)}] ${excerpt(ownText(node.narrative), each)}`);
      break;
    }
    default: {
      const never: never = input.span;
      return never;
    }
  }
  return summaryOf(fitToBudget([...head, ...body].join('\n'), input.budget), claims);
}

export const strictSummarizer: Summarizer = {
  name: 'strict',
  summarize: (input) => new Promise((resolve) => resolve(summarizeStrict(input))),
};

/** One line on what came before the span, from the prior frame: at most a fifth of the budget. */
function earlier(input: SummaryInput, budgetChars: number): string[] {
  const prior = input.priorFrame;
  if (prior === null || prior.span.toSeq >= input.state.fromSeq) return [];
  return [`Earlier (${nodeLabel(prior)}): ${excerpt(ownText(prior.narrative), Math.floor(budgetChars / 5))}`];
}

/** Content characters per line so that the lines share what the head leaves (at least 12). */
function allowance(budgetChars: number, head: readonly string[], lines: number): number {
  const left = budgetChars - head.reduce((sum, line) => sum + line.length + 1, 0);
  // About 18 characters of each line are its prefix: "#1234 assistant: " or "[L1, turns 1–40] ".
  return Math.max(12, Math.floor(left / Math.max(1, lines)) - 18);
}

/** A node's narrative without its header and its "Earlier" line, so that summaries do not nest. */
function ownText(narrative: string): string {
  return narrative
    .split('\n')
    .filter(
      (line, index) =>
        !(index === 0 && /^L\d+ (summary|digest) of /.test(line)) && !line.startsWith('Earlier ('),
    )
    .join(' ');
}
