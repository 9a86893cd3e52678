import {
  foldDecisions,
  resumePlan,
  runReference,
  trustedMarkers,
  type MarkerDecision,
  type Policy,
  type ReferenceRun,
  type TurnEvent,
} from '@tidemark/core';
import type { ResumeOutcome } from '@tidemark/resume';
import type { Journal, SessionJournal } from './journal.js';
import type { Pipeline } from './pipeline.js';

// Waiting for a session to settle: the core reference computes what the whole pipeline must produce for
// a session (every compaction and every decision, byte for byte the same ids), so "settled" is exact —
// the journal holds all of it and the resume worker's plan starts where the reference's does — and a
// pipeline that produced something else is reported as not matching rather than waited on forever.

export interface SessionRun {
  readonly tenantId: string;
  readonly sessionId: string;
  readonly turns: readonly TurnEvent[];
  readonly policy: Policy;
  readonly generation?: number;
  readonly maxRepairs?: number;
}

export interface Settled {
  readonly journal: SessionJournal;
  readonly reference: ReferenceRun;
  readonly resume: ResumeOutcome;
  /** A second, independent resume: it must give the same contextHash. */
  readonly resumeAgain: ResumeOutcome;
  readonly matchesReference: boolean;
}

export const decisionIdentity = (d: MarkerDecision): string =>
  `${d.markerId}:${d.type}:${d.type === 'marker_invalid' ? d.cause : ''}`;

export function referenceOf(run: SessionRun): ReferenceRun {
  return runReference(run.turns, {
    policy: run.policy,
    generation: run.generation ?? 1,
    ...(run.maxRepairs === undefined ? {} : { maxRepairs: run.maxRepairs }),
  });
}

/**
 * The journal holds what the references produce: every compaction (same ids), a decision for every
 * marker, and the same markers trusted in the end (folded by core's session decider).
 */
function holds(journal: SessionJournal, references: readonly ReferenceRun[]): boolean {
  const compactions = new Set(journal.compactions.map((c) => c.compactionId));
  const decided = new Set(journal.decisions.map((d) => d.markerId));
  const last = references[references.length - 1]!;
  const lastMarkers = new Set(last.decisions.map((d) => d.markerId));
  const trusted = (decisions: readonly MarkerDecision[]) =>
    new Set(
      trustedMarkers(foldDecisions(decisions))
        .map((d) => d.markerId)
        .filter((id) => lastMarkers.has(id)),
    );
  const want = trusted(last.decisions);
  const have = trusted(journal.decisions);
  return (
    references.every(
      (reference) =>
        reference.compactions.every((c) => compactions.has(c.compactionId)) &&
        reference.decisions.every((d) => decided.has(d.markerId)),
    ) &&
    want.size === have.size &&
    [...want].every((id) => have.has(id))
  );
}

/**
 * Waits until the journal holds everything the references (one per generation run, oldest first)
 * produce for the session, then until the resume plan starts from the reference's marker.
 */
export async function settle(
  journal: Journal,
  pipeline: Pipeline,
  runs: readonly SessionRun[],
  timeoutMs: number,
): Promise<Settled> {
  const first = runs[0];
  if (first === undefined) throw new RangeError('settle needs at least one run');
  const { tenantId, sessionId } = first;
  const references = runs.map(referenceOf);
  const last = references[references.length - 1]!;
  const matches = await journal.until(
    () => holds(journal.session(tenantId, sessionId), references),
    timeoutMs,
  );

  const plan = resumePlan(foldDecisions(references.flatMap((r) => r.decisions)), {
    tenantId,
    sessionId,
    l0Partition: 0,
  });
  const wanted = plan.mode === 'digest' ? plan.marker.markerId : plan.checkpoint.markerId;
  const deadline = Date.now() + timeoutMs;
  let resume = await pipeline.resume.client.resume(tenantId, sessionId);
  while ((!resume.ok || resume.result.markerId !== wanted) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    resume = await pipeline.resume.client.resume(tenantId, sessionId);
  }
  const resumeAgain = await pipeline.resume.client.resume(tenantId, sessionId);
  return {
    journal: journal.session(tenantId, sessionId),
    reference: last,
    resume,
    resumeAgain,
    matchesReference: matches && resume.ok && resume.result.markerId === wanted,
  };
}
