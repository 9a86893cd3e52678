/**
 * A readiness check that pings a dependency (Redis, the broker) and answers by a deadline: true when
 * the ping resolved within `timeoutMs`, false when it failed or has not answered by then. A frozen
 * dependency (SIGSTOPped, or behind a dead network) keeps its connections open and answers nothing, so
 * without a deadline /readyz would hang, or report the last good state, while every stage stalls.
 *
 * At most one ping is in flight: a probe that comes while an earlier ping still waits waits on that
 * same ping (up to its own deadline), so a dependency that never answers does not collect one pending
 * command per probe.
 */
export function dependencyCheck(ping: () => Promise<unknown>, timeoutMs: number): () => Promise<boolean> {
  let inFlight: Promise<boolean> | null = null;
  return async () => {
    inFlight ??= settle(ping).finally(() => {
      inFlight = null;
    });
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), timeoutMs);
    });
    try {
      return await Promise.race([inFlight, late]);
    } finally {
      clearTimeout(timer);
    }
  };
}

/** True once the ping resolves, false if it throws or rejects; never rejects itself. */
async function settle(ping: () => Promise<unknown>): Promise<boolean> {
  try {
    await ping();
    return true;
  } catch {
    return false;
  }
}

/** Something that answers a ping: an ioredis client, a Bus. */
export interface Pingable {
  ping(): Promise<unknown>;
}

/**
 * A service's dependency checks, by name: each pings the connection the getter returns now, with the
 * deadline; a connection not made yet (the service not running yet) is not ready.
 */
export function connectionChecks(
  connections: Readonly<Record<string, () => Pingable | null | undefined>>,
  timeoutMs: number,
): Record<string, () => Promise<boolean>> {
  return Object.fromEntries(
    Object.entries(connections).map(([name, current]) => [
      name,
      dependencyCheck(() => current()?.ping() ?? Promise.reject(new Error('not started')), timeoutMs),
    ]),
  );
}
