import { randomUUID } from 'node:crypto';
import { outputFormats, problemsIn } from '@tidemark/adapters';
import { createPublisher, sessionKey } from '@tidemark/contract';
import { inFormat, type ProviderResume } from '@tidemark/resume';
import { definePolicy, type MarkerInvalid, type Policy, type TurnEvent } from '@tidemark/core';
import {
  compressionTarget,
  fallbackFigures,
  generateWorkload,
  probeClasses,
  probeResume,
  type ProbeClass,
  type ProbedResume,
  type FallbackFigures,
  type ScenarioSession,
  type WorkloadOptions,
} from '@tidemark/scenarios';
import { commonConfig, parseConfig, z, type Logger } from '@tidemark/service';
import { Journal } from './journal.js';
import { dropDeployment, startPipeline, waitUntilReady, type Env } from './pipeline.js';
import { settle } from './settle.js';

// The fallback report: a generated workload through the real pipeline, once per summarizer (each as its
// own tenant, compacted under its own policy), and per summarizer the share of resumes that fall back to
// raw and the resume divergence. It runs on topics and Redis keys of its own (a fresh prefix), so it
// neither disturbs nor is disturbed by whatever else runs on the stack.

export interface FallbackReportOptions {
  readonly env: Env;
  readonly logger: Logger;
  readonly policies: readonly Policy[];
  readonly workload: Omit<WorkloadOptions, 'tenantId'>;
  /** Demo sessions played under each summarizer too (their own policy otherwise), reported one by one. */
  readonly demos?: readonly ScenarioSession[];
  readonly progress?: (line: string) => void;
  readonly settleTimeoutMs?: number;
}

export interface FallbackRow {
  readonly summarizer: string;
  readonly figures: FallbackFigures;
  /** Sessions whose live outcome differed from the core reference. */
  readonly mismatches: number;
  /** Resumes given back in each provider format and run through its validity checker, and how many failed. */
  readonly providerChecks: { readonly checked: number; readonly invalid: number };
  /** The probe over every session's resume context: questions from the raw log, answered from the context. */
  readonly probe: ProbeTotals;
}

/** Probe questions asked and answered over a summarizer's sessions, per class, and the compression. */
interface ProbeTotals {
  readonly asked: number;
  readonly answered: number;
  readonly byClass: Readonly<Record<ProbeClass, { readonly asked: number; readonly answered: number }>>;
  /** Mean over the sessions resumed from a node: digest tokens ÷ the raw tokens it stands for. */
  readonly compression: number | null;
  /** Sessions above the compression target, of those long enough to be held to it. */
  readonly aboveTarget: number;
  /** Sessions whose digest covers too little to be held to the target (`tooShortForTarget`). */
  readonly tooShort: number;
}

/** One demo session under one summarizer: its probe and compression, live. */
export interface DemoProbeRow extends ProbedResume {
  readonly summarizer: string;
  readonly sessionId: string;
  readonly narrativeBudget: number;
  /** Whether the live outcome matched the core reference. */
  readonly matchesReference: boolean;
}

export interface FallbackReport {
  readonly rows: readonly FallbackRow[];
  readonly demos: readonly DemoProbeRow[];
  readonly workload: FallbackReportOptions['workload'];
  readonly maxRepairs: number;
  readonly seconds: number;
}

