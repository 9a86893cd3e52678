// @tidemark/contract: the event contract every service uses — topics, keys, registry subjects, the Avro
// codec, and the Kafka bus (an idempotent producer, batch consumers that dead-letter what they cannot use).

export {
  baseTopicNames,
  defaultPartitions,
  provisionTopics,
  recordsByRole,
  sessionKey,
  subjectOf,
  topicNames,
  topicRoles,
  topicSettings,
  type EventsByRole,
  type RecordName,
  type TopicNames,
  type TopicRole,
} from './topics.js';
export { ContractError, type ContractErrorCode } from './errors.js';
export {
  allowedOn,
  avroOptions,
  decodeBody,
  encodeBody,
  frame,
  localType,
  rawSchemaOf,
  recordNames,
  recordOf,
  typeOf,
  unframe,
  type Unframed,
} from './codec.js';
export {
  validateEvent,
  validateCompaction,
  validateMarker,
  validateDeadLetter,
  type EventValidation,
} from './validate.js';
export {
  decodeRecord,
  type DecodedRecord,
  type DecodeFailureReason,
  type DecodeOutcome,
  type RawRecord,
} from './decode.js';
export { Registry, type WriterLookup } from './registry.js';
export { Bus, type BusOptions } from './bus.js';
export { type BatchContext, type ConsumeOptions, type EventConsumer } from './consumer.js';
export { deadLetterOf, defaultMaxEventBytes, type EventProducer } from './producer.js';
export { markReported } from './outages.js';
export {
  createPublisher,
  defaultPublishTimeoutMs,
  type PublishableTurn,
  type Publisher,
  type PublisherOptions,
} from './publisher.js';
export { internalCluster } from './kafka-internals.js';
export { restartGroupsFromEarliest, type DeleteGroupsOptions } from './groups.js';
