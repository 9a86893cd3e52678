// Generated from schemas/*.avsc by `pnpm exec tsx schemas/codegen.ts`. Do not edit: change the schemas and regenerate.
// Wire shapes as the codec decodes them: longs as numbers, bytes as Uint8Array, nullable fields as
// T | null, unions of variant records as unions discriminated on `type`.

/**
 * A resumed agent started a step again that the session had ruled out before the compaction
 * boundary its resume summarised: a call or item with the same kind, name and canonical arguments
 * as one that failed or was rejected, or a constraint opened again after it was superseded.
 * Published by the materializer to the regressions topic, keyed by tenantId/sessionId; its id is
 * content-derived, so a redelivery is the same event. It carries no wall-clock time.
 */
export interface RegressionDetected {
  /**
   * Content-derived: sha256 of the session, the new step (seq, item id) and the earlier step's seq
   * (core regressionIdOf).
   */
  readonly regressionId: string;
  /** The tenant that owns the session. */
  readonly tenantId: string;
  /** The session. */
  readonly sessionId: string;
  /** The turn that started the step again. */
  readonly seq: number;
  /** The item that turn opened. */
  readonly itemId: string;
  /** The step's name (the tool, the constraint). */
  readonly name: string;
  /** The step's arguments as the earlier step had them. */
  readonly detail: string | null;
  /** The turn that ruled the earlier step out. */
  readonly priorSeq: number;
  /** The earlier step's item. */
  readonly priorItemId: string;
  /**
   * failed: closed with an error, or disposed failed; rejected: disposed rejected; superseded: a
   * constraint superseded.
   */
  readonly ruledOut: RuledOut;
  /** The node the resume started from; null for a raw resume from a checkpoint. */
  readonly nodeId: string | null;
  /** The boundary the resume's summary covered. */
  readonly boundarySeq: number;
  /** The last turn the resume's context held: the step came after it. */
  readonly resumedAtSeq: number;
}

/** How the earlier step was ruled out. */
export type RuledOut = 'rejected' | 'failed' | 'superseded';

/** Every RuledOut, in schema order. */
export const RuledOutSymbols: readonly RuledOut[] = ['rejected', 'failed', 'superseded'];
