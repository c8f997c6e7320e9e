// `npm run soak -- --seed 7 --lifecycles 10000 --nodes 4 --minutes 60 --faults kill-agent,...`:
// a seeded soak against the real stack; exit 1 on any violation (the report says how to reproduce).
import { rmSync } from 'node:fs';
import { parseArgs, SoakOptionsSchema } from './options';
import { formatReport, isClean } from './report';
import { runSoak } from './soak';

async function main(): Promise<void> {
  const options = SoakOptionsSchema.parse({
    minutes: 60,
    lifecycles: 10_000,
    ...parseArgs(process.argv.slice(2)),
  });
  const report = await runSoak(options, (line) => console.log(line));
  console.log(formatReport(report));
  const clean = isClean(report);
  if (clean && !options.dir) rmSync(report.dir, { recursive: true, force: true });
  process.exit(clean ? 0 : 1);
}

main().catch((err: unknown) => {
  console.error(`soak: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exit(2);
});
