import { InvalidArgumentError, Option } from 'commander';

// Argument parsers the commands share.

/** `<tenant>/<session>`: the tenant is up to the first slash, the session is the rest. */
export function sessionArgument(value: string): { tenantId: string; sessionId: string } {
  const slash = value.indexOf('/');
  if (slash <= 0 || slash === value.length - 1) {
    throw new InvalidArgumentError('expected <tenant>/<session>, e.g. acme/migration-strict');
  }
  return { tenantId: value.slice(0, slash), sessionId: value.slice(slash + 1) };
}

/** `--url`: the resume API a command asks (TIDEMARK_RESUME_URL, else the local pipeline's port). */
export function resumeUrlOption(env: { readonly TIDEMARK_RESUME_URL?: string | undefined }): Option {
  const withoutSlash = (url: string) => url.replace(/\/+$/, '');
  return new Option('--url <url>', 'the resume API (default: TIDEMARK_RESUME_URL, else the local pipeline)')
    .default(withoutSlash(env.TIDEMARK_RESUME_URL ?? 'http://127.0.0.1:7400'))
    .argParser(withoutSlash);
}

export const integer = (min: number) => (value: string) => {
  const parsed = Number(value);
  if (!Number.isSafeInteger(parsed) || parsed < min)
    throw new InvalidArgumentError(`must be an integer ≥ ${min}`);
  return parsed;
};
