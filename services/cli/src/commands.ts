import { replayCommand } from '@tidemark/compactor';
import { definePolicy, type Policy } from '@tidemark/core';
import { inFormat, resumeFormats, type ResumeFormat, type ResumeLibraryClient } from '@tidemark/resume';
import { SessionHistory, sessionKey, type Bus } from '@tidemark/contract';
import { loadScenarios, type ScenarioSession } from '@tidemark/scenarios';
import { commonConfig, createLogger, limitHeapGrowth, parseConfig, z } from '@tidemark/service';
import { Command, Option } from 'commander';
import { inputFormats, type InputFormat } from '@tidemark/adapters';
import { runDemo, policyOverridesOf } from './demo.js';
import { ingest, IngestError } from './ingest.js';
import { serveMcp } from './mcp.js';
import { openStackAccess } from './stack-access.js';
import { runFallbackReport, formatFallbackReport } from './fallback.js';
import { formatSessionReport } from './format.js';
import { Journal } from './journal.js';
import { distinctRegressions } from './regressions.js';
import { startPipeline, waitUntilReady, type Env } from './pipeline.js';
import { preflight } from './preflight.js';
import { integer, sessionArgument } from './args.js';
import { demoOperatorToken, revokeCommand } from './revoke.js';
import { uiCommand } from './ui.js';

// The `tidemark` command. Where the stack is comes from the environment (KAFKA_BROKERS,
// SCHEMA_REGISTRY_URL, REDIS_URL, TOPIC_PREFIX, REDIS_PREFIX: the same variables as the services, with
// defaults for the local stack); what to do, from the arguments. Every command needs the stack, so each
// first checks that it answers (preflight.ts), and a stack that is down is one line, within seconds.

const write = (text: string) => process.stdout.write(`${text}\n`);
const note = (text: string) => process.stderr.write(`${text}\n`);

/** The token the demo configures for each demo tenant, so `curl` works against `--follow`. */
export const demoToken = (tenantId: string) => `demo-token-${tenantId}`;

/** The environment the all-in-one process runs the demo with: policies per demo session, demo tokens. */
export async function demoEnv(env: Env, scenarios: readonly ScenarioSession[]): Promise<Env> {
  const { hashToken } = await import('@tidemark/resume');
  const tenants = [...new Set(scenarios.map((s) => s.tenantId))];
  const tokens = tenants.map((tenant) => `${tenant}:${hashToken(demoToken(tenant))}`);
  const operators = tenants.map((tenant) => `${tenant}:${hashToken(demoOperatorToken(tenant))}`);
  const joined = (own: string | undefined, demo: readonly string[]) =>
    [own, ...demo].filter((t) => t !== undefined && t !== '').join(',');
  return {
    ...env,
    POLICY_OVERRIDES: env.POLICY_OVERRIDES ?? policyOverridesOf(scenarios),
    RESUME_TOKENS: joined(env.RESUME_TOKENS, tokens),
    OPERATOR_TOKENS: joined(env.OPERATOR_TOKENS, operators),
  };
}

