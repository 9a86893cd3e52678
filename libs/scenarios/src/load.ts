import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expandTranscript, type ScenarioSession } from './transcript.js';

/** Where the demo sessions live: `test/fixtures/` at the repository root. */
export const fixturesDir = resolve(fileURLToPath(new URL('.', import.meta.url)), '../../../test/fixtures');

/** Every transcript in the directory (sorted by file name), expanded into its sessions. */
export function loadScenarios(dir = fixturesDir): ScenarioSession[] {
  return readdirSync(dir)
    .filter((file) => file.endsWith('.json'))
    .sort()
    .flatMap((file) => expandTranscript(JSON.parse(readFileSync(join(dir, file), 'utf8')) as unknown, file));
}

/** One transcript by name (its file is `<name>.json`). */
export function loadScenario(name: string, dir = fixturesDir): ScenarioSession[] {
  return expandTranscript(
    JSON.parse(readFileSync(join(dir, `${name}.json`), 'utf8')) as unknown,
    `${name}.json`,
  );
}
