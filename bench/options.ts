import { parseArgs, type ParseArgsConfig } from 'node:util';

// The benches' command lines: --help from the same table the parser reads, and an option the bench does
// not know, or a value out of range, as one line on stderr and exit code 2, before anything touches the
// stack.

type Spec = Record<string, { type: 'string'; default: string } | { type: 'boolean'; default: boolean }> &
  ParseArgsConfig['options'];

export interface CommandLine<O extends Spec> {
  /** `bench/<name>.ts`, for the messages. */
  readonly script: string;
  /** The usage line's invocation, e.g. `pnpm bench:pipeline`. */
  readonly invocation: string;
  /** Lines under the usage line. */
  readonly about: readonly string[];
  readonly options: O;
  readonly described: Record<keyof O, string>;
}

export function usage<O extends Spec>(line: CommandLine<O>): string {
  const rows = Object.entries(line.options).map(([name, option]) => {
    // A string option without a default is a path (--cpu-prof <dir>); the others are numbers.
    const pathLike = option.type === 'string' && option.default === '';
    const flag = `${'short' in option ? `-${option.short}, ` : ''}--${name}${option.type === 'string' ? (pathLike ? ' <dir>' : ' <n>') : ''}`;
    const text = line.described[name as keyof O];
    return [
      flag,
      option.type === 'string' && !pathLike ? `${text} (default ${option.default})` : text,
    ] as const;
  });
  const width = Math.max(...rows.map(([flag]) => flag.length));
  return [
    `Usage: ${line.invocation} [options]   (= pnpm exec tsx ${line.script} [options])`,
    '',
    ...line.about,
    '',
    'Options:',
    ...rows.map(([flag, text]) => `  ${flag.padEnd(width)}  ${text}`),
    '',
  ].join('\n');
}

export function refuse(script: string, message: string): never {
  process.stderr.write(`${script}: ${message} (--help lists the options)\n`);
  process.exit(2);
}

/** Every option has a default, so every value is there. */
type Values<O extends Spec> = { -readonly [K in keyof O]: O[K]['type'] extends 'boolean' ? boolean : string };

/** The parsed flags; prints the usage and exits 0 on --help, exits 2 on a bad command line. */
export function readFlags<const O extends Spec>(line: CommandLine<O>, args: string[]): Values<O> {
  let values;
  try {
    values = parseArgs({ args, options: line.options, strict: true, allowPositionals: false }).values;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const message = error instanceof Error ? error.message : String(error);
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
      refuse(line.script, `unknown option ${/'[^']*'/.exec(message)?.[0] ?? message}`);
    }
    if (code?.startsWith('ERR_PARSE_ARGS_') === true) refuse(line.script, message.split('. ')[0] ?? message);
    throw error;
  }
  if ((values as { help?: boolean }).help === true) {
    process.stdout.write(usage(line));
    process.exit(0);
  }
  return values as Values<O>;
}

/** An integer option ≥ min, or exit 2 naming it. */
export function integer(script: string, name: string, raw: string, min = 1): number {
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < min) refuse(script, `--${name} must be an integer ≥ ${min}`);
  return value;
}
