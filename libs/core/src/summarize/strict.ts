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
      head.push(
        `L1 summary of ${spanLabel(fromSeq, toSeq)}.`,
        ...goal(input),
        ...stillOpen(input, budgetChars),
        ...earlier(input, budgetChars),
      );
      const each = allowance(budgetChars, head, input.span.turns.length);
      body = input.span.turns.map((turn) => turnLine(turn, each));
      break;
    }
    case 'nodes': {
      const { nodes } = input.span;
      head.push(
        `L${tier} digest of ${spanLabel(fromSeq, toSeq)} (${nodes.length} L${tier - 1} nodes).`,
        ...goal(input),
        ...stillOpen(input, budgetChars),
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

const goalPrefix = 'Goal: ';
const openPrefix = 'Still open: ';

/**
 * The session's goal: carried from the prior frame or the first child (so every node has it, however
 * far from the session's start), else the first user request of the span, to its first sentence.
 */
function goal(input: SummaryInput): string[] {
  const carried = [input.priorFrame, ...(input.span.kind === 'nodes' ? input.span.nodes.slice(0, 1) : [])]
    .flatMap((node) => (node === null ? [] : node.narrative.split('\n')))
    .find((line) => line.startsWith(goalPrefix));
  if (carried !== undefined) return [carried];
  if (input.span.kind !== 'turns') return [];
  const request = input.span.turns.find((turn) => turn.role === 'user');
  return request === undefined ? [] : [`${goalPrefix}${firstSentence(request.content)}`];
}

/**
 * What is still running at the boundary, by name, with what is needed to pick it up again (handle, log):
 * the state block names open items, this line says how to reach them. At most a fifth of the budget.
 */
function stillOpen(input: SummaryInput, budgetChars: number): string[] {
  const open = input.state.open.filter((item) => item.kind !== 'constraint');
  if (open.length === 0) return [];
  const each = open.map((item) => {
    const reach = [
      ...(item.handle === null ? [] : [`handle ${item.handle}`]),
      ...(item.logPath === null ? [] : [`log ${item.logPath}`]),
    ];
    return `${item.itemId} ${item.name}${reach.length === 0 ? '' : ` (${reach.join(', ')})`}`;
  });
  return [excerpt(`${openPrefix}${each.join('; ')}`, Math.floor(budgetChars / 5))];
}

/** The first sentence of a text, whole up to 240 characters, else cut at a word boundary. */
function firstSentence(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  const end = flat.search(/[.!?](\s|$)/);
  const sentence = end >= 0 ? flat.slice(0, end + 1) : flat;
  if (sentence.length <= 240) return sentence;
  const cut = sentence.slice(0, 240);
  const space = cut.lastIndexOf(' ');
  return `${space > 0 ? cut.slice(0, space) : cut}…`;
}

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
        !(index === 0 && /^L\d+ (summary|digest) of /.test(line)) &&
        !line.startsWith('Earlier (') &&
        !line.startsWith(goalPrefix) &&
        !line.startsWith(openPrefix),
    )
    .join(' ');
}
