// The states a service reports on /readyz, and the one rule every service derives its state by.

/**
 * Where a service is in its life, as /readyz reports it:
 *   starting    connecting, or its consumers have not joined their groups yet
 *   rebuilding  its Redis state was lost (or never built) and is being rebuilt from the topics
 *   ready       doing its job
 *   draining    stopping: the current batch finishes and commits, nothing new is taken
 *   stopped     disconnected
 */
export type ServiceState = 'starting' | 'rebuilding' | 'ready' | 'draining' | 'stopped';

/** Where a service's own run is: what `stateOf` combines with its rebuilds and its intake. */
export type ServicePhase = 'idle' | 'starting' | 'running' | 'draining' | 'stopped';

/**
 * A service's state from its phase, whether a rebuild is under way, and whether its intake (its
 * consumers) is ready: the one rule every service reports by.
 */
export function stateOf(phase: ServicePhase, rebuilding: boolean, intakeReady: boolean): ServiceState {
  switch (phase) {
    case 'idle':
    case 'starting':
      return rebuilding ? 'rebuilding' : 'starting';
    case 'running':
      if (rebuilding) return 'rebuilding';
      return intakeReady ? 'ready' : 'starting';
    case 'draining':
    case 'stopped':
      return phase;
  }
}
