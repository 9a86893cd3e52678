import { Command } from 'commander';
import { resumeUrlOption, sessionArgument } from './args.js';
import type { Env } from './pipeline.js';

// `tidemark revoke`: undo a compaction through the resume API, as an operator. The token comes from the
// environment (TIDEMARK_OPERATOR_TOKEN), never from the command line, where it would land in the shell's
// history and in every process listing.

const write = (text: string) => process.stdout.write(`${text}\n`);
const note = (text: string) => process.stderr.write(`${text}\n`);

/** The operator token the demo configures for each demo tenant. */
export const demoOperatorToken = (tenantId: string) => `demo-operator-${tenantId}`;

export function revokeCommand(env: Env): Command {
  return new Command('revoke')
    .description(
      "Revoke a marker (undo a compaction): the validator publishes a MarkerInvalid with cause revoked, and the session resumes from its raw checkpoint. Revoking twice is one revocation. Asks the resume API with an operator token of the session's tenant, from TIDEMARK_OPERATOR_TOKEN (the demo's: demo-operator-<tenant>).",
    )
    .argument('<tenant/session>', 'the session, e.g. acme/migration-strict', sessionArgument)
    .argument('<marker>', 'the marker id (`tidemark inspect` lists each decision with its marker)')
    .requiredOption('--reason <text>', 'why it is revoked (kept on the markers topic, for the audit)')
    .addOption(resumeUrlOption(env))
    .action(
      async (
        ref: { tenantId: string; sessionId: string },
        markerId: string,
        flags: { reason: string; url: string },
      ) => {
        const token = env.TIDEMARK_OPERATOR_TOKEN;
        const session = `${ref.tenantId}/${ref.sessionId}`;
        if (token === undefined || token === '') {
          note(
            `set TIDEMARK_OPERATOR_TOKEN to an operator token of tenant ${ref.tenantId} (the demo's: ${demoOperatorToken(ref.tenantId)})`,
          );
          process.exitCode = 2;
          return;
        }
        const path = [ref.tenantId, ref.sessionId, 'markers', markerId, 'revoke'].map(encodeURIComponent);
        const url = `${flags.url}/v1/sessions/${path.join('/')}`;
        let response: Response;
        try {
          response = await fetch(url, {
            method: 'POST',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
            body: JSON.stringify({ reason: flags.reason }),
          });
        } catch (error) {
          note(`cannot reach the resume API at ${flags.url}: ${(error as Error).message}`);
          process.exitCode = 3;
          return;
        }
        const body = (await response.json().catch(() => null)) as Record<string, unknown> | null;
        if (!response.ok) {
          note(
            `cannot revoke ${markerId} of ${session}: ${response.status} ${String(body?.code)}: ${String(body?.message)}`,
          );
          process.exitCode = response.status === 404 || response.status === 409 ? 2 : 3;
          return;
        }
        write(JSON.stringify(body, null, 2));
        const plan = body?.plan as { mode?: string; rawFromSeq?: number } | null | undefined;
        note(
          body?.status === 'pending'
            ? `revocation of ${markerId} published; the validator has not decided it yet`
            : `${String(body?.status)}: ${session} now resumes in ${String(plan?.mode)} mode from turn ${String(plan?.rawFromSeq)}`,
        );
      },
    );
}