export async function runFallbackReport(options: FallbackReportOptions): Promise<FallbackReport> {
  const say = options.progress ?? (() => undefined);
  const run = randomUUID().slice(0, 8);
  const tenants = options.policies.map((policy) => {
    const tenantId = `report-${policy.summarizer.replace(/[^a-z0-9-]/gi, '-')}`;
    return {
      tenantId,
      policy,
      demos: (options.demos ?? []).map((demo) => demoUnder(demo, tenantId, policy)),
    };
  });
  const demoPolicies = tenants.flatMap((t) =>
    t.demos.map((d) => [sessionKey(t.tenantId, d.sessionId), d.policy] as const),
  );
  const env: Env = {
    ...options.env,
    TOPIC_PREFIX: `${options.env.TOPIC_PREFIX ?? ''}report-${run}.`,
    REDIS_PREFIX: `${options.env.REDIS_PREFIX ?? 'tidemark:'}report-${run}:`,
    POLICY_OVERRIDES: JSON.stringify(
      Object.fromEntries([...tenants.map((t) => [t.tenantId, t.policy] as const), ...demoPolicies]),
    ),
  };
  const config = parseConfig(
    z.object({ ...commonConfig, MAX_REPAIRS: z.coerce.number().int().min(0).default(1) }),
    env,
  );
  const began = performance.now();
  say(`fallback report ${run}: topics ${config.TOPIC_PREFIX}*, Redis ${config.REDIS_PREFIX}*`);
  const pipeline = await startPipeline({ env, logger: options.logger, port: 0 });
  try {
    await waitUntilReady(pipeline.host);
    const sessions = tenants.map(({ tenantId, policy }) => ({
      tenantId,
      policy,
      sessions: generateWorkload({ ...options.workload, tenantId }),
    }));
    const journal = await Journal.open(pipeline.bus, [
      ...sessions.flatMap((t) => t.sessions.map((turns) => sessionKey(tenantId(turns), sessionIdOf(turns)))),
      ...demoPolicies.map(([key]) => key),
    ]);
    const publisher = await createPublisher({
      brokers: config.KAFKA_BROKERS,
      registryUrl: config.SCHEMA_REGISTRY_URL,
      clientId: `tidemark-report-${run}`,
      topicPrefix: config.TOPIC_PREFIX,
      logger: options.logger,
    });
    const demoTurns = tenants.flatMap((t) => t.demos.map((d) => d.turns));
    const total = [...sessions.flatMap((t) => t.sessions), ...demoTurns].reduce((n, s) => n + s.length, 0);
    let published = 0;
    for (const tenant of sessions) {
      for (const turns of tenant.sessions) {
        await publisher.publishTurns(turns);
        published += turns.length;
      }
      say(`published ${published}/${total} turns`);
    }
    for (const turns of demoTurns) {
      await publisher.publishTurns(turns);
      published += turns.length;
    }
    if (demoTurns.length > 0) say(`published ${published}/${total} turns (with the demo sessions)`);
    await publisher.close();

    const rows: FallbackRow[] = [];
    for (const tenant of sessions) {
      const observations = [];
      let mismatches = 0;
      const providerChecks = { checked: 0, invalid: 0 };
      const probes: ProbedResume[] = [];
      let done = 0;
      for (const turns of tenant.sessions) {
        const settled = await settle(
          journal,
          pipeline,
          [
            {
              tenantId: tenant.tenantId,
              sessionId: sessionIdOf(turns),
              turns,
              policy: tenant.policy,
              maxRepairs: config.MAX_REPAIRS,
            },
          ],
          options.settleTimeoutMs ?? 60_000,
        );
        if (!settled.matchesReference) mismatches += 1;
        if (settled.resume.ok && settled.resumeAgain.ok) {
          const firstAttempts = new Set(
            settled.journal.compactions.filter((c) => c.attempt === 0).map((c) => c.compactionId),
          );
          const firstChecks = settled.journal.decisions.filter(
            (d): d is MarkerInvalid =>
              d.type === 'marker_invalid' && d.cause === 'check' && firstAttempts.has(d.compactionId),
          );
          const depthOnly = (d: MarkerInvalid) => d.violations.every((v) => v.condition === 'depth');
          const { result } = settled.resume;
          probes.push(
            probeResume({
              turns,
              messages: result.messages,
              rawFromSeq: result.rawFromSeq,
              hasNode: result.nodeId !== null,
              narrativeBudget: tenant.policy.narrativeTokenBudget,
            }),
          );
          for (const format of outputFormats) {
            providerChecks.checked += 1;
            const { body } = inFormat(settled.resume.result, format) as ProviderResume;
            const problems = problemsIn(format, body);
            if (problems.length > 0) {
              providerChecks.invalid += 1;
              say(`${format} resume of ${sessionIdOf(turns)} is not valid: ${problems.join('; ')}`);
            }
          }
          observations.push({
            sessionId: sessionIdOf(turns),
            plan: settled.resume.context.plan,
            contextHashes: [settled.resume.result.contextHash, settled.resumeAgain.result.contextHash],
            lossyAtFirstCheck: firstChecks.filter((d) => !depthOnly(d)).length,
            belowFrameAtFirstCheck: firstChecks.filter(depthOnly).length,
            markers: firstAttempts.size,
          });
        } else {
          mismatches += 1;
        }
        done += 1;
        if (done % 10 === 0 || done === tenant.sessions.length) {
          say(`${tenant.policy.summarizer}: ${done}/${tenant.sessions.length} sessions settled`);
        }
      }
      rows.push({
        summarizer: tenant.policy.summarizer,
        figures: fallbackFigures(observations),
        mismatches,
        providerChecks,
        probe: probeTotals(probes),
      });
    }
    const demos: DemoProbeRow[] = [];
    for (const tenant of tenants) {
      for (const demo of tenant.demos) {
        const { sessionId, turns, policy } = demo;
        const run = { tenantId: tenant.tenantId, sessionId, turns, policy, maxRepairs: config.MAX_REPAIRS };
        const settled = await settle(journal, pipeline, [run], options.settleTimeoutMs ?? 60_000);
        if (!settled.resume.ok)
          throw new Error(`demo ${sessionId} did not resume: ${settled.resume.message}`);
        const { result } = settled.resume;
        const probed = probeResume({
          turns,
          messages: result.messages,
          rawFromSeq: result.rawFromSeq,
          hasNode: result.nodeId !== null,
          narrativeBudget: policy.narrativeTokenBudget,
        });
        demos.push({
          ...probed,
          summarizer: policy.summarizer,
          sessionId,
          narrativeBudget: policy.narrativeTokenBudget,
          matchesReference: settled.matchesReference,
        });
      }
      if (tenant.demos.length > 0)
        say(`${tenant.policy.summarizer}: ${tenant.demos.length} demo sessions settled`);
    }
    await journal.close();
    return {
      rows,
      demos,
      workload: options.workload,
      maxRepairs: config.MAX_REPAIRS,
      seconds: (performance.now() - began) / 1000,
    };
  } finally {
    await pipeline.stop();
    // The report's topics and keys are its own: leave nothing behind.
    await dropDeployment(env);
  }
}

