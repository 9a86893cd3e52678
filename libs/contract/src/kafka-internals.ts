import type { Kafka } from 'kafkajs';

// The two things Tidemark needs that kafkajs has no public API for, both reached through the client's
// private cluster factory: Fetch requests straight to a partition leader (the resume service's raw-turn
// reader, no consumer group), and a LeaveGroup on behalf of a member that crashed (the bus). kafkajs is
// frozen at 2.2.4 (pinned in the catalog), so these internals cannot move under us; this file is the only
// place that knows how to reach them.

/** The part of kafkajs's internal Cluster the bus uses; a caller names the part it uses the same way. */
export interface InternalCluster {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  findGroupCoordinator(request: {
    groupId: string;
  }): Promise<{ leaveGroup(request: { groupId: string; memberId: string }): Promise<unknown> }>;
}

/** A new cluster (its own connection pool) of a kafkajs client, not yet connected. */
export function internalCluster<C = InternalCluster>(kafka: Kafka, options: object = {}): C {
  const factory = Object.getOwnPropertySymbols(kafka).find(
    (symbol) => symbol.description === 'private:Kafka:createCluster',
  );
  if (factory === undefined) throw new Error('kafkajs changed: no cluster factory (is kafkajs still 2.2.4?)');
  const create = (kafka as unknown as Record<symbol, (options: object) => C>)[factory]!;
  return create({ allowAutoTopicCreation: false, ...options });
}
