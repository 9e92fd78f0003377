// PostgreSQL for tests: a schema of its own per test (so test files can run in parallel against one
// database), reached through a connection string whose search_path points at it. When the server
// is not reachable, the test is skipped with the reason printed, never passed in silence.
import type { TestContext } from 'node:test';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { stopServersOnSchema } from './liveServers.ts';

/** The database the tests use; STRIKEBOOK_TEST_DATABASE_URL overrides it. */
export const TEST_DATABASE_URL = process.env.STRIKEBOOK_TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';

/** `url` with libpq's `options` parameter set to `-c name=value` for each setting (node-postgres sends it at startup). */
export function withSettings(url: string, settings: Record<string, string>): string {
  const u = new URL(url);
  u.searchParams.set('options', Object.entries(settings).map(([k, v]) => `-c ${k}=${v}`).join(' '));
  return u.toString();
}

export interface TestSchema {
  name: string;
  /** The test database URL with search_path set to this schema. */
  url: string;
  /** A connection string to the same schema with extra server settings (e.g. synchronous_commit). */
  urlWith(settings: Record<string, string>): string;
  /** Runs one statement on a connection of the test's own (not the journal's). */
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]): Promise<R[]>;
}

/**
 * Creates a fresh schema for test `t` and drops it when the test ends; null after skipping `t`
 * when PostgreSQL cannot be reached.
 */
export async function freshSchema(t: TestContext): Promise<TestSchema | null> {
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL, connectionTimeoutMillis: 3_000 });
  admin.on('error', () => undefined); // a dropped test connection fails the next query instead
  try {
    await admin.connect();
  } catch (e) {
    t.skip(`PostgreSQL not reachable at ${TEST_DATABASE_URL}: ${e instanceof Error ? e.message : String(e)}`);
    return null;
  }
  const name = `strikebook_test_${randomBytes(6).toString('hex')}`;
  await admin.query(`CREATE SCHEMA ${name}`);
  t.after(async () => {
    try {
      // this hook runs before the test's own (registered after it): its servers stop first
      await stopServersOnSchema(name);
      await admin.query(`DROP SCHEMA ${name} CASCADE`);
    } finally {
      await admin.end();
    }
  });
  const urlWith = (settings: Record<string, string>) => withSettings(TEST_DATABASE_URL, { search_path: name, ...settings });
  return {
    name,
    url: urlWith({}),
    urlWith,
    async query(text, values) {
      return (await admin.query(text, values)).rows;
    },
  };
}