function startCommand(env: Env): Command {
  return new Command('start')
    .description(
      'Run the pipeline (materializer, compactor, validator, resume) in one process, play the demo sessions through it and print a report per session. The local stack must be up (npm start brings it up).',
    )
    .option('--follow', 'keep the services running after the demo (Ctrl-C stops everything cleanly)', false)
    .option('--no-demo', 'run the services without playing the demo')
    .option(
      '--port <port>',
      'the HTTP port: /healthz, /readyz, /metrics and the resume API',
      integer(0),
      7400,
    )
    .option('--log-level <level>', 'service log level (logs go to stderr)', 'error')
    .action(async (flags: { follow: boolean; demo: boolean; port: number; logLevel: string }) => {
      const scenarios = loadScenarios();
      const runEnv = await demoEnv({ LOG_LEVEL: flags.logLevel, ...env }, scenarios);
      const common = parseConfig(z.object(commonConfig), runEnv);
      const logger = createLogger('tidemark', common.LOG_LEVEL);
      limitHeapGrowth(common.HEAP_GROWING_PERCENT);
      note('starting the pipeline…');
      const pipeline = await startPipeline({ env: runEnv, logger, port: flags.port });
      let stopping = false;
      const stop = async () => {
        if (stopping) return;
        stopping = true;
        note('stopping…');
        await pipeline.stop();
      };
      process.once('SIGINT', () => void stop().then(() => process.exit(130)));
      process.once('SIGTERM', () => void stop().then(() => process.exit(143)));
      await waitUntilReady(pipeline.host);
      note(`pipeline ready at ${pipeline.url} (/healthz, /readyz, /metrics, /openapi.json)`);
      let failed = false;
      if (flags.demo) {
        const outcomes = await runDemo(pipeline, { env: runEnv, logger, scenarios, progress: note });
        write('');
        for (const outcome of outcomes) {
          write(outcome.report);
          const same =
            outcome.resume.ok &&
            outcome.resumeAgain.ok &&
            outcome.resume.result.contextHash === outcome.resumeAgain.result.contextHash;
          write(
            `  two resumes, one contextHash: ${same ? 'yes' : 'NO'}; matches the core reference: ${outcome.matchesReference ? 'yes' : 'NO'}`,
          );
          write('');
          failed ||= !same || !outcome.matchesReference;
        }
      }
      if (flags.demo) {
        const sample = scenarios.find((s) => s.sessionId === 'migration-lossy') ?? scenarios[0];
        if (sample !== undefined) {
          const ref = `${sample.tenantId}/${sample.sessionId}`;
          write(
            `Next: pnpm tidemark inspect ${ref} · pnpm tidemark resume ${ref} · npm start -- --follow (keeps the resume API up)`,
          );
        }
      }
      if (flags.follow) {
        const tenant = scenarios[0]?.tenantId ?? 'acme';
        note(
          `following; try: curl -H 'authorization: Bearer ${demoToken(tenant)}' ${pipeline.url}/v1/sessions/${tenant}/${scenarios[0]?.sessionId ?? 'session'}/resume — Ctrl-C stops`,
        );
        return;
      }
      await stop();
      if (failed) process.exitCode = 1;
    });
}

type SessionRef = { tenantId: string; sessionId: string };

/** Runs `use` with a bus and an in-process resume client on the configured stack, and closes both. */
async function withResumeClient<T>(
  env: Env,
  use: (bus: Bus, client: ResumeLibraryClient) => Promise<T>,
): Promise<T> {
  const access = await openStackAccess(env, 'tidemark');
  try {
    return await use(access.bus, access.client);
  } finally {
    await access.close();
  }
}

function inspectCommand(env: Env): Command {
  return new Command('inspect')
    .description(
      "Print a session's compactions, marker decisions, regressions (steps a resumed agent started again) and resume plan, readably.",
    )
    .argument('<tenant/session>', 'the session, e.g. acme/migration-lossy', sessionArgument)
    .option(
      '--json',
      'print it as JSON: compactions, marker decisions, regressions, and the resume (or why not)',
      false,
    )
    .action((ref: SessionRef, flags: { json: boolean }) =>
      withResumeClient(env, async (bus, client) => {
        note('reading the compactions, markers and regressions topics…');
        const journal = await Journal.open(bus, [sessionKey(ref.tenantId, ref.sessionId)]);
        const history = new SessionHistory(bus);
        const [regressions] = await Promise.all([
          history
            .read('regressions', ref)
            .then(({ records }) => distinctRegressions(records.map((r) => r.value)))
            .finally(() => history.close()),
          journal.caughtUp(),
        ]);
        await journal.close();
        // A look, not an agent resuming: it leaves no regression watch.
        const resume = await client.resume(ref.tenantId, ref.sessionId, { watch: false });
        const entry = journal.session(ref.tenantId, ref.sessionId);
        const turns = resume.ok ? resume.result.rawToSeq : 0;
        if (flags.json) {
          const { compactions, decisions } = entry;
          const answer = resume.ok ? resume.result : { code: resume.code, message: resume.message };
          write(JSON.stringify({ ...ref, compactions, decisions, regressions, resume: answer }, null, 2));
        } else {
          write(formatSessionReport({ ...ref, turns, journal: entry, resume, regressions }));
        }
        if (!resume.ok && resume.code === 'session_not_found') process.exitCode = 2;
      }),
    );
}

