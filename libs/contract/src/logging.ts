import { logLevel, type logCreator } from 'kafkajs';
import type { Logger } from 'pino';

// kafkajs logs onto the service's pino logger, so one stream tells the whole story. kafkajs's own level
// follows pino's: a pino at warn gets kafkajs's warnings and errors only.

export function kafkaLogLevel(logger: Logger | undefined): logLevel {
  if (logger === undefined) return logLevel.NOTHING;
  switch (logger.level) {
    case 'trace':
    case 'debug':
      return logLevel.DEBUG;
    case 'info':
      return logLevel.INFO;
    case 'warn':
      return logLevel.WARN;
    case 'error':
    case 'fatal':
      return logLevel.ERROR;
    case 'silent':
    default:
      return logLevel.NOTHING;
  }
}

export function pinoLogCreator(logger: Logger): logCreator {
  const kafkaLogger = logger.child({ component: 'kafkajs' });
  return () =>
    ({ namespace, level, log }) => {
      const { message, timestamp: _timestamp, logger: _name, ...extra } = log;
      const fields = { namespace, ...extra };
      switch (level) {
        case logLevel.ERROR:
          kafkaLogger.error(fields, message);
          break;
        case logLevel.WARN:
          kafkaLogger.warn(fields, message);
          break;
        case logLevel.INFO:
          kafkaLogger.info(fields, message);
          break;
        case logLevel.DEBUG:
          kafkaLogger.debug(fields, message);
          break;
        case logLevel.NOTHING:
          break;
        default:
          kafkaLogger.info(fields, message);
      }
    };
}
