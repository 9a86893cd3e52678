#!/usr/bin/env -S npx tsx
import { replayCommand } from './replay-command.js';

// `tidemark replay` on its own: `pnpm --filter @tidemark/compactor replay -- --help`.
await replayCommand().name('tidemark-replay').parseAsync(process.argv);