function probeTotals(probed: readonly ProbedResume[]): ProbeTotals {
  const probes = probed.map((p) => p.probe);
  const byClass = Object.fromEntries(
    probeClasses.map((c) => [
      c,
      {
        asked: probes.reduce((n, p) => n + p.byClass[c].asked, 0),
        answered: probes.reduce((n, p) => n + p.byClass[c].answered, 0),
      },
    ]),
  ) as ProbeTotals['byClass'];
  const compressions = probed.flatMap((p) => (p.compression === null ? [] : [p.compression]));
  return {
    asked: probes.reduce((n, p) => n + p.asked, 0),
    answered: probes.reduce((n, p) => n + p.answered, 0),
    byClass,
    compression:
      compressions.length === 0 ? null : compressions.reduce((a, b) => a + b, 0) / compressions.length,
    aboveTarget: probed.filter((p) => !p.tooShort && (p.compression ?? 0) > compressionTarget).length,
    tooShort: probed.filter((p) => p.tooShort).length,
  };
}

/** A demo session as the report plays it: under the report's tenant and this summarizer, its own policy otherwise. */
function demoUnder(demo: ScenarioSession, tenantId: string, policy: Policy) {
  const sessionId = `demo-${demo.sessionId}`;
  const turns: TurnEvent[] = demo.turns.map((turn) => ({ ...turn, tenantId, sessionId }));
  return { sessionId, turns, policy: definePolicy({ ...demo.policy, summarizer: policy.summarizer }) };
}

const tenantId = (turns: readonly { tenantId: string }[]): string => turns[0]?.tenantId ?? '';
const sessionIdOf = (turns: readonly { sessionId: string }[]): string => turns[0]?.sessionId ?? '';

