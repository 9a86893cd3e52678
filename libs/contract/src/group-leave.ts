import type { Logger } from 'pino';

// Leaving a consumer group as another member: the one a crash abandoned, or the one a killed
// predecessor of this instance left behind. Either way the coordinator would otherwise hold the
// rebalance until that member's session times out (CONSUMER_SESSION_TIMEOUT_MS, 30 s by default), and
// nothing would be consumed meanwhile.

/** What leaving needs of the Bus: a LeaveGroup on another member's behalf, and its logger. */
export interface GroupLeaver {
  readonly logger: Logger | undefined;
  leaveGroupAs(groupId: string, memberId: string): Promise<void>;
}

/** A stable instance's last group member id (see ConsumeOptions.membership). */
export interface MemberLedger {
  previous(): Promise<string | null>;
  record(memberId: string): Promise<void>;
}

/** How long a restarted instance tries to leave as its previous member before joining anyway. */
const leavePreviousMs = 5_000;

/** How long a crashed member's leave is retried while the broker is away. */
const releaseGiveUpMs = 10 * 60_000;

const unknownMember = (error: unknown): boolean =>
  (error as { type?: string } | null)?.type === 'UNKNOWN_MEMBER_ID';

/**
 * Leaves the group as the member a previous run of this instance joined as, if the ledger has one and
 * the group still does (UNKNOWN_MEMBER_ID: it left, or its session ended). Best effort and bounded:
 * joining goes ahead whatever happens here, at worst waiting out the old member's session as before.
 */
export async function leavePreviousMember(
  bus: GroupLeaver,
  groupId: string,
  ledger: MemberLedger,
): Promise<void> {
  try {
    const previous = await withDeadline(ledger.previous(), leavePreviousMs);
    if (previous === null) return;
    await withDeadline(bus.leaveGroupAs(groupId, previous), leavePreviousMs);
    bus.logger?.info(
      { groupId, memberId: previous },
      "left the group as this instance's previous member: the group rebalances without waiting out its session",
    );
  } catch (error) {
    if (unknownMember(error)) return;
    bus.logger?.debug({ err: error, groupId }, "leaving as this instance's previous member failed");
  }
}

/**
 * Leaves the group as the member a crash abandoned. kafkajs leaves on a crash, but not when the crash
 * was the broker's absence (the LeaveGroup cannot reach it), and it rejoins as a new member. So the old
 * member leaves as soon as the coordinator answers again, however long the broker was away: a restarted
 * broker starts every old member's session anew when it loads the group, so the session's own expiry is
 * no bound. It stops once the leave is answered (or the member is unknown: gone already), once `done()`
 * (the consumer joined again, or stops), or after an outage far longer than any session.
 */
export async function releaseCrashedMember(
  bus: GroupLeaver,
  groupId: string,
  memberId: string,
  done: () => boolean,
): Promise<void> {
  const started = Date.now();
  while (!done() && Date.now() - started < releaseGiveUpMs) {
    try {
      await bus.leaveGroupAs(groupId, memberId);
      bus.logger?.info(
        { groupId, memberId, ms: Date.now() - started },
        'left the group as the crashed member: the group rebalances without waiting out its session',
      );
      return;
    } catch (error) {
      if (unknownMember(error)) return;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

/** The promise's outcome, or a rejection once `ms` have passed. */
function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}