function resumeCommand(env: Env): Command {
  return new Command('resume')
    .description(
      'Print the context a session resumes with (mode, marker, messages, contextHash) as JSON; with --format, the request body part a provider accepts instead of the messages.',
    )
    .argument('<tenant/session>', 'the session, e.g. acme/migration-strict', sessionArgument)
    .addOption(
      new Option('--format <format>', 'tidemark, or a provider format')
        .choices(resumeFormats)
        .default('tidemark'),
    )
    .action((ref: SessionRef, flags: { format: ResumeFormat }) =>
      withResumeClient(env, async (_bus, client) => {
        const outcome = await client.resume(ref.tenantId, ref.sessionId);
        if (!outcome.ok) {
          note(`cannot resume ${ref.tenantId}/${ref.sessionId}: ${outcome.code}: ${outcome.message}`);
          process.exitCode = outcome.code === 'session_not_found' ? 2 : 3;
          return;
        }
        write(JSON.stringify(inFormat(outcome.result, flags.format), null, 2));
      }),
    );
}

function expandCommand(env: Env): Command {
  return new Command('expand')
    .description(
      "Open one node of a session's summary (a resume names the one it starts from as nodeId): the node, its narrative and claims with the turn each came from, as JSON; with --turns, a page of the raw turns it covers instead.",
    )
    .argument('<tenant/session>', 'the session, e.g. acme/migration-lossy', sessionArgument)
    .argument('<node>', 'the node (compaction) id')
    .option('--turns', 'the raw turns the node covers instead of the node', false)
    .option('--from <seq>', "with --turns: the page's first turn (default: the node's first)", integer(1))
    .option('--to <seq>', "with --turns: the range's last turn (default: the node's last)", integer(1))
    .option('--limit <n>', 'with --turns: turns per page (at most 200)', integer(1))
    .addOption(
      new Option('--format <format>', 'with --turns: tidemark, or a provider format')
        .choices(resumeFormats)
        .default('tidemark'),
    )
    .action(
      (
        ref: SessionRef,
        nodeId: string,
        flags: { turns: boolean; from?: number; to?: number; limit?: number; format: ResumeFormat },
      ) =>
        withResumeClient(env, async (_bus, client) => {
          const range = {
            ...(flags.from === undefined ? {} : { fromSeq: flags.from }),
            ...(flags.to === undefined ? {} : { toSeq: flags.to }),
            ...(flags.limit === undefined ? {} : { limit: flags.limit }),
          };
          const outcome = flags.turns
            ? await client.expand.turns(ref, nodeId, range, flags.format)
            : await client.expand
                .node(ref, nodeId)
                .then((o) => (o.ok ? { ok: true as const, body: { node: o.body } } : o));
          if (!outcome.ok) {
            note(
              `cannot expand ${nodeId} of ${ref.tenantId}/${ref.sessionId}: ${outcome.code}: ${outcome.message}`,
            );
            process.exitCode = outcome.code === 'node_not_found' ? 2 : 3;
            return;
          }
          write(JSON.stringify(outcome.body, null, 2));
        }),
    );
}

function ingestCommand(env: Env): Command {
  return new Command('ingest')
    .description(
      "Convert an agent runtime's transcript to turns and publish them to turns.l0. Running it again publishes nothing new; --follow tails a growing JSONL file (a Claude Code session being written).",
    )
    .argument('<file>', 'the transcript file')
    .requiredOption('--session <tenant/session>', 'the session the turns belong to', sessionArgument)
    .addOption(
      new Option('--format <format>', 'the transcript format').choices(inputFormats).makeOptionMandatory(),
    )
    .option('--follow', 'keep reading the file as it grows (JSONL), until Ctrl-C', false)
    .action(async (file: string, flags: { session: SessionRef; format: InputFormat; follow: boolean }) => {
      try {
        const result = await ingest({
          env,
          file,
          format: flags.format,
          ...flags.session,
          follow: flags.follow,
        });
        note(
          `${file}: ${result.turns} turns, ${result.published} published, ${result.already} already applied` +
            (result.skipped > 0 ? `, ${result.skipped} transcript part(s) not understood and skipped` : ''),
        );
      } catch (error) {
        if (!(error instanceof IngestError)) throw error;
        note(error.message);
        process.exitCode = 1;
      }
    });
}

