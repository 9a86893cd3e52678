import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runDemo } from '@tidemark/cli';
import { hashToken } from '@tidemark/resume';
import { loadScenario } from '@tidemark/scenarios';
import { createLogger } from '@tidemark/service';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { e2ePipeline, runTidemark } from './pipeline.js';

// The session page in headless Chromium (Debian's chromium, driven by playwright-core), on the whole
// pipeline: the page is opened before the lossy migration demo is played, follows it live to its
// decisions, shows the invalid marker with its violations, follows a violation to its L0 turn by
// keyboard, and is saved as a screenshot (.local/test-artifacts/session-page.png; with
// TIDEMARK_DOCS_SCREENSHOT=1, also docs/session-page.png for the README).

const root = fileURLToPath(new URL('../..', import.meta.url));
const artifact = join(root, '.local/test-artifacts/session-page.png');
const token = 'session-page-token';
const otherToken = 'session-page-other-token';
const lossy = loadScenario('migration').filter((s) => s.sessionId === 'migration-lossy');
const { tenantId, sessionId } = lossy[0]!;

/** Debian's chromium: CHROMIUM_PATH, else the one on PATH, else /usr/bin/chromium. */
function chromiumPath(): string {
  if (process.env.CHROMIUM_PATH !== undefined) return process.env.CHROMIUM_PATH;
  try {
    return execFileSync('which', ['chromium'], { encoding: 'utf8' }).trim();
  } catch {
    if (existsSync('/usr/bin/chromium')) return '/usr/bin/chromium';
    throw new Error('chromium is not installed: run scripts/bootstrap.sh (apt-get install chromium)');
  }
}

/** The seq of the first turn with a change of this type about this id, from the demo's own turns. */
function seqOf(type: string, id: string): number {
  const turn = lossy[0]!.turns.find((t) =>
    t.changes.some(
      (c) =>
        c.type === type &&
        (c.type === 'item_disposed' ? c.itemKey : c.type === 'artifact_recorded' ? c.path : c.itemId) === id,
    ),
  );
  if (turn === undefined) throw new Error(`no ${type} of ${id} in the demo`);
  return turn.seq;
}

let e2e: Awaited<ReturnType<typeof e2ePipeline>>;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  e2e = await e2ePipeline(lossy, {
    RESUME_TOKENS: `${tenantId}:${hashToken(token)},other:${hashToken(otherToken)}`,
  });
  browser = await chromium.launch({ executablePath: chromiumPath(), headless: true, args: ['--no-sandbox'] });
  page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await e2e?.stop();
});

