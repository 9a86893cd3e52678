import { Command } from 'commander';
import { resumeUrlOption, sessionArgument } from './args.js';
import type { Env } from './pipeline.js';

// `tidemark ui`: where the picture of a session is. The page is a route of the resume service (same
// tokens as resume), so this prints its address once the service answers, and says how to start it when
// it does not.

const write = (text: string) => process.stdout.write(`${text}\n`);
const note = (text: string) => process.stderr.write(`${text}\n`);

export function uiCommand(env: Env): Command {
  return new Command('ui')
    .description(
      "Print the address of a session's page (the L0 timeline, nodes by tier, marker decisions with their violations, revocations, regressions; live), served by the resume service with a resume token of the session's tenant (the demo's: demo-token-<tenant>).",
    )
    .argument('<tenant/session>', 'the session, e.g. acme/migration-lossy', sessionArgument)
    .addOption(resumeUrlOption(env))
    .action(async (ref: { tenantId: string; sessionId: string }, flags: { url: string }) => {
      const page = `${flags.url}/ui/sessions/${encodeURIComponent(ref.tenantId)}/${encodeURIComponent(ref.sessionId)}`;
      try {
        const response = await fetch(`${flags.url}/healthz`, { signal: AbortSignal.timeout(3_000) });
        if (!response.ok) throw new Error(`/healthz answered ${response.status}`);
      } catch (error) {
        note(
          `the resume service at ${flags.url} does not answer (${(error as Error).message}); start it with \`npm start -- --follow\`, or pass --url`,
        );
        process.exitCode = 3;
        return;
      }
      write(page);
      note(`open it in a browser and give it a resume token of tenant ${ref.tenantId}`);
    });
}
