// Prints the SHA-256 of a bearer token, for RESUME_TOKENS (`tenant:<hash>`) or RESUME_TOKENS_FILE.
// Usage: pnpm --filter @tidemark/resume hash-token <token>   (or the token on stdin, to keep it out of
// the shell history: `printf %s "$TOKEN" | pnpm --filter @tidemark/resume hash-token`).
import { hashToken } from './auth.js';

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').trim();
}

const token = process.argv[2] ?? (await readStdin());
if (token.length === 0) {
  process.stderr.write('usage: hash-token <token>  (or the token on stdin)\n');
  process.exitCode = 2;
} else {
  process.stdout.write(`${hashToken(token)}\n`);
}
