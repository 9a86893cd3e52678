import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const churn = fileURLToPath(new URL('./fixtures/heap-churn.ts', import.meta.url));

/** The peak heap (MiB) of the churn fixture in a process of its own, with this growth percent. */
async function peakHeap(percent: number): Promise<number> {
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', churn, String(percent)]);
  return Number(stdout.trim());
}

describe('limitHeapGrowth', () => {
  it(
    'keeps a churning process far below the heap V8 lets it reach on its own',
    { timeout: 60_000 },
    async () => {
      // The same churn: about 30 MiB live at any time, a few hundred MiB allocated and dropped.
      const [own, limited] = await Promise.all([peakHeap(0), peakHeap(25)]);
      expect(own).toBeGreaterThan(150);
      expect(limited).toBeLessThan(own * 0.6);
    },
  );
});