const percent = (value: number) => `${(value * 100).toFixed(1)}%`;
const share = (asked: number, answered: number) => (asked === 0 ? '–' : `${answered}/${asked}`);

/** The demo sessions, one row per summarizer and session; a session too short for the target says so. */
function demoTable(demos: readonly DemoProbeRow[]): string[] {
  if (demos.length === 0) return [];
  return [
    `| summarizer | demo session | probe score | ${probeClasses.join(' | ')} | compression | note |`,
    `| --- | --- | --- | ${probeClasses.map(() => '---').join(' | ')} | --- | --- |`,
    ...demos.map((d) => {
      const classes = probeClasses.map((c) => share(d.probe.byClass[c].asked, d.probe.byClass[c].answered));
      const compression = d.compression === null ? '– (raw)' : d.compression.toFixed(3);
      const notes = [
        d.tooShort
          ? `too short for ${compressionTarget}: the digest stands for ${d.coveredTokens} raw tokens, under ${d.narrativeBudget / compressionTarget}`
          : '',
        d.matchesReference ? '' : 'differs from the reference',
      ].filter((note) => note !== '');
      return `| ${d.summarizer} | ${d.sessionId} | ${d.probe.score.toFixed(3)} | ${classes.join(' | ')} | ${compression} | ${notes.join('; ')} |`;
    }),
    '',
  ];
}

export function formatFallbackReport(report: FallbackReport, command: string): string {
  const w = report.workload;
  const lines = [
    `Fallback report — ${w.sessions ?? 50} sessions × ${w.turns ?? 200} turns per summarizer, max repairs ${report.maxRepairs}, rates ${JSON.stringify(w.rates ?? {})}`,
    '',
    '| summarizer | sessions | markers | lossy at first check | below the frame at first check | digest resumes | raw fallbacks | fallback rate | divergent sessions | differs from reference | provider resumes checked | invalid |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...report.rows.map(
      ({ summarizer, figures: f, mismatches, providerChecks: p }) =>
        `| ${summarizer} | ${f.sessions} | ${f.markers} | ${percent(f.lossyRate)} | ${percent(f.belowFrameRate)} | ${f.digestResumes} | ${f.rawResumes} | ${percent(f.fallbackRate)} | ${f.divergentSessions} | ${mismatches} | ${p.checked} | ${p.invalid} |`,
    ),
    '',
    'lossy: the summary lost or falsified state (closure, retention, artifacts); below the frame: valid content, but a digest had',
    'already moved the frame above it (depth). Raw fallback: the newest marker at the frame depth is not trusted, so the session',
    'resumes from the raw checkpoint. Divergent: two resumes of one session gave different contextHashes (must be 0).',
    `Provider resumes: each session's resume in ${outputFormats.join(', ')}, run through that format's validity checker (invalid must be 0).`,
    '',
    `| summarizer | probe score | ${probeClasses.join(' | ')} | compression | above ${compressionTarget} | too short for it |`,
    `| --- | --- | ${probeClasses.map(() => '---').join(' | ')} | --- | --- | --- |`,
    ...report.rows.map(({ summarizer, probe: p }) => {
      const classes = probeClasses.map((c) => share(p.byClass[c].asked, p.byClass[c].answered));
      const compression = p.compression === null ? '–' : p.compression.toFixed(3);
      return `| ${summarizer} | ${p.asked === 0 ? '–' : (p.answered / p.asked).toFixed(3)} | ${classes.join(' | ')} | ${compression} | ${p.aboveTarget} | ${p.tooShort} |`;
    }),
    '',
    "Probe: questions generated from each session's raw log (its goal, files changed and how, what not to retry and why, what is",
    'still open, constraints in force or superseded), answered from the resume context alone (docs/probe.md); compression: the',
    'digest part of the context in tokens ÷ the raw turns it stands for, as a raw resume gives them (mean over sessions resumed',
    `from a node). Too short: the digest stands for under 1/${compressionTarget} × the narrative budget in raw tokens.`,
    '',
    ...demoTable(report.demos),
    `(${report.seconds.toFixed(1)} s; command: pnpm tidemark ${command})`,
  ];
  return lines.join('\n');
}
