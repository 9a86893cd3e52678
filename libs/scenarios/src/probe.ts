import {
  detailKey,
  estimateTokens,
  fileWritten,
  foldTurns,
  rawTurnText,
  type ResumeMessage,
  type TurnEvent,
} from '@tidemark/core';

// Can a model work from a resume context? The probe asks what the next step depends on — the goal, each
// file changed and how, each approach rejected or failed and why, each call or process still open (with
// its handle), each constraint in force and each one superseded — with questions generated from the raw
// log's events (never from the summary), and answers each from the context's text alone: a question is
// answered when every one of its facts appears in the text, after normalizing case and whitespace. The
// score is the share answered. Limits (docs/probe.md): exact matching rewards stating facts as the log
// has them, not paraphrase; it checks presence, not that a fact is stated in the right place.

export const probeClasses = ['goal', 'files', 'not_to_retry', 'still_open', 'constraints'] as const;
export type ProbeClass = (typeof probeClasses)[number];

export interface ProbeQuestion {
  readonly class: ProbeClass;
  /** What is asked, for a reader of a miss: the item, key or path. */
  readonly about: string;
  /** Every fact that must appear in the context for the question to count as answered. */
  readonly facts: readonly string[];
}

export interface ProbeResult {
  readonly asked: number;
  readonly answered: number;
  /** answered ÷ asked; 1 when nothing was asked. */
  readonly score: number;
  readonly byClass: Readonly<Record<ProbeClass, { readonly asked: number; readonly answered: number }>>;
  /** The questions not answered, by class and subject. */
  readonly missed: readonly string[];
}