function reportCommand(env: Env): Command {
  return new Command('report')
    .description(
      'Run a generated workload and the demo sessions through the pipeline once per summarizer and report the fraction of resumes that fall back to raw, the resume divergence (which must be zero), and how much of what a model needs each resume keeps (the probe) at what compression.',
    )
    .option('--sessions <n>', 'sessions per summarizer', integer(1), 40)
    .option('--turns <n>', 'turns per session', integer(1), 200)
    .option('--seed <n>', 'the first session seed', integer(0), 1)
    .option('--tool-calls <p>', 'per-turn odds of a batch of tool calls', Number, 0.2)
    .option('--long-calls <p>', 'share of tool calls that run long (across boundaries)', Number, 0.1)
    .option('--rejections <p>', 'per-turn odds of a rejected approach', Number, 0.02)
    .option('--failures <p>', 'per-turn odds of a failed approach', Number, 0.02)
    .option('--artifacts <p>', 'per-turn odds of an artifact change', Number, 0.06)
    .option('--summarizers <list>', 'comma-separated summarizers', 'strict,narrative')
    .option(
      '--no-demos',
      'leave out the demo sessions (played under each summarizer and reported one by one)',
    )
    .option(
      '--max-repairs <n>',
      'strict repairs: 0 none (shows the raw fallback rate), 1 one per lossy node',
      integer(0),
      1,
    )
    .action(
      async (flags: {
        sessions: number;
        turns: number;
        seed: number;
        toolCalls: number;
        longCalls: number;
        rejections: number;
        failures: number;
        artifacts: number;
        summarizers: string;
        maxRepairs: number;
        demos: boolean;
      }) => {
        const policies: Policy[] = flags.summarizers
          .split(',')
          .map((summarizer) => definePolicy({ summarizer: summarizer.trim() }));
        const logger = createLogger('tidemark', 'error');
        const result = await runFallbackReport({
          env: { ...env, MAX_REPAIRS: String(flags.maxRepairs) },
          logger,
          policies,
          workload: {
            sessions: flags.sessions,
            turns: flags.turns,
            seed: flags.seed,
            rates: {
              toolCalls: flags.toolCalls,
              longCalls: flags.longCalls,
              rejections: flags.rejections,
              failures: flags.failures,
              artifacts: flags.artifacts,
            },
          },
          demos: flags.demos ? loadScenarios() : [],
          progress: note,
        });
        write(formatFallbackReport(result, process.argv.slice(2).join(' ')));
        if (result.rows.some((row) => row.figures.divergentSessions > 0)) process.exitCode = 1;
      },
    );
}

function mcpCommand(env: Env): Command {
  return new Command('mcp')
    .description(
      "Serve one session to an agent over MCP (stdio): tools to record a constraint, supersede it, reject an approach and record a failure (each appended to the session's turns), and the session's resume, status and expand (a node of its summary, or the turns it covers). The server is the session's writer.",
    )
    .argument('<tenant/session>', 'the session, e.g. acme/checkout-refactor', sessionArgument)
    .action(async (ref: SessionRef) => {
      const server = await serveMcp({ env, ...ref });
      note(`tidemark mcp: serving ${ref.tenantId}/${ref.sessionId} on stdio`);
      // The client closing its end of stdin (or a signal) ends the session's server.
      const stop = () => void server.close();
      process.stdin.once('end', stop);
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
      await server.closed;
    });
}

export function tidemarkProgram(env: Env = process.env): Command {
  return new Command('tidemark')
    .description(
      'Tidemark: decides at compaction time whether an agent\u2019s recovery marker may be trusted.',
    )
    .addCommand(startCommand(env))
    .addCommand(replayCommand(env))
    .addCommand(inspectCommand(env))
    .addCommand(resumeCommand(env))
    .addCommand(expandCommand(env))
    .addCommand(revokeCommand(env))
    .addCommand(uiCommand(env))
    .addCommand(ingestCommand(env))
    .addCommand(mcpCommand(env))
    .addCommand(reportCommand(env))
    .hook('preAction', () => preflight(env))
    .showHelpAfterError();
}
