import { onTestFinished } from 'vitest';
import { Bus, provisionTopics, topicNames, type BusOptions, type TopicNames } from '@tidemark/contract';
import { endpoints, kafkaAdmin, uniqueName } from '@tidemark/test-infra';

// Each test gets its own topics (a unique prefix), its own group ids and its own Bus, all torn down
// when it finishes.

export async function isolatedTopics(partitions = 2): Promise<TopicNames> {
  const topics = topicNames(`${uniqueName('t')}.`);
  const admin = await kafkaAdmin();
  await provisionTopics(admin, topics, { partitions });
  onTestFinished(async () => {
    await admin.deleteTopics({ topics: Object.values(topics), timeout: 10_000 }).catch(() => undefined);
  });
  return topics;
}

export async function connectBus(topics: TopicNames, options: Partial<BusOptions> = {}): Promise<Bus> {
  const bus = await Bus.connect({
    brokers: endpoints().kafkaBrokers,
    registryUrl: endpoints().schemaRegistryUrl,
    clientId: uniqueName('contract-test'),
    topics,
    service: 'contract-test',
    ...options,
  });
  onTestFinished(() => bus.disconnect());
  return bus;
}

/** Polls until the condition holds (or fails after the timeout, with what it last saw). */
export async function eventually<T>(
  probe: () => T | Promise<T>,
  until: (value: T) => boolean,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (until(value)) return value;
    if (Date.now() > deadline) {
      throw new Error(`condition not met within ${timeoutMs} ms; last value: ${JSON.stringify(value)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
