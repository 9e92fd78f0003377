import { buildJournal } from '../restartBench.ts';
import { existsSync } from 'node:fs';
const dir = process.argv[2]!;
if (!existsSync(dir + '/done')) {
  const r = await buildJournal(dir);
  console.log(r);
  (await import('node:fs')).writeFileSync(dir + '/done', '1');
}
process.exit(0);
