import { Journal } from '@tidemark/cli';
import { createPublisher, sessionKey } from '@tidemark/contract';
import { hashToken, createResumeClient, type ResumeLibraryClient } from '@tidemark/resume';
import { generateWorkload } from '@tidemark/scenarios';
import { createLogger } from '@tidemark/service';
import { keySlot, Projection } from '@tidemark/state';
import { endpoints, LocalRedisCluster } from '@tidemark/test-infra';
import type { Cluster } from 'ioredis';
import { AssignerProtocol } from 'kafkajs';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  closeAdmin,
  provisionProcessDeployment,
  RawTap,
  ready,
  serviceNames,
  type ProcessDeployment,
  type ServiceProcess,
} from './chaos-harness.js';
import {
  expectationsOf,
  expectProjectionIsTheFold,
  expectOnReference,
  until,
  untilSettled,
} from './reference-check.js';

// Scale-out on the engines Tidemark already uses: two processes of every service (eight in all) over the
// four turns.l0 partitions, on a 3-master Redis Cluster. The design claims each session's keys share one
// slot (its hash tag) and each batch spanning sessions goes out per node; here that is proven: every
// session ends with exactly the compactions, decisions and resume plan of the core reference (what one
// instance on one Redis computes, as the chaos and determinism runs show), byte for byte, the projection is
// the fold, the state is on every master, both resume instances serve the same context (and the same
// as a library client), and each service's group really has two members sharing the partitions.

const sessions = 12;
const turnsPerSession = 72;
const chunkTurns = 12;
const lossy = new Set([1, 5, 9]);
const tenantId = 'cluster';
const token = 'cluster-resume-token';

