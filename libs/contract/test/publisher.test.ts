import { describe, expect, it } from 'vitest';
import { createPublisher, defaultPublishTimeoutMs } from '@tidemark/contract';

// The publisher's options are checked before it connects to anything: these addresses are never used
// (the discard port, were they used, would refuse at once and fail the test with another error).
const nowhere = { brokers: ['127.0.0.1:9'], registryUrl: 'http://127.0.0.1:9', clientId: 'unit' };

describe('the publisher’s timeoutMs', () => {
  it('defaults to 30 s', () => {
    expect(defaultPublishTimeoutMs).toBe(30_000);
  });

  it.for([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 31, '30 s' as unknown as number])(
    'refuses %s before connecting, naming the option',
    async (timeoutMs) => {
      const error = await createPublisher({ ...nowhere, timeoutMs }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RangeError);
      expect((error as Error).message).toBe(
        `PublisherOptions.timeoutMs must be a whole number of milliseconds from 1 to 2147483647, got ${String(timeoutMs)}`,
      );
    },
  );
});
