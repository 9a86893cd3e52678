import { randomUUID } from 'node:crypto';
import { restartGroupsFromEarliest, type Bus } from '@tidemark/contract';
import type { Logger } from '@tidemark/service';
import { withRebuildLock, type PlanStore } from '@tidemark/state';

// Rebuilding the resume store. The plans are derived from the markers and compactions topics, read by
// the worker's two consumer groups. When the store is absent (first start, or Redis lost its data), every
// worker leaves its groups; one of them (the rebuild lock's holder) deletes the groups, so that they
// consume both topics from the beginning again, clears the store and publishes a new epoch; the others
// wait for the epoch and join the fresh groups.

export interface StoreRebuildDeps {
  readonly bus: Bus;
  readonly plans: PlanStore;
  /** The worker's consumer groups: deleted, so that they read both topics from the start again. */
  readonly groupIds: readonly string[];
  readonly logger: Logger;
  readonly lockMs: number;
}

/** One attempt; throws (and is retried by the service's supervisor) while the store still has no epoch. */
export async function rebuildPlanStore(deps: StoreRebuildDeps): Promise<void> {
  const { plans, logger } = deps;
  await withRebuildLock(plans.lifecycle, { owner: randomUUID(), ttlMs: deps.lockMs }, async () => {
    logger.warn('resume store absent: rebuilding plans from the markers and compactions topics');
    // Never an epoch over groups that still hold their offsets: the new store would miss every
    // decision before them.
    await restartGroupsFromEarliest(await deps.bus.admin(), deps.groupIds, { deadlineMs: deps.lockMs / 2 });
    await plans.lifecycle.clear();
    const epoch = await plans.lifecycle.establishEpoch(randomUUID());
    logger.info({ epoch }, 'resume store epoch established');
  });
  if ((await plans.epoch()) === null) throw new Error('the resume store has no epoch yet');
}
