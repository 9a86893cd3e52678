import type { ArtifactAction } from '@tidemark/core';
import { isNonEmptyString, isRecord, parseJson, type JsonRecord } from './json.js';
import { contentDigest } from './turns.js';

// apply_patch: the files a patch creates, modifies or deletes.
//
// Chat Completions has no built-in apply_patch tool; agents declare it as a function (GPT-4.1 prompting
// guide: one string parameter `input` holding a V4A patch) or a custom tool (free-form input holding the
// patch). The Responses API's apply_patch_call carries an `operation` {type: create_file | update_file |
// delete_file, path, diff} (https://platform.openai.com/docs/guides/tools-apply-patch); a function whose
// arguments take that shape is read the same way.

/** A file an apply_patch call writes. */
export interface FileChange {
  readonly path: string;
  readonly action: ArtifactAction;
  readonly digest: string | null;
}

/**
 * The files an apply_patch call's arguments write, in patch order: a V4A patch (free-form, a JSON
 * string, or an `input` or `patch` field holding one) or an operation. Null when they are neither.
 */
export function patchFiles(args: string): readonly FileChange[] | null {
  const value = parseJson(args);
  if (value === undefined) return v4aFiles(args); // a custom tool's free-form patch
  if (typeof value === 'string') return v4aFiles(value);
  if (!isRecord(value)) return null;
  if (typeof value.input === 'string') return v4aFiles(value.input);
  if (typeof value.patch === 'string') return v4aFiles(value.patch);
  if (isRecord(value.operation)) return operationFiles(value.operation);
  if (typeof value.operation === 'string') return operationFiles({ ...value, type: value.operation });
  return operationFiles(value);
}

/**
 * A create_file diff gives the whole file when every line is an added line: the V4A create syntax,
 * read as the Agents SDK's applyDiff(…, 'create') reads it (lines without their '+', joined by '\n',
 * a final empty line dropped). Null for anything else: it is not the full content.
 */
export function createdContent(diff: string): string | null {
  const lines = diff.split(/\r?\n/);
  return addedContent(lines.at(-1) === '' ? lines.slice(0, -1) : lines);
}

function operationFiles(operation: JsonRecord): readonly FileChange[] | null {
  const { type, path, diff } = operation;
  if (!isNonEmptyString(path)) return null;
  switch (type) {
    case 'create_file': {
      const content = typeof diff === 'string' ? createdContent(diff) : null;
      return content === null ? null : [{ path, action: 'created', digest: contentDigest(content) }];
    }
    case 'update_file':
      return [{ path, action: 'modified', digest: null }];
    case 'delete_file':
      return [{ path, action: 'deleted', digest: null }];
    default:
      return null;
  }
}

const addFile = '*** Add File: ';
const updateFile = '*** Update File: ';
const deleteFile = '*** Delete File: ';
const moveTo = '*** Move to: ';
const endPatch = '*** End Patch';
const sectionStarts = [addFile, updateFile, deleteFile, endPatch];

/**
 * The files of a V4A patch (`*** Begin Patch` … `*** End Patch`), in patch order; null when it is not
 * one. An added file's content is in the patch in full, so it gets a digest; an update holds only hunks
 * (digest null); a move is the old path deleted and the new one modified.
 */
function v4aFiles(patch: string): readonly FileChange[] | null {
  const lines = patch.split(/\r?\n/);
  let index = lines.findIndex((line) => line.trim() === '*** Begin Patch') + 1;
  if (index === 0) return null;
  const files: FileChange[] = [];
  while (index < lines.length) {
    const line = lines[index]!;
    if (line.trim() === endPatch) return files;
    if (line.trim() === '') {
      index += 1;
      continue;
    }
    const end = nextSection(lines, index + 1);
    const section = sectionFiles(line, lines.slice(index + 1, end));
    if (section === null) return null;
    files.push(...section);
    index = end;
  }
  return null; // no End Patch: a patch cut short is not read
}

function sectionFiles(header: string, body: readonly string[]): readonly FileChange[] | null {
  if (header.startsWith(addFile)) {
    const content = addedContent(body);
    const path = header.slice(addFile.length).trim();
    return content === null || path === ''
      ? null
      : [{ path, action: 'created', digest: contentDigest(content) }];
  }
  if (header.startsWith(updateFile)) {
    const path = header.slice(updateFile.length).trim();
    const target = body[0]?.startsWith(moveTo) === true ? body[0].slice(moveTo.length).trim() : null;
    if (path === '' || target === '') return null;
    return target === null
      ? [{ path, action: 'modified', digest: null }]
      : [
          { path, action: 'deleted', digest: null },
          { path: target, action: 'modified', digest: null },
        ];
  }
  if (header.startsWith(deleteFile)) {
    const path = header.slice(deleteFile.length).trim();
    return path === '' ? null : [{ path, action: 'deleted', digest: null }];
  }
  return null;
}

function nextSection(lines: readonly string[], from: number): number {
  const found = lines.findIndex(
    (line, index) => index >= from && sectionStarts.some((start) => line.startsWith(start)),
  );
  return found === -1 ? lines.length : found;
}

/**
 * An added file's content: every line starts with '+'; the content is the lines without it, joined by
 * newlines, as OpenAI's reference apply_patch.py and the Agents SDK's applyDiff (create mode) read it.
 */
function addedContent(lines: readonly string[]): string | null {
  if (!lines.every((line) => line.startsWith('+'))) return null;
  return lines.map((line) => line.slice(1)).join('\n');
}
