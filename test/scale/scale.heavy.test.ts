// The scale simulation of `npm run scale` at one small size (docs/benchmarks.md, "Scale"): 30 simulated nodes
// with 5 Running leases each, a batch of whole lifecycles on top, then every pod retired. Every
// lifecycle completes, every lease ends Released, nothing Failed, and every history replays.
import { connectTest, temporalAddress, type TestTemporal } from '../harness/temporal';
import { expectReplayed } from '../harness/replay';
import { ScaleOptionsSchema } from './options';
import { formatTable } from './report';
import { runSize, type SizeFigures } from './scale';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const NODES = 30;
const LEASES_PER_NODE = 5;
const LIFECYCLES = 40;

let temporal: TestTemporal;
let figures: SizeFigures;

beforeAll(async () => {
  temporal = await connectTest('scale');
});
afterAll(async () => {
  await temporal.close();
});

test('30 simulated nodes: lifecycles complete, every lease Released, nothing Failed, histories replay', async () => {
  const options = ScaleOptionsSchema.parse({
    sizes: [NODES],
    leasesPerNode: LEASES_PER_NODE,
    lifecycles: LIFECYCLES,
    historySample: 10,
    nodeSample: 10,
    temporal: temporalAddress(),
  });
  const dir = mkdtempSync(join(tmpdir(), 'netlease-scale-'));
  figures = await runSize(options, NODES, dir, (line) => process.stdout.write(`${line}\n`));
  process.stdout.write(`${formatTable({ dir, seed: options.seed, sizes: [figures] }, options.inFlight)}\n`);
  expect(figures.leases).toBe(NODES * LEASES_PER_NODE);
  expect(figures.listing.allLeases).toBe(NODES * LEASES_PER_NODE);
  expect(figures.listing.perNodeLeases.every((n) => n === LEASES_PER_NODE)).toBe(true);
  expect(figures.reconcile.summary).toMatchObject({ leases: NODES * LEASES_PER_NODE, released: 0 });
  expect(figures.handOuts.blocks).toBe(2 * NODES); // one IPv4 and one IPv6 block per node
  expect(figures.throughput.lifecycles).toBe(LIFECYCLES);
  expect(figures.end).toMatchObject({ released: NODES * LEASES_PER_NODE + LIFECYCLES, badlyEnded: 0 });
  expect(figures.end.expected).toBe(NODES * LEASES_PER_NODE + LIFECYCLES);
  const replayed = await expectReplayed({ client: temporal.client, taskQueue: figures.taskQueue }, 1);
  expect(replayed).toBeGreaterThanOrEqual(figures.end.expected + NODES);
}, 180_000);
