import { createRequire } from 'node:module';
import type { Kafka } from 'kafkajs';

// The two things Tidemark needs that kafkajs has no public API for, both reached through the client's
// private cluster factory: Fetch requests straight to a partition leader (the resume service's raw-turn
// reader, no consumer group), and a LeaveGroup on behalf of a member that crashed (the bus). And one
// repair of a kafkajs bug (clearReceiveBufferOnConnect). kafkajs is frozen at 2.2.4 (pinned in the
// catalog), so these internals cannot move under us; this file is the only place that knows them.

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

/** The part of kafkajs's internal Connection the repair below touches (src/network/connection.js). */
interface ConnectionInternals {
  chunks: Buffer[];
  bytesBuffered: number;
  bytesNeeded: number;
  isConnected: (this: ConnectionInternals) => boolean;
  connect: (this: ConnectionInternals) => Promise<boolean>;
}

let receiveBufferCleared = false;

/**
 * kafkajs 2.2.4 keeps a connection's receive buffer across reconnects (each broker's connections are
 * reused). When a link is reset in the middle of a response, the first bytes of that response stay
 * buffered; every response on the new socket is read after them, misframed, and the connection never
 * answers again: each request times out (or processData throws a RangeError) until the client is torn
 * down. A consumer so wedged stops consuming for minutes with nothing but request timeouts in its log.
 * Here a connection starts every new socket with an empty buffer. Once per process, for every client.
 */
export function clearReceiveBufferOnConnect(): void {
  if (receiveBufferCleared) return;
  const require = createRequire(import.meta.url);
  const Connection = require('kafkajs/src/network/connection.js') as {
    prototype: ConnectionInternals;
  };
  const connect = Connection.prototype.connect;
  if (typeof connect !== 'function' || typeof Connection.prototype.isConnected !== 'function') {
    throw new Error('kafkajs changed: no Connection.connect (is kafkajs still 2.2.4?)');
  }
  Connection.prototype.connect = function (this: ConnectionInternals): Promise<boolean> {
    if (!this.isConnected()) {
      // As the constructor leaves them: nothing buffered, the next 4 bytes are a response's size.
      this.chunks = [];
      this.bytesBuffered = 0;
      this.bytesNeeded = 4;
    }
    return connect.call(this);
  };
  receiveBufferCleared = true;
}
