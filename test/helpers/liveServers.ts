// The in-process test servers not stopped yet, so that a PostgreSQL test schema is never dropped
// under one. freshSchema (test/helpers/postgres.ts) drops its schema in an after-hook registered
// before the test's own, and node:test runs after-hooks in the order they were registered: the
// schema went first, and a server still on it lost its leadership lease ("relation leader_lease
// does not exist") and stepped down, exiting the whole test file with 70 (src/app/leadership.ts).

interface LiveServer {
  databaseUrl: string | null;
  /** Idempotent: the test's own stop after this one finds it stopped. */
  close(): Promise<void>;
}

const live = new Set<LiveServer>();

/** Tracks a started server; the returned function untracks it once it has stopped. */
export function trackServer(server: LiveServer): () => void {
  live.add(server);
  return () => live.delete(server);
}

/** Stops every in-process server whose journal is on the schema `schema` (its random name). */
export async function stopServersOnSchema(schema: string): Promise<void> {
  const on = [...live].filter((s) => s.databaseUrl?.includes(schema) === true);
  await Promise.all(on.map(async (s) => {
    await s.close();
    live.delete(s);
  }));
}