/** The questions a resume of these turns (a whole session, seq 1 on) must answer. */
export function probeQuestions(turns: readonly TurnEvent[]): ProbeQuestion[] {
  const first = turns[0];
  if (first === undefined) return [];
  const last = turns.at(-1)!.seq;
  const { fold } = foldTurns(first.tenantId, first.sessionId, turns);
  const state = fold.stateAt({
    tenantId: first.tenantId,
    sessionId: first.sessionId,
    fromSeq: 1,
    toSeq: last,
    itemIds: [],
    itemKeys: [],
    paths: [],
  });
  const questions: ProbeQuestion[] = [];
  const request = turns.find((turn) => turn.role === 'user');
  if (request !== undefined) {
    questions.push({ class: 'goal', about: `#${request.seq}`, facts: [firstSentence(request.content)] });
  }
  for (const artifact of state.artifacts) {
    questions.push({ class: 'files', about: artifact.path, facts: [artifact.path, artifact.action] });
  }
  // Files a writing tool ran on (edit_file src/x.ts), and calls that failed with why: the log names
  // them in the call's detail and its closing detail, not as artifacts or dispositions.
  for (const item of state.closed) {
    if (item.end?.type !== 'closed') continue;
    const key = detailKey(item.detail);
    if (item.end.outcome !== 'ok') {
      questions.push({
        class: 'not_to_retry',
        about: item.itemId,
        facts: [
          item.name,
          ...(key === null ? [] : [key]),
          item.end.outcome,
          ...(item.end.detail === null ? [] : [item.end.detail]),
        ],
      });
    } else {
      const path = fileWritten(item.name, item.detail);
      if (path !== null)
        questions.push({ class: 'files', about: `${item.name} ${path}`, facts: [path, item.name] });
    }
  }
  for (const disposed of state.disposed) {
    if (disposed.disposition === 'superseded') {
      // Presented as superseded, never as in force.
      questions.push({
        class: 'constraints',
        about: disposed.itemKey,
        facts: [disposed.itemKey, 'superseded'],
      });
      continue;
    }
    questions.push({
      class: 'not_to_retry',
      about: disposed.itemKey,
      facts: [disposed.itemKey, disposed.disposition, disposed.reason],
    });
  }
  for (const item of state.open) {
    if (item.kind === 'constraint') {
      questions.push({
        class: 'constraints',
        about: item.itemId,
        facts: [item.name, ...(item.detail === null ? [] : [item.detail])],
      });
      continue;
    }
    questions.push({
      class: 'still_open',
      about: item.itemId,
      facts: [item.itemId, ...(item.handle === null ? [] : [item.handle])],
    });
  }
  // One question per subject: a file edited twice is one thing to know.
  const seen = new Set<string>();
  return questions.filter((q) => {
    const key = `${q.class}\u0000${q.about}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** Answers the questions from the context's text alone. */
export function answerProbe(
  questions: readonly ProbeQuestion[],
  messages: readonly Pick<ResumeMessage, 'content'>[],
): ProbeResult {
  const text = normalize(messages.map((m) => m.content).join('\n'));
  const byClass = Object.fromEntries(probeClasses.map((c) => [c, { asked: 0, answered: 0 }])) as Record<
    ProbeClass,
    { asked: number; answered: number }
  >;
  const missed: string[] = [];
  let answered = 0;
  for (const question of questions) {
    byClass[question.class].asked += 1;
    if (question.facts.every((fact) => text.includes(normalize(fact)))) {
      byClass[question.class].answered += 1;
      answered += 1;
    } else {
      missed.push(`${question.class}: ${question.about}`);
    }
  }
  const asked = questions.length;
  return { asked, answered, score: asked === 0 ? 1 : answered / asked, byClass, missed };
}

/**
 * The digest part of a context (everything before the raw tail: the node's system message) in tokens,
 * over the tokens of the raw turns that digest stands for (seq 1 up to the tail), each as a raw resume
 * gives it (its content and its state line). Null without a node.
 */
export function compressionOf(
  messages: readonly Pick<ResumeMessage, 'content'>[],
  turns: readonly TurnEvent[],
  rawFromSeq: number,
  hasNode: boolean,
): number | null {
  const raw = coveredTokens(turns, rawFromSeq);
  if (!hasNode || messages.length === 0 || raw === 0) return null;
  return estimateTokens(messages[0]!.content) / raw;
}

/** The tokens of the raw turns before `rawFromSeq`, as a raw resume gives them. */
export function coveredTokens(turns: readonly TurnEvent[], rawFromSeq: number): number {
  return turns
    .filter((turn) => turn.seq < rawFromSeq)
    .reduce((sum, turn) => sum + estimateTokens(rawTurnText(turn)), 0);
}

/** The compression a digest is held to, and how many raw tokens it must stand for to be held to it. */
export const compressionTarget = 0.25;

/**
 * Whether a digest covers too little to be held to the target: under 1 ÷ target times the node's
 * narrative budget, its narrative alone may reach the target by using the budget it is given.
 */
export function tooShortForTarget(rawTokens: number, narrativeBudget: number): boolean {
  return rawTokens < narrativeBudget / compressionTarget;
}

/** The probe and the compression of one session's resume context, with the judgement on its length. */
export interface ProbedResume {
  readonly probe: ProbeResult;
  readonly compression: number | null;
  /** Raw tokens the digest stands for (0 without a node). */
  readonly coveredTokens: number;
  readonly tooShort: boolean;
}

export function probeResume(input: {
  readonly turns: readonly TurnEvent[];
  readonly messages: readonly Pick<ResumeMessage, 'content'>[];
  readonly rawFromSeq: number;
  readonly hasNode: boolean;
  readonly narrativeBudget: number;
}): ProbedResume {
  const covered = input.hasNode ? coveredTokens(input.turns, input.rawFromSeq) : 0;
  return {
    probe: answerProbe(probeQuestions(input.turns), input.messages),
    compression: compressionOf(input.messages, input.turns, input.rawFromSeq, input.hasNode),
    coveredTokens: covered,
    tooShort: input.hasNode && tooShortForTarget(covered, input.narrativeBudget),
  };
}

/** The first sentence of a request (what it asks), or its first 160 characters. */
function firstSentence(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  const end = flat.search(/[.!?](\s|$)/);
  const sentence = end >= 0 ? flat.slice(0, end + 1) : flat;
  return sentence.length <= 160 ? sentence : sentence.slice(0, 160);
}

function normalize(text: string): string {
  return text.toLowerCase().replace(/\s+/g, ' ');
}
