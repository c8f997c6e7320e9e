// `npm run scale -- --sizes 100,300,1000 --leases-per-node 20 [--seed N] [--server production | --temporal host:port]`:
// the scale simulation; prints the table, writes figures.json into the run dir, exit 1 unless
// every lease was Released and no workflow ended badly.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from '../soak/options';
import { ScaleOptionsSchema } from './options';
import { formatTable, isClean } from './report';
import { runScale } from './scale';

async function main(): Promise<void> {
  const options = ScaleOptionsSchema.parse(parseArgs(process.argv.slice(2)));
  const report = await runScale(options, (line) => console.log(line));
  const table = formatTable(report, options.inFlight);
  writeFileSync(join(report.dir, 'table.md'), `${table}\n`);
  console.log(table);
  console.log(`figures: ${join(report.dir, 'figures.json')}`);
  process.exit(isClean(report) ? 0 : 1);
}

main().catch((err: unknown) => {
  console.error(`scale: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exit(2);
});
