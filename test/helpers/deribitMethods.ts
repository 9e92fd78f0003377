// Reads ../shared/reference/deribit-methods.md (Deribit's published methods, one line each) and checks
// an answer against a method's documented result: every field present, with the documented JSON type.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from './server.ts';

const REFERENCE = 'shared/reference/deribit-methods.md';

/**
 * Where the reference sits: beside the clone (CI checks shared/ out next to it), or, in a git
 * worktree (whose `.git` is a file naming the main clone's git directory), beside the main clone.
 */
function referencePath(): string {
  const beside = path.resolve(ROOT, '..', REFERENCE);
  if (existsSync(beside)) return beside;
  try {
    const gitdir = /^gitdir: (.+)$/m.exec(readFileSync(path.join(ROOT, '.git'), 'utf8'))?.[1];
    // <main clone>/.git/worktrees/<name>
    if (gitdir !== undefined) return path.resolve(gitdir.trim(), '../../../..', REFERENCE);
  } catch {
    // .git is a directory (a plain clone) or absent
  }
  return beside;
}

export const DERIBIT_METHODS_PATH = referencePath();

/** A documented result: a scalar type, an object of fields, or an array of such objects. */
export type Shape = { kind: 'type'; type: string } | { kind: 'object'; fields: Field[] } | { kind: 'array'; of: Shape } | { kind: 'none' };

export interface Field {
  name: string;
  shape: Shape;
}

export interface DocumentedMethod {
  name: string;
  section: string;
  result: Shape;
}

/** Splits at `, ` outside braces and brackets. */
function splitTop(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const ch = s[i];
    if (ch === '{' || ch === '[') depth++;
    else if (ch === '}' || ch === ']') depth--;
    else if (ch === ',' && depth === 0) {
      out.push(s.slice(start, i).trim());
      start = i + 1;
    }
  }
  const last = s.slice(start).trim();
  if (last !== '') out.push(last);
  return out;
}

function parseFields(s: string): Field[] {
  const fields: Field[] = [];
  for (const part of splitTop(s)) {
    const brace = part.indexOf('{');
    const colon = part.indexOf(':');
    if (brace > 0 && (colon < 0 || brace < colon)) {
      fields.push({ name: part.slice(0, brace), shape: { kind: 'object', fields: parseFields(part.slice(brace + 1, -1)) } });
    } else if (colon > 0) {
      fields.push({ name: part.slice(0, colon), shape: { kind: 'type', type: part.slice(colon + 1) } });
    }
  }
  // `btc(example)`: a key that stands for any currency, not a field name
  return fields.filter((f) => !f.name.includes('('));
}

export function parseResult(s: string | undefined): Shape {
  if (s === undefined || s.trim() === '') return { kind: 'none' };
  const t = s.trim();
  if (t.startsWith('[') && t.endsWith(']')) return { kind: 'array', of: { kind: 'object', fields: parseFields(t.slice(1, -1)) } };
  if (!t.includes(':') && !t.includes('{')) return { kind: 'type', type: t };
  return { kind: 'object', fields: parseFields(t) };
}

/** Every documented method, or null when the reference is not beside the clone. */
export function readDeribitMethods(file = DERIBIT_METHODS_PATH): DocumentedMethod[] | null {
  if (!existsSync(file)) return null;
  const out: DocumentedMethod[] = [];
  let section = '';
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const h = /^## (.+?) \(\d+\)$/.exec(line);
    if (h) section = h[1]!;
    const m = /^- \*\*([^*]+)\*\*(.*)$/.exec(line);
    if (!m) continue;
    const arrow = m[2]!.indexOf(' -> ');
    out.push({ name: m[1]!, section, result: parseResult(arrow < 0 ? undefined : m[2]!.slice(arrow + 4)) });
  }
  return out;
}

/** Whether a value has a documented scalar type (`integer`, `string[]`, `a|b`, `number or market_price`...). */
export function hasType(v: unknown, type: string): boolean {
  if (type.includes(' or ')) return type.split(' or ').some((t) => hasType(v, t.trim()));
  if (type.endsWith('[]')) return Array.isArray(v) && (type === '?[]' || v.every((x) => hasType(x, type.slice(0, -2))));
  switch (type) {
    case 'integer':
      return Number.isInteger(v);
    case 'number':
      return typeof v === 'number' && Number.isFinite(v);
    case 'string':
      return typeof v === 'string';
    case 'boolean':
      return typeof v === 'boolean';
    case 'object':
      return v !== null && typeof v === 'object' && !Array.isArray(v);
    case 'enum':
      return typeof v === 'string';
    case 'ok':
      return v === 'ok';
    case '?':
      return true;
  }
  // an enumeration `a|b|c` (or one literal, such as `bearer`): the value is one of them
  return (typeof v === 'string' || typeof v === 'number') && type.split('|').includes(String(v));
}

/**
 * What in `v` differs from `shape`: `missing path` and `type path: expected, got`. Deribit sends null
 * where a price or text has no value yet (a book's `last` before any trade), so null passes for
 * scalar fields. An empty array is recorded as `empty path` (nothing to check inside it).
 */
export function shapeDiffs(v: unknown, shape: Shape, at = '$'): string[] {
  switch (shape.kind) {
    case 'none':
      return [];
    case 'type':
      return hasType(v, shape.type) ? [] : [`type ${at}: ${shape.type}, got ${JSON.stringify(v)?.slice(0, 60)}`];
    case 'array':
      if (!Array.isArray(v)) return [`type ${at}: array, got ${JSON.stringify(v)?.slice(0, 60)}`];
      if (v.length === 0) return [`empty ${at}`];
      return v.flatMap((x, i) => shapeDiffs(x, shape.of, `${at}[${i}]`)).filter((d, i, all) => all.indexOf(d) === i);
    case 'object': {
      // Deribit documents some arrays of objects as `name{...}` (a list of trades, of settlements)
      if (Array.isArray(v)) return shapeDiffs(v, { kind: 'array', of: shape }, at);
      if (v === null || typeof v !== 'object') return [`type ${at}: object, got ${JSON.stringify(v)?.slice(0, 60)}`];
      const o = v as Record<string, unknown>;
      const out: string[] = [];
      for (const f of shape.fields) {
        if (!(f.name in o)) out.push(`missing ${at}.${f.name}`);
        else if (o[f.name] === null && f.shape.kind === 'type') continue;
        else out.push(...shapeDiffs(o[f.name], f.shape, `${at}.${f.name}`));
      }
      return out;
    }
  }
}

/** A diff with array indexes removed, so one finding stands for every element. */
export function diffKey(d: string): string {
  return d.replace(/\[\d+\]/g, '[]').replace(/, got .*$/, '');
}
