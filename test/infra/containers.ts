import { GenericContainer, Network, Wait, type StartedTestContainer } from 'testcontainers';
import type { Endpoints } from './endpoints.js';

// Used only where a Docker engine answers (not on the project's own machines, which have none):
// the same three components as infra/, in containers.
export async function startContainers(): Promise<{ endpoints: Endpoints; stop: () => Promise<void> }> {
  const network = await new Network().start();
  const started: StartedTestContainer[] = [];
  try {
    const redis = await new GenericContainer('redis:7.0')
      .withExposedPorts(6379)
      .withWaitStrategy(Wait.forLogMessage('Ready to accept connections'))
      .start();
    started.push(redis);

    // Kafka advertises the host's mapped port, which is known only after start: fix it up front.
    const kafkaHostPort = 29092 + Math.floor(Math.random() * 1000);
    const kafka = await new GenericContainer('apache/kafka:4.1.1')
      .withNetwork(network)
      .withNetworkAliases('kafka')
      .withExposedPorts({ container: 9092, host: kafkaHostPort })
      .withEnvironment({
        KAFKA_NODE_ID: '1',
        KAFKA_PROCESS_ROLES: 'broker,controller',
        KAFKA_CONTROLLER_QUORUM_VOTERS: '1@localhost:9093',
        KAFKA_LISTENERS: 'PLAINTEXT://0.0.0.0:9092,CONTROLLER://0.0.0.0:9093,INTERNAL://0.0.0.0:19092',
        KAFKA_ADVERTISED_LISTENERS: `PLAINTEXT://127.0.0.1:${kafkaHostPort},INTERNAL://kafka:19092`,
        KAFKA_LISTENER_SECURITY_PROTOCOL_MAP: 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT',
        KAFKA_CONTROLLER_LISTENER_NAMES: 'CONTROLLER',
        KAFKA_INTER_BROKER_LISTENER_NAME: 'INTERNAL',
        KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: '1',
        KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: '1',
        KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: '1',
        KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: '0',
        KAFKA_AUTO_CREATE_TOPICS_ENABLE: 'false',
      })
      .withWaitStrategy(Wait.forLogMessage('Kafka Server started'))
      .start();
    started.push(kafka);

    const registry = await new GenericContainer('apicurio/apicurio-registry:3.3.3')
      .withNetwork(network)
      .withExposedPorts(8080)
      .withEnvironment({
        APICURIO_STORAGE_KIND: 'kafkasql',
        APICURIO_KAFKASQL_BOOTSTRAP_SERVERS: 'kafka:19092',
        APICURIO_RULES_GLOBAL_COMPATIBILITY: 'BACKWARD',
        APICURIO_CCOMPAT_USE_CANONICAL_HASH: 'true',
      })
      .withWaitStrategy(Wait.forHttp('/apis/ccompat/v7/subjects', 8080).forStatusCode(200))
      .withStartupTimeout(180_000)
      .start();
    started.push(registry);

    return {
      endpoints: {
        kafkaBrokers: [`127.0.0.1:${kafkaHostPort}`],
        schemaRegistryUrl: `http://${registry.getHost()}:${registry.getMappedPort(8080)}/apis/ccompat/v7`,
        redisUrl: `redis://${redis.getHost()}:${redis.getMappedPort(6379)}`,
        source: 'testcontainers',
      },
      stop: async () => {
        for (const c of started.reverse()) await c.stop();
        await network.stop();
      },
    };
  } catch (error) {
    for (const c of started.reverse()) await c.stop().catch(() => undefined);
    await network.stop().catch(() => undefined);
    throw error;
  }
}
