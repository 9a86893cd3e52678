import type { Compaction, Summarizer, Summary, SummaryInput } from '../model.js';
import { fitToBudget } from '../tokens.js';
import { carryForward, claimsFromState, spanOf, summaryOf } from './claims.js';
import { clip, spanLabel } from './render.js';
import { goalLine, latestInstruction, section } from './sections.js';
import { doneLine, failedCalls, lineSpan, workDone } from './work.js';

// The default summarizer. Deterministic; its claims are taken from the log's state, so they carry
// every fact the check needs, plus the prior frame's earlier facts as the log has them now. Its
// narrative says what a model needs to carry on, in sections read from the log's state, never from
// turn text: the session's goal and the latest instruction (carried into every node), what was done
// per stretch of turns (per child for a digest, with the earlier stretches carried), and the calls
// that failed, with why. The state block the resume adds says what is open, rejected and standing.

export function summarizeStrict(input: SummaryInput): Summary {
  const { fromSeq, toSeq, tier } = spanOf(input);
  const claims = carryForward(claimsFromState(input.state), input.state, input.priorFrame);
  const { span, priorFrame } = input;
  const header =
    span.kind === 'turns'
      ? `L1 summary of ${spanLabel(fromSeq, toSeq)}.`
      : `L${tier} digest of ${spanLabel(fromSeq, toSeq)} (${span.nodes.length} L${tier - 1} nodes).`;
  const stretches = span.kind === 'turns' ? [{ fromSeq, toSeq }] : span.nodes.map((node) => node.span);
  const earlier = [priorFrame, ...(span.kind === 'nodes' ? span.nodes.slice(0, 1) : [])].filter(
    (node): node is Compaction => node !== null,
  );
  const before = (line: string): boolean => (lineSpan(line)?.toSeq ?? seqOf(line)) < fromSeq;
  const done = [
    ...disjoint(earlier.flatMap((node) => section(node.narrative, doneTitle)).filter(before)),
    ...stretches.map((s) => doneLine(s.fromSeq, s.toSeq, workDone(input.state, s.fromSeq, s.toSeq))),
  ];
  const failed = [
    ...unique(earlier.flatMap((node) => section(node.narrative, failedTitle)).filter(before)),
    ...failedCalls(input.state),
  ];
  const head = [header, ...goalLine(input, earlier), ...latestInstruction(input)];
  const narrative = fit(input.budget * 4, head, done, failed);
  return summaryOf(fitToBudget(narrative, input.budget), claims);
}

export const strictSummarizer: Summarizer = {
  name: 'strict',
  summarize: (input) => new Promise((resolve) => resolve(summarizeStrict(input))),
};

const doneTitle = 'Done:';
const failedTitle = 'Failed (do not retry as it was):';

/**
 * The narrative within `budgetChars`: the head and the failures whole (what not to retry matters most),
 * then the "Done" stretches, the oldest merged into one line that says where they are when they do not
 * all fit. A line still too long is cut at a word; the whole is cut to the budget last.
 */
function fit(
  budgetChars: number,
  head: readonly string[],
  done: readonly string[],
  failed: readonly string[],
): string {
  const size = (lines: readonly string[]): number => lines.reduce((sum, line) => sum + line.length + 1, 0);
  const tail = failed.length === 0 ? [] : [failedTitle, ...failed];
  // The kept stretches are `first` then done[next…]; merging the first two changes the size by the
  // difference, so the whole is not rendered again per merge.
  const fixed = size(head) + doneTitle.length + 1 + size(tail);
  let keptSize = size(done);
  let first = done[0];
  let next = 1;
  while (first !== undefined && fixed + keptSize > budgetChars && next < done.length) {
    const second = done[next]!;
    const from = lineSpan(first)?.fromSeq ?? 1;
    const to = lineSpan(second)?.toSeq ?? from;
    const merged = doneLine(from, to, 'left out for the budget; the raw log has it.');
    keptSize += merged.length - first.length - second.length - 1;
    first = merged;
    next += 1;
  }
  const kept = first === undefined ? [] : [first, ...done.slice(next)];
  return [...head, doneTitle, ...kept, ...tail].map((line) => clip(line, budgetChars)).join('\n');
}

/** The seq a failure line names (`… at #11 …`), for carrying only what precedes the span. */
function seqOf(line: string): number {
  const match = / at #(\d+)/.exec(line);
  return match === null ? Number.POSITIVE_INFINITY : Number(match[1]);
}

/** Carried stretches that do not overlap, by span, the first source (the prior frame) winning. */
function disjoint(lines: readonly string[]): string[] {
  const kept: string[] = [];
  let reached = 0;
  const bySpan = lines
    .flatMap((line, index) => {
      const span = lineSpan(line);
      return span === null ? [] : [{ line, index, span }];
    })
    .sort((a, b) => a.span.fromSeq - b.span.fromSeq || a.index - b.index);
  for (const { line, span } of bySpan) {
    if (span.fromSeq <= reached) continue;
    kept.push(line);
    reached = span.toSeq;
  }
  return kept;
}

function unique(lines: readonly string[]): string[] {
  return [...new Set(lines)];
}