describe('a picture of a session', () => {
  it('serves the view only with a token of the session’s tenant', async () => {
    const view = `${e2e.pipeline.url}/v1/sessions/${tenantId}/${sessionId}/view`;
    expect((await fetch(view)).status).toBe(401);
    const other = await fetch(view, { headers: { authorization: `Bearer ${otherToken}` } });
    expect(other.status).toBe(403);
    expect(await other.json()).toEqual({
      code: 'forbidden',
      message: "the token may not read this tenant's sessions",
    });
    const page = await fetch(`${e2e.pipeline.url}/ui/sessions/${tenantId}/${sessionId}`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toMatch(/script-src 'sha256-/);
    const openapi = (await (await fetch(`${e2e.pipeline.url}/openapi.json`)).json()) as { paths: object };
    expect(Object.keys(openapi.paths)).toContain('/v1/sessions/{tenantId}/{sessionId}/view');
  });

  it('is where `tidemark ui` says, which says so only when the resume service answers', async () => {
    const ui = await runTidemark(e2e, ['ui', `${tenantId}/${sessionId}`, '--url', `${e2e.pipeline.url}/`]);
    expect(ui.code, ui.stderr).toBe(0);
    expect(ui.stdout.trim()).toBe(
      `${e2e.pipeline.url}/ui/sessions/${tenantId}/${encodeURIComponent(sessionId)}`,
    );
    const down = await runTidemark(e2e, ['ui', `${tenantId}/${sessionId}`, '--url', 'http://127.0.0.1:9']);
    expect(down.code).toBe(3);
    expect(down.stderr).toContain('does not answer');
  });

  it('follows the lossy demo live, shows its invalid marker, and follows a violation to its turn', async () => {
    const ui = await runTidemark(e2e, ['ui', `${tenantId}/${sessionId}`, '--url', e2e.pipeline.url]);
    await page.goto(ui.stdout.trim());
    // A wrong token is refused, and asked for again.
    await page.fill('#token', 'not-a-token');
    await page.press('#token', 'Enter');
    await page.waitForSelector('#auth-error:has-text("Refused")');
    await page.fill('#token', token);
    await page.press('#token', 'Enter');
    await page.waitForSelector('#auth', { state: 'hidden' });
    // Before the demo plays, the page waits for the session; it is not reloaded from here on.
    await page.waitForSelector('#live:has-text("Waiting for the session")');

    await runDemo(e2e.pipeline, {
      env: e2e.env,
      logger: createLogger('e2e', 'warn'),
      scenarios: lossy,
      progress: () => undefined,
      settleTimeoutMs: 90_000,
    });

    const lastSeq = lossy[0]!.turns.at(-1)!.seq;
    await page.waitForSelector(`#turn-${lastSeq}`, { timeout: 30_000 });
    // Settled: the strict repair of the digest is emitted and resumes follow it.
    await page.waitForSelector('#resume:has-text("digest")', { timeout: 30_000 });

    const invalid = page.locator('.decision', { hasText: '✗ invalid' });
    const first = invalid.filter({ hasText: 'L1' }).filter({ hasText: 'closure' }).first();
    await expect.poll(() => first.count()).toBe(1);
    const text = await first.innerText();
    expect(text).toContain('closure');
    expect(text).toContain('call:read_file-40');
    expect(text).toContain('retention');
    expect(text).toContain('approach:add-column-backfill');
    expect(text).toContain('artifacts');
    expect(text).toContain('migrations/003_down.sql');
    expect(await page.locator('.decision', { hasText: '✓ emitted' }).count()).toBeGreaterThan(0);
    expect(await page.locator('#tiers h3').allInnerTexts()).toEqual(['L2', 'L1']);
    expect(await page.locator('#resume').innerText()).toMatch(/Frame\s+L2 node/);

    // The retention violation, followed by keyboard: the focus lands on the turn that rejected the approach.
    const disposedAt = seqOf('item_disposed', 'approach:add-column-backfill');
    const link = first.locator('a.violation', { hasText: 'approach:add-column-backfill' });
    expect(await link.getAttribute('href')).toBe(`#turn-${disposedAt}`);
    await link.focus();
    await page.keyboard.press('Enter');
    await expect
      .poll(() => page.evaluate<unknown>('document.activeElement && document.activeElement.id'))
      .toBe(`turn-${disposedAt}`);
    const row = page.locator(`#turn-${disposedAt}`);
    expect(await row.innerText()).toContain('approach:add-column-backfill');
    // In the viewport (a bounding box is relative to it).
    const box = await row.boundingBox();
    const viewport = page.viewportSize()!;
    const inView = box !== null && box.y >= 0 && box.y + box.height <= viewport.height;
    expect(inView).toBe(true);
    mkdirSync(dirname(artifact), { recursive: true });
    await page.screenshot({ path: artifact.replace(/\.png$/, '-turn.png') });
    expect(page.url()).toMatch(new RegExp(`#turn-${disposedAt}$`));

    // The closure violation links the turn that opened the still-open call.
    expect(await first.locator('a.violation', { hasText: 'call:read_file-40' }).getAttribute('href')).toBe(
      `#turn-${seqOf('item_opened', 'call:read_file-40')}`,
    );

    // The focus survives the page's polls (each re-render keeps the focused element's id).
    await page.waitForTimeout(4_500);
    expect(await page.evaluate<unknown>('document.activeElement && document.activeElement.id')).toBe(
      `turn-${disposedAt}`,
    );

    // The picture: the resume, the nodes by tier and the first decisions.
    await page.evaluate('window.scrollTo(0, 0)');
    mkdirSync(dirname(artifact), { recursive: true });
    await page.screenshot({ path: artifact, fullPage: false });
    expect(statSync(artifact).size).toBeGreaterThan(10_000);
    await page.screenshot({ path: artifact.replace(/\.png$/, '-full.png'), fullPage: true });
    process.stdout.write(`session page screenshot: ${artifact}\n`);
    if (process.env.TIDEMARK_DOCS_SCREENSHOT === '1')
      copyFileSync(artifact, join(root, 'docs/session-page.png'));
  }, 240_000);
});
