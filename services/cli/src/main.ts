import { tidemarkProgram } from './commands.js';

// `pnpm tidemark <command>`; `pnpm tidemark --help` lists the commands.
process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';
try {
  await tidemarkProgram().parseAsync(process.argv);
} catch (error) {
  process.stderr.write(`tidemark: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
}
