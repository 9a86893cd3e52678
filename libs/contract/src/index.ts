// @tidemark/contract: the event contract every service uses — topics, keys, registry subjects, the Avro
// codec, and the Kafka bus (an idempotent producer, batch consumers that dead-letter what they cannot use).

export {
  provisionTopics,
  sessionKey,
  subjectOf,
  topicNames,
  topicSettings,
  type EventsByRole,
  type RecordName,
  type TopicNames,
  type TopicRole,
} from './topics.js';
export { ContractError } from './errors.js';
export { decodeBody, encodeBody, frame, localType, rawSchemaOf, typeOf, unframe } from './codec.js';
export { validateEvent } from './validate.js';
export { decodeRecord, type DecodedRecord, type RawRecord } from './decode.js';
export { Registry } from './registry.js';
export { Bus, type BusOptions } from './bus.js';
export { type EventConsumer } from './consumer.js';
export { groupLag } from './group-lag.js';
export {
  deadLetterOf,
  defaultMaxEventBytes,
  maxRequestBytes,
  requestsOf,
  type EventProducer,
} from './producer.js';
export {
  createPublisher,
  defaultPublishTimeoutMs,
  type Publisher,
  type PublisherOptions,
} from './publisher.js';
export { restartGroupsFromEarliest } from './groups.js';
export { L0Reader, turnDecoder, type L0Span } from './l0-reader.js';
export { SessionHistory } from './session-history.js';
