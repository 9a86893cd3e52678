import { replay, replayTarget } from '@tidemark/compactor';
import { createPublisher, sessionKey } from '@tidemark/contract';
import { definePolicy } from '@tidemark/core';
import { probeResume, type ScenarioSession } from '@tidemark/scenarios';
import { commonConfig, parseConfig, z, type Logger } from '@tidemark/service';
import { formatSessionReport } from './format.js';
import { Journal } from './journal.js';
import type { Env, Pipeline } from './pipeline.js';
import { settle, type SessionRun, type Settled } from './settle.js';

// The demo: play the fixture transcripts through the public publisher, let the live pipeline compact,
// validate and plan them, run the replays some transcripts ask for, and report per session, once each
// session has settled on exactly what the core reference computes for it.

export interface SessionOutcome extends Settled {
  readonly scenario: ScenarioSession;
  readonly report: string;
}

export interface DemoOptions {
  readonly env: Env;
  readonly logger: Logger;
  readonly scenarios: readonly ScenarioSession[];
  /** Progress lines go here (stderr by default). */
  readonly progress?: (line: string) => void;
  /** How long to wait for one session to settle. */
  readonly settleTimeoutMs?: number;
}

/** The compactor's per-session policies for these scenarios (its POLICY_OVERRIDES). */
export function policyOverridesOf(scenarios: readonly ScenarioSession[]): string {
  return JSON.stringify(
    Object.fromEntries(scenarios.map((s) => [sessionKey(s.tenantId, s.sessionId), definePolicy(s.policy)])),
  );
}

export async function runDemo(pipeline: Pipeline, options: DemoOptions): Promise<SessionOutcome[]> {
  const config = parseConfig(
    z.object({ ...commonConfig, MAX_REPAIRS: z.coerce.number().int().min(0).default(1) }),
    options.env,
  );
  const say = options.progress ?? ((line: string) => process.stderr.write(`${line}\n`));
  const timeout = options.settleTimeoutMs ?? 60_000;
  const { scenarios } = options;

  const journal = await Journal.open(
    pipeline.bus,
    scenarios.map((s) => sessionKey(s.tenantId, s.sessionId)),
  );
  try {
    const publisher = await createPublisher({
      brokers: config.KAFKA_BROKERS,
      registryUrl: config.SCHEMA_REGISTRY_URL,
      clientId: 'tidemark-demo',
      topicPrefix: config.TOPIC_PREFIX,
      logger: options.logger,
    });
    try {
      for (const scenario of scenarios) {
        await publisher.publishTurns(scenario.turns);
        say(`published ${scenario.turns.length} turns of ${scenario.tenantId}/${scenario.sessionId}`);
      }
    } finally {
      await publisher.close();
    }

    const outcomes: SessionOutcome[] = [];
    for (const scenario of scenarios) {
      const { tenantId, sessionId, turns } = scenario;
      const maxRepairs = config.MAX_REPAIRS;
      const runs: SessionRun[] = [
        { tenantId, sessionId, turns, policy: definePolicy(scenario.policy), maxRepairs },
      ];
      say(`waiting for ${tenantId}/${sessionId} to settle…`);
      let settled = await settle(journal, pipeline, runs, timeout);

      const replayOverrides = scenario.transcript.replay;
      if (replayOverrides !== null) {
        const policy = definePolicy(replayOverrides);
        say(`replaying ${tenantId}/${sessionId} under a tighter policy, as generation 2…`);
        const result = await replay({
          ...replayTarget(config),
          policy,
          generation: 2,
          maxRepairs,
          tenant: tenantId,
          session: sessionId,
          progress: 'none',
          logger: options.logger,
        });
        say(
          `replay read ${result.turns} turns and wrote ${result.compactions} new compactions` +
            (result.compactions === 0
              ? ' (this generation was already replayed: same ids, nothing new)'
              : ''),
        );
        runs.push({ tenantId, sessionId, turns, policy, generation: 2, maxRepairs });
        settled = await settle(journal, pipeline, runs, timeout);
      }

      outcomes.push({
        ...settled,
        scenario,
        report: formatSessionReport({
          tenantId,
          sessionId,
          title: scenario.transcript.title,
          summarizer: definePolicy(scenario.policy).summarizer,
          turns: turns.length,
          journal: settled.journal,
          resume: settled.resume,
          probed: settled.resume.ok
            ? probeResume({
                turns,
                messages: settled.resume.result.messages,
                rawFromSeq: settled.resume.result.rawFromSeq,
                hasNode: settled.resume.result.nodeId !== null,
                narrativeBudget: definePolicy(scenario.policy).narrativeTokenBudget,
              })
            : undefined,
        }),
      });
    }
    return outcomes;
  } finally {
    await journal.close();
  }
}
