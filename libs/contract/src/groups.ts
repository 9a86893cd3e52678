import type { Admin } from 'kafkajs';

/** Kafka's error code for a group that does not exist: such a group needs no deleting. */
const GROUP_ID_NOT_FOUND = 69;

export interface DeleteGroupsOptions {
  /** How long to keep trying while a group still has members (default 10 s). */
  readonly deadlineMs?: number;
  /** Gives up early (a stop). */
  readonly stopped?: () => boolean;
  /** Told of each failed try before the next one. */
  readonly onRetry?: (error: unknown, attempt: number) => void;
}

/**
 * Points consumer groups back at the start of their topics by deleting them: their committed offsets go
 * with them, and a consumer of a group without offsets reads from the beginning. kafkajs' resetOffsets
 * would do the same through a throwaway consumer that waits out a whole fetch (≈5 s). A group with
 * members cannot be deleted; the caller has stopped its own consumers, but the coordinator (or another
 * instance) may take a moment, so this tries again until the deadline, then throws. A group that never
 * existed is already at the start.
 */
export async function restartGroupsFromEarliest(
  admin: Admin,
  groupIds: readonly string[],
  options: DeleteGroupsOptions = {},
): Promise<void> {
  const deadline = Date.now() + (options.deadlineMs ?? 10_000);
  for (let attempt = 1; ; attempt++) {
    try {
      await admin.deleteGroups([...groupIds]);
      return;
    } catch (error) {
      const groups = (error as { groups?: { errorCode?: number }[] }).groups ?? [];
      if (groups.length > 0 && groups.every((g) => g.errorCode === GROUP_ID_NOT_FOUND || g.errorCode === 0)) {
        return;
      }
      if (Date.now() > deadline || options.stopped?.() === true) throw error;
      options.onRetry?.(error, attempt);
      await new Promise((resolve) => setTimeout(resolve, Math.min(250 * attempt, 2_000)));
    }
  }
}
