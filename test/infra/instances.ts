/**
 * Waits until every instance of a service says it is ready (a Service's `state`); throws, naming each
 * instance's state, when one is not by the deadline. For tests that run several instances of one group.
 */
export async function untilReady(
  instances: readonly { readonly state: string }[],
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (instances.some((instance) => instance.state !== 'ready')) {
    if (Date.now() > deadline) {
      throw new Error(`not ready after ${timeoutMs} ms: ${instances.map((i) => i.state).join(', ')}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