describe('two instances of every service on a 3-master Redis Cluster', () => {
  it('settles on the reference, with state on every master', { timeout: 420_000 }, async () => {
    const started = Date.now();
    const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1)}s`;
    const redisCluster = await LocalRedisCluster.start();
    console.log(`${elapsed()} Redis Cluster up: ${redisCluster.seeds}`);
    const workload = generateWorkload({ tenantId, sessions, turns: turnsPerSession, seed: 4242 });
    const deployment = await provisionProcessDeployment({
      name: 'cluster',
      workload,
      lossy,
      redisClusterNodes: redisCluster.seeds.split(','),
      env: { RESUME_TOKENS: `${tenantId}:${hashToken(token)}` },
    });
    const { run, topicPrefix, bus, redis, redisPrefix, unexpected, launch, policyOf } = deployment;
    console.log(`${elapsed()} deployment ${run} provisioned; launching two processes of each service`);
    const clients: ResumeLibraryClient[] = [];
    let journal: Journal | null = null;
    let tap: RawTap | null = null;
    onTestFinished(async () => {
      await Promise.all(clients.map((c) => c.close()));
      await journal?.close();
      await tap?.close();
      await closeAdmin(deployment);
      await deployment.close();
    });

    const instances: ServiceProcess[] = [];
    for (const name of [...serviceNames].reverse()) instances.push(launch(name), launch(name));
    await Promise.all(instances.map((p) => ready(p, 180_000)));
    console.log(`${elapsed()} ${instances.length} service processes ready (${run})`);
    journal = await Journal.open(
      bus,
      workload.map((turns) => sessionKey(turns[0]!.tenantId, turns[0]!.sessionId)),
    );
    tap = await RawTap.open(bus);

    const publisher = await createPublisher({
      brokers: endpoints().kafkaBrokers,
      registryUrl: endpoints().schemaRegistryUrl,
      clientId: `${run}-publisher`,
      topicPrefix,
      logger: createLogger('cluster', 'error'),
    });
    try {
      for (let from = 0; from < turnsPerSession; from += chunkTurns) {
        await publisher.publishTurns(workload.flatMap((turns) => turns.slice(from, from + chunkTurns)));
      }
    } finally {
      await publisher.close();
    }
    const total = () => [...tap.positions.values()].reduce((sum, seqs) => sum + seqs.size, 0);
    expect(await until(() => total() === sessions * turnsPerSession, 60_000)).toBe(true);
    const expected = expectationsOf(workload, tap, { policyOf, maxRepairs: 1 });

    const library = createResumeClient({ redis, redisPrefix, bus });
    clients.push(library);
    const pending = await untilSettled(expected, journal, library, {
      timeoutMs: 180_000,
      abort: () => unexpected.length > 0,
    });
    console.log(`${elapsed()} settled: ${expected.length - pending.length}/${expected.length} sessions`);
    expect(unexpected, 'a service exited on its own').toEqual([]);
    expect(pending.map((e) => e.sessionId)).toEqual([]);
    expect(await tap.caughtUp(30_000)).toBe(true);
    expect(await journal.caughtUp(30_000)).toBe(true);

    // 1. Every session's compactions and decisions are the reference's, byte for byte, and nothing else.
    expectOnReference(journal, expected);
    expect(tap.conflicting()).toEqual([]);

    // 2. The projection on the Cluster is the fold at every reference boundary.
    await expectProjectionIsTheFold(new Projection(redis, { prefix: redisPrefix }), expected);

    // 3. The sessions' state is spread over every master (so the batches really spanned nodes).
    const cluster = redis as Cluster;
    const mastersUsed = new Set(
      workload.map((turns) => cluster.slots[keySlot(`{${tenantId}/${turns[0]!.sessionId}}`)]![0]),
    );
    expect(mastersUsed.size).toBe(3);
    for (const node of cluster.nodes('master')) {
      const [, keys] = await node.scan('0', 'MATCH', `${redisPrefix}*`, 'COUNT', 1000);
      expect(keys.length, `keys on ${node.options.port}`).toBeGreaterThan(0);
    }

    // 4. Each service's groups have two members, each holding some of the partitions.
    await expectTwoMembersEach(deployment);

    // 5. Both resume instances serve the reference's plan marker with one context, the library's too.
    const urls = await Promise.all(instances.filter((p) => p.name === 'resume').map((p) => p.url));
    expect(urls).toHaveLength(2);
    for (const e of expected) {
      const viaLibrary = await library.resume(e.tenantId, e.sessionId);
      expect(viaLibrary.ok).toBe(true);
      if (!viaLibrary.ok) continue;
      expect(viaLibrary.result.markerId).toBe(e.planMarker);
      for (const url of urls) {
        const response = await fetch(`${url}/v1/sessions/${e.tenantId}/${e.sessionId}/resume`, {
          headers: { authorization: `Bearer ${token}` },
        });
        expect(response.status).toBe(200);
        const body = (await response.json()) as { markerId: string | null; contextHash: string };
        expect({ session: e.sessionId, markerId: body.markerId, contextHash: body.contextHash }).toEqual({
          session: e.sessionId,
          markerId: e.planMarker,
          contextHash: viaLibrary.result.contextHash,
        });
      }
    }
    console.log(`${elapsed()} done: ${tap.encodings.size} distinct compactions and decisions`);
  });
});

/** Every group of the deployment's services has two members, and each member was assigned partitions. */
async function expectTwoMembersEach(deployment: ProcessDeployment): Promise<void> {
  const admin = deployment.bus.kafka.admin();
  await admin.connect();
  try {
    const { env } = deployment;
    const groups = [
      env.MATERIALIZER_GROUP_ID!,
      env.GROUP_ID!,
      env.VALIDATOR_GROUP_ID!,
      env.RESUME_GROUP_ID!,
      `${env.RESUME_GROUP_ID!}-nodes`,
    ];
    const { groups: described } = await admin.describeGroups(groups);
    for (const group of described) {
      expect({ group: group.groupId, members: group.members.length }).toEqual({
        group: group.groupId,
        members: 2,
      });
      for (const member of group.members) {
        const assigned = AssignerProtocol.MemberAssignment.decode(member.memberAssignment)?.assignment ?? {};
        const partitions = Object.values(assigned).flat().length;
        expect(partitions, `${group.groupId} ${member.memberId}`).toBeGreaterThan(0);
      }
    }
  } finally {
    await admin.disconnect();
  }
}
