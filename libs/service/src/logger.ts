import { pino, type Logger, type LevelWithSilent } from 'pino';

export type { Logger } from 'pino';

/**
 * A structured JSON logger for one service. Every line carries the service name, so the logs of
 * services run in one process (`pnpm start`) still tell who said what.
 */
export function createLogger(service: string, level: LevelWithSilent = 'info'): Logger {
  return pino({
    name: service,
    level,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
  });
}
