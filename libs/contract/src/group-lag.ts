import type { Admin } from 'kafkajs';

/**
 * Records of a topic a consumer group has not committed: end offsets minus committed offsets, over
 * every partition. A partition the group never committed counts from the start when the group reads
 * from the beginning, else from the end (nothing is ahead of it).
 */
export async function groupLag(
  admin: Admin,
  groupId: string,
  topic: string,
  fromBeginning = true,
): Promise<number> {
  const [ends, committed] = await Promise.all([
    admin.fetchTopicOffsets(topic),
    admin.fetchOffsets({ groupId, topics: [topic] }),
  ]);
  const done = new Map<number, number>();
  for (const t of committed) for (const p of t.partitions) done.set(p.partition, Number(p.offset));
  let lag = 0;
  for (const p of ends) {
    const high = Number(p.high);
    const at = done.get(p.partition) ?? -1;
    const from = at >= 0 ? at : fromBeginning ? Number(p.low) : high;
    lag += Math.max(0, high - from);
  }
  return lag;
}
