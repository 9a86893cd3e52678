import { TidemarkError, type MarkerDecision } from '@tidemark/core';
import {
  sessionKeyOf,
  type FrameLoad,
  type FrameStore,
  type FrameWrite,
  type LoadedSession,
  type SessionRef,
} from '@tidemark/state';
import type { Logger } from '@tidemark/service';
import type { ValidatorMetrics } from './metrics.js';

// The two ends of every decision the validator makes, a compaction's or a revocation's: load the frames
// of a batch's sessions (rebuilding a lost store, restoring expired sessions first), and commit the
// decisions write-ahead — record them with the new frames, publish them in one send, confirm them
// published (sent, not waited for). A crash before the record decides again from the same frames;
// after it, a redelivery re-publishes the recorded bytes; after the confirmation it publishes nothing.

export interface WriteAheadDeps {
  readonly frames: Pick<FrameStore, 'load' | 'record' | 'confirm'>;
  /** Publishes decisions in order, durably (resolves once acknowledged). */
  readonly publish: (decisions: readonly MarkerDecision[]) => Promise<void>;
  /** Rebuilds the frame store from the markers topic (the store has no epoch). */
  readonly rebuild: () => Promise<void>;
  /**
   * Rebuilds the frames of sessions that expired (idle past the retention) from the markers topic.
   * Absent: frames never expire (a store without retention).
   */
  readonly restoreExpired?: (epoch: string, sessions: readonly SessionRef[]) => Promise<void>;
  readonly metrics: ValidatorMetrics;
  readonly logger: Logger;
}

/** The batch's frames could not be written as decided (a rebalance, a lost store): it is redelivered. */
export class RetriableBatchError extends TidemarkError<'frame_write_refused'> {
  override readonly name: string = 'RetriableBatchError';
  constructor(message: string) {
    super('frame_write_refused', message, { retriable: true });
  }
}

/** The frames of the sessions (and what the store knows of the named decisions), ready to decide on. */
export async function loadFrames(
  deps: WriteAheadDeps,
  loads: readonly FrameLoad[],
): Promise<{ readonly epoch: string; readonly sessions: ReadonlyMap<string, LoadedSession> }> {
  let loaded = await deps.frames.load(loads);
  if (!loaded.ok) {
    await deps.rebuild();
    loaded = await deps.frames.load(loads);
    if (!loaded.ok) {
      // Told here (the consumer reports RetriableBatchError at debug): Redis lost the store again.
      deps.logger.warn('the frame store has no epoch after a rebuild: the batch will be redelivered');
      throw new RetriableBatchError('the frame store has no epoch after a rebuild');
    }
  }
  const firstLoad = loaded.sessions;
  const expired = loads.filter((ref) => firstLoad.get(sessionKeyOf(ref))!.expired);
  if (expired.length > 0) {
    // Never decided on a frame that is not there: restored first, then read like any other.
    if (deps.restoreExpired === undefined)
      throw new RetriableBatchError('expired frames and no way to restore them');
    await deps.restoreExpired(loaded.epoch, expired);
    deps.metrics.restored(expired.length);
    loaded = await deps.frames.load(loads);
    if (!loaded.ok) throw new RetriableBatchError('the frame store has no epoch');
    if ([...loaded.sessions.values()].some((session) => session.expired)) {
      throw new RetriableBatchError('an expired frame could not be restored');
    }
  }
  return { epoch: loaded.epoch, sessions: loaded.sessions };
}

/**
 * Records the decisions with the sessions' new frames, publishes them in one send, and sends their
 * confirmation (not waited for); a refused record (another validator moved a session, or Redis lost
 * the store) publishes nothing and throws for a redelivery.
 */
export async function commitDecisions(
  deps: WriteAheadDeps,
  epoch: string,
  writes: readonly FrameWrite[],
  output: readonly MarkerDecision[],
  confirmations: readonly FrameLoad[],
): Promise<void> {
  if (writes.length > 0) {
    const recorded = await deps.frames.record(epoch, writes);
    if (!recorded.ok) {
      // Another validator moved these sessions (a rebalance) or Redis lost the store: nothing was
      // published; the redelivery decides from what the store says then.
      deps.logger.warn({ reason: recorded.reason, sessions: recorded.sessions }, 'frame write refused');
      throw new RetriableBatchError(`frame store refused the batch's writes: ${recorded.reason}`);
    }
  }
  if (output.length > 0) {
    await deps.publish(output);
    for (const decision of output) deps.metrics.decided(decision);
  }
  // Not waited for: until the confirmation lands, the decisions are recorded and unconfirmed, the state a
  // crash right after the publish leaves, in which a redelivery re-sends the same bytes (consumers dedupe
  // by markerId). So it is one round trip off every batch's path. Sent now, it goes before the next
  // batch's reads on the same connection (and a stop's QUIT waits for it).
  void deps.frames.confirm(epoch, confirmations).then(
    (unconfirmed) => {
      // Published but not marked: the store was lost meanwhile. The rebuild reads them back from the topic.
      if (unconfirmed.length > 0)
        deps.logger.warn({ sessions: unconfirmed }, 'published decisions could not be confirmed');
    },
    (error: unknown) =>
      deps.logger.warn(
        { err: error },
        'confirming published decisions failed: a redelivery would re-send them, the same bytes',
      ),
  );
}
