import { decisionIdentity, type SessionJournal } from '@tidemark/cli';
import type { ResumeLibraryClient } from '@tidemark/resume';
import type { Projection } from '@tidemark/state';
import { sessionKey } from '@tidemark/contract';
import {
  boundaryQuery,
  canonicalJson,
  foldTurns,
  foldDecisions,
  resumePlan,
  runReference,
  trustedMarkers,
  type MarkerDecision,
  type Policy,
  type ReferenceRun,
  type TurnEvent,
} from '@tidemark/core';
import { expect } from 'vitest';
import type { RawTap } from './chaos-harness.js';

// What a fault run is compared with: per session, the core reference (the whole pipeline as one pure
// function, a run without faults) at the L0 positions the turns really have, and the marker its resume
// plan starts from. Shared by every fault test, so "settled" means the same thing in each.

export interface Expected {
  readonly tenantId: string;
  readonly sessionId: string;
  readonly turns: readonly TurnEvent[];
  readonly reference: ReferenceRun;
  /** The marker the resume plan starts from (the plan's marker, or the raw checkpoint's). */
  readonly planMarker: string | null;
}

/** The reference of each session of a workload, at the positions the tap saw its turns land. */
export function expectationsOf(
  workload: readonly (readonly TurnEvent[])[],
  tap: RawTap,
  options: { readonly policyOf: (index: number) => Policy; readonly maxRepairs: number },
): Expected[] {
  return workload.map((turns, index) => {
    const { tenantId, sessionId } = turns[0]!;
    const positions = tap.positions.get(sessionKey(tenantId, sessionId))!;
    const reference = runReference(turns, {
      policy: options.policyOf(index),
      maxRepairs: options.maxRepairs,
      compactorVersion: 'tidemark-compactor/1',
      l0Partition: positions.get(1)!.partition,
      offsetOf: (seq) => positions.get(seq)!.offset,
    });
    const plan = resumePlan(reference.state, { tenantId, sessionId, l0Partition: 0 });
    return {
      tenantId,
      sessionId,
      turns,
      reference,
      planMarker: plan.mode === 'digest' ? plan.marker.markerId : plan.checkpoint.markerId,
    };
  });
}

/**
 * The journal holds the reference's records and nothing else: every compaction and every decision,
 * decoded and canonical, no more, no less (decisions do not depend on timing: docs/decisions.md).
 */
export function expectReferenceRecords(journal: SessionJournal, expected: Expected): void {
  const sorted = (records: readonly object[]) => records.map((r) => canonicalJson(r)).sort();
  expect({ session: expected.sessionId, compactions: sorted(journal.compactions) }).toEqual({
    session: expected.sessionId,
    compactions: sorted(expected.reference.compactions),
  });
  expect({ session: expected.sessionId, decisions: sorted(journal.decisions) }).toEqual({
    session: expected.sessionId,
    decisions: sorted(expected.reference.decisions),
  });
}

/**
 * Every session holds exactly its reference: what settle.ts calls "holds", the reference's records byte
 * for byte and nothing else, and no marker decided on missing state.
 */
export function expectOnReference(
  journal: { session(tenantId: string, sessionId: string): SessionJournal },
  expected: readonly Expected[],
): void {
  for (const e of expected) {
    const session = journal.session(e.tenantId, e.sessionId);
    expect({ session: e.sessionId, problems: differences(session, e) }).toEqual({
      session: e.sessionId,
      problems: [],
    });
    // The same bytes as the reference, and nothing beyond it: no compaction or decision a fault made up,
    // changed or left out.
    expectReferenceRecords(session, e);
    const unverifiable = session.decisions.filter(
      (d) => d.type === 'marker_invalid' && d.violations.some((v) => v.condition === 'unverifiable'),
    );
    expect(unverifiable.map(decisionIdentity), 'markers decided on missing state').toEqual([]);
  }
}

/** What settle.ts calls "holds": every reference compaction, a decision per marker, the same trusted set. */
export function differences(journal: SessionJournal, expected: Expected): string[] {
  const { reference } = expected;
  const compactions = new Set(journal.compactions.map((c) => c.compactionId));
  const decided = new Set(journal.decisions.map((d) => d.markerId));
  const referenceMarkers = new Set(reference.decisions.map((d) => d.markerId));
  const trusted = (decisions: readonly MarkerDecision[]) =>
    trustedMarkers(foldDecisions(decisions))
      .map((d) => d.markerId)
      .filter((id) => referenceMarkers.has(id))
      .sort();
  const problems: string[] = [];
  const missing = reference.compactions.filter((c) => !compactions.has(c.compactionId));
  if (missing.length > 0)
    problems.push(`missing compactions ${missing.map((c) => c.compactionId).join(' ')}`);
  const undecided = [...referenceMarkers].filter((id) => !decided.has(id));
  if (undecided.length > 0) problems.push(`undecided markers ${undecided.join(' ')}`);
  const want = trusted(reference.decisions).join(' ');
  const have = trusted(journal.decisions).join(' ');
  if (want !== have) problems.push(`trusted markers [${have}], the reference trusts [${want}]`);
  return problems;
}

/**
 * Waits until every session holds what its reference does and resumes from the reference's marker over
 * all its turns, or the timeout passes, or `abort` says to stop (a service died). Returns the sessions
 * that did not settle.
 */
export async function untilSettled(
  expected: readonly Expected[],
  journal: { session(tenantId: string, sessionId: string): SessionJournal },
  client: ResumeLibraryClient,
  options: { readonly timeoutMs: number; readonly abort?: () => boolean },
): Promise<Expected[]> {
  const settled = async (e: Expected): Promise<boolean> => {
    if (differences(journal.session(e.tenantId, e.sessionId), e).length > 0) return false;
    const outcome = await client.resume(e.tenantId, e.sessionId);
    return (
      outcome.ok && outcome.result.markerId === e.planMarker && outcome.result.rawToSeq === e.turns.length
    );
  };
  const deadline = Date.now() + options.timeoutMs;
  let pending = [...expected];
  while (pending.length > 0 && Date.now() < deadline && options.abort?.() !== true) {
    const states = await Promise.all(pending.map(settled));
    pending = pending.filter((_, i) => !states[i]);
    if (pending.length > 0) await sleep(500);
  }
  return pending;
}

/**
 * No turn lost from (or applied twice to) the projection: every session applied to its last turn,
 * nothing broken, and the state at every reference boundary the fold's.
 */
export async function expectProjectionIsTheFold(
  projection: Pick<Projection, 'watermark' | 'stateAt'>,
  expected: readonly Expected[],
): Promise<void> {
  for (const e of expected) {
    const watermark = await projection.watermark(e.tenantId, e.sessionId);
    expect({ session: e.sessionId, appliedSeq: watermark.appliedSeq, broken: watermark.broken }).toEqual({
      session: e.sessionId,
      appliedSeq: e.turns.length,
      broken: null,
    });
    const { fold } = foldTurns(e.tenantId, e.sessionId, e.turns);
    for (const c of e.reference.compactions) {
      const query = boundaryQuery(c);
      expect(await projection.stateAt(query)).toEqual(fold.stateAt(query));
    }
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export async function until(predicate: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) return false;
    await sleep(100);
  }
  return true;
}
