import type { Admin, ITopicConfig } from 'kafkajs';
import {
  sessionKey,
  type Compaction,
  type DeadLetter,
  type MarkerDecision,
  type MarkerRevocation,
  type RegressionDetected,
  type TurnEvent,
} from '@tidemark/core';

// Topics, keys and which records each topic carries: the one place that holds them.

export type TopicRole = 'turns' | 'compactions' | 'markers' | 'revocations' | 'regressions' | 'deadletter';
export type TopicNames = Readonly<Record<TopicRole, string>>;

/** Every role, in pipeline order. */
export const topicRoles: readonly TopicRole[] = [
  'turns',
  'compactions',
  'markers',
  'revocations',
  'regressions',
  'deadletter',
];

/**
 * The service that dead-letters a topic's bad records: its first reader (the materializer owns L0's
 * validation). Every other reader counts and skips them, so a bad record is dead-lettered exactly once.
 */
export const deadLetterOwners: Readonly<Record<TopicRole, string | null>> = {
  turns: 'materializer',
  compactions: 'validator',
  markers: 'resume',
  revocations: 'validator',
  // Read by people and tools (tidemark inspect, the MCP server), not by a service.
  regressions: null,
  deadletter: null,
};

/** The events each role's topic carries, as the core types them. */
export interface EventsByRole {
  turns: TurnEvent;
  compactions: Compaction;
  markers: MarkerDecision;
  revocations: MarkerRevocation;
  regressions: RegressionDetected;
  deadletter: DeadLetter;
}

/** The Avro record names (in namespace tidemark.v1) that may appear on each role's topic. */
export type RecordName =
  | 'TurnEvent'
  | 'Compaction'
  | 'MarkerEmitted'
  | 'MarkerInvalid'
  | 'MarkerRevocation'
  | 'RegressionDetected'
  | 'DeadLetter';

export const recordsByRole: Readonly<Record<TopicRole, readonly RecordName[]>> = {
  turns: ['TurnEvent'],
  compactions: ['Compaction'],
  markers: ['MarkerEmitted', 'MarkerInvalid'],
  revocations: ['MarkerRevocation'],
  regressions: ['RegressionDetected'],
  deadletter: ['DeadLetter'],
};

export const baseTopicNames: TopicNames = {
  turns: 'turns.l0',
  compactions: 'compactions',
  markers: 'markers',
  revocations: 'marker-revocations',
  regressions: 'regressions',
  deadletter: 'deadletter',
};

/** The topic names under a prefix; every service takes TOPIC_PREFIX (default '') so tests isolate by it. */
export function topicNames(prefix = ''): TopicNames {
  return {
    turns: `${prefix}${baseTopicNames.turns}`,
    compactions: `${prefix}${baseTopicNames.compactions}`,
    markers: `${prefix}${baseTopicNames.markers}`,
    revocations: `${prefix}${baseTopicNames.revocations}`,
    regressions: `${prefix}${baseTopicNames.regressions}`,
    deadletter: `${prefix}${baseTopicNames.deadletter}`,
  };
}

/** The key of every record of a session, on every topic: one session's events stay in one partition. */
export { sessionKey };

/**
 * The registry subject of a record on a topic (TopicRecordNameStrategy), so that one topic can carry
 * several record types (markers) and each evolves on its own.
 */
export function subjectOf(topic: string, record: RecordName): string {
  return `${topic}-tidemark.v1.${record}`;
}

export const defaultPartitions = 4;

// Event topics keep everything: turns.l0 is the source of truth and is replayed from the start, and
// compactions and markers are replayed with it; revocations are the operators' audit trail, regressions
// the resumed agents'. Dead letters
// are diagnostics, kept for 30 days.
const keepForever = { 'retention.ms': '-1', 'cleanup.policy': 'delete' } as const;
const thirtyDays = String(30 * 24 * 60 * 60 * 1000);

/** The settings of a role's topic. */
export function topicSettings(
  role: TopicRole,
  partitions: number = defaultPartitions,
): Omit<ITopicConfig, 'topic'> {
  switch (role) {
    case 'turns':
    case 'compactions':
    case 'markers':
    case 'revocations':
    case 'regressions':
      return { numPartitions: partitions, replicationFactor: -1, configEntries: entries(keepForever) };
    case 'deadletter':
      return {
        numPartitions: 1,
        replicationFactor: -1,
        configEntries: entries({ 'retention.ms': thirtyDays, 'cleanup.policy': 'delete' }),
      };
    default: {
      const never: never = role;
      throw new Error(`unknown role ${String(never)}`);
    }
  }
}

function entries(config: Readonly<Record<string, string>>): { name: string; value: string }[] {
  return Object.entries(config).map(([name, value]) => ({ name, value }));
}

/**
 * Creates every missing topic with its settings and waits until each partition of every topic has a
 * leader. Idempotent: topics that exist are left as they are, and concurrent callers do not fail.
 */
export async function provisionTopics(
  admin: Admin,
  topics: TopicNames,
  options: { partitions?: number; timeoutMs?: number } = {},
): Promise<void> {
  const partitions = options.partitions ?? defaultPartitions;
  if (!Number.isInteger(partitions) || partitions < 1) {
    throw new RangeError(`partitions must be a positive integer, not ${partitions}`);
  }
  const existing = new Set(await admin.listTopics());
  const missing = topicRoles
    .filter((role) => !existing.has(topics[role]))
    .map((role) => ({ topic: topics[role], ...topicSettings(role, partitions) }));
  if (missing.length > 0) {
    try {
      // false (not an error) when another caller created them first. Not kafkajs's own wait for leaders:
      // on a fresh broker it fails on a topic not in the metadata yet (UNKNOWN_TOPIC_OR_PARTITION, "This
      // server does not host this topic-partition") instead of waiting; waitForLeaders below waits.
      await admin.createTopics({ topics: missing, waitForLeaders: false });
    } catch (error) {
      if (!isAlreadyExists(error)) throw error;
    }
  }
  await waitForLeaders(
    admin,
    topicRoles.map((role) => topics[role]),
    options.timeoutMs ?? 30_000,
  );
}

function isAlreadyExists(error: unknown): boolean {
  const errors = (error as { errors?: { type?: string }[] } | null)?.errors;
  return Array.isArray(errors) && errors.length > 0 && errors.every((e) => e.type === 'TOPIC_ALREADY_EXISTS');
}

async function waitForLeaders(admin: Admin, topics: readonly string[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let delay = 50; ; delay = Math.min(delay * 2, 1_000)) {
    try {
      const { topics: metadata } = await admin.fetchTopicMetadata({ topics: [...topics] });
      const leaderless = metadata.filter(
        (t) => t.partitions.length === 0 || t.partitions.some((p) => p.leader < 0),
      );
      if (leaderless.length === 0) {
        // A leader in the metadata is not yet a leader that serves: on a fresh broker, ListOffsets can
        // still answer NOT_LEADER_OR_FOLLOWER for a moment, and every consumer's first step needs it.
        await Promise.all(topics.map((topic) => admin.fetchTopicOffsets(topic)));
        return;
      }
    } catch (error) {
      // A topic just created may not be in the metadata yet (UNKNOWN_TOPIC_OR_PARTITION), or its leader
      // not serve yet (NOT_LEADER_OR_FOLLOWER): wait for it.
      if (Date.now() > deadline) throw error;
    }
    if (Date.now() > deadline) {
      throw new Error(`topics ${topics.join(', ')} have no leader after ${timeoutMs} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
}
