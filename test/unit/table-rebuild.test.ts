// A table rebuilt from the evidence (issue 25 item 2): what a live lease holds wins over what the
// table says; an address two live leases hold is reported, never silently given to one of them.
import { emptyTable } from '../../domain/allocation';
import { PoolSpecSchema } from '../../domain/config';
import {
  rebuildBlockTable,
  rebuildNodeTables,
  type NodeEvidence,
  type NodeTableState,
} from '../../domain/table-rebuild';

const spec = PoolSpecSchema.parse({ name: 'p', cidrs: ['198.18.0.0/24'], blockSize: { ipv4: 29 } });
const evidence = (over: Partial<NodeEvidence>): NodeEvidence => ({
  pools: [spec],
  blocks: [],
  leases: [],
  closed: [],
  cooldownMs: 1000,
  ...over,
});
const empty = (): NodeTableState => ({ incarnation: 'u1', pools: {}, tables: {} });

test('an empty table gets the pools blocks and every live lease its own addresses', () => {
  const state = empty();
  const report = rebuildNodeTables(
    state,
    evidence({
      blocks: [{ pool: 'p', cidr: '198.18.0.0/29', incarnation: 'u1' }],
      leases: [
        { owner: 'lease/a/eth0', podUid: 'a', pool: 'p', addresses: ['198.18.0.2'] },
        { owner: 'lease/b/eth0', podUid: 'b', pool: 'p', addresses: ['198.18.0.9'] }, // a block the pool lost
        { owner: 'lease/c/eth0', podUid: 'c', pool: 'p', addresses: [] }, // still producing
      ],
    }),
    0,
    1000,
  );
  const table = state.tables.p ?? emptyTable();
  expect(table.blocks.map((b) => b.cidr)).toEqual(['198.18.0.0/29', '198.18.0.8/29']);
  expect(Object.fromEntries(Object.values(table.allocations).map((a) => [a.address, a.owner]))).toEqual({
    '198.18.0.2': 'lease/a/eth0',
    '198.18.0.9': 'lease/b/eth0',
  });
  expect(report.duplicates).toEqual([]);
});

test("a live lease's address the table gave another owner goes back to the lease; the other is dropped", () => {
  const state = empty();
  state.pools.p = spec;
  state.tables.p = emptyTable();
  state.tables.p.blocks.push({ cidr: '198.18.0.0/29', family: 4, incarnation: 'u1' });
  const entry = { family: 4 as const, block: '198.18.0.0/29', podUid: 'x', incarnation: 'u1' };
  state.tables.p.allocations['198.18.0.2'] = { ...entry, address: '198.18.0.2', owner: 'lease/new/eth0' };
  state.tables.p.allocations['198.18.0.3'] = { ...entry, address: '198.18.0.3', owner: 'lease/old/eth0' };
  const report = rebuildNodeTables(
    state,
    evidence({ leases: [{ owner: 'lease/old/eth0', podUid: 'o', pool: 'p', addresses: ['198.18.0.2'] }] }),
    5000,
    1000,
  );
  expect(state.tables.p.allocations['198.18.0.2']?.owner).toBe('lease/old/eth0');
  // old's stale entry (.3) is dropped and cools down; new's allocation was taken from it.
  expect(state.tables.p.allocations['198.18.0.3']).toBeUndefined();
  expect(state.tables.p.cooldowns['198.18.0.3']).toBe(6000);
  expect(report.reassigned).toEqual([
    { address: '198.18.0.2', from: 'lease/new/eth0', to: 'lease/old/eth0' },
  ]);
  expect(new Set(report.dropped)).toEqual(new Set(['lease/new/eth0', 'lease/old/eth0']));
});

test('an address two live leases hold is reported and left as it is', () => {
  const state = empty();
  const report = rebuildNodeTables(
    state,
    evidence({
      blocks: [{ pool: 'p', cidr: '198.18.0.0/29', incarnation: 'u1' }],
      leases: [
        { owner: 'lease/a/eth0', podUid: 'a', pool: 'p', addresses: ['198.18.0.2'] },
        { owner: 'lease/b/eth0', podUid: 'b', pool: 'p', addresses: ['198.18.0.2'] },
      ],
    }),
    0,
    0,
  );
  expect(report.duplicates).toEqual(['198.18.0.2 is held by lease/a/eth0 and lease/b/eth0']);
  expect(state.tables.p?.allocations['198.18.0.2']).toBeUndefined();
});

test("a pool's blocks rebuilt: a node's table wins over a hand-out to another node; two holders are reported", () => {
  const blocks = { '198.18.0.0/29': { node: 'b', incarnation: 'ub' } };
  const report = rebuildBlockTable(blocks, [
    { cidr: '198.18.0.0/29', node: 'a', incarnation: 'ua' },
    { cidr: '198.18.0.8/29', node: 'a', incarnation: 'ua' },
    { cidr: '198.18.0.16/29', node: 'a', incarnation: 'ua' },
    { cidr: '198.18.0.16/29', node: 'c', incarnation: 'uc' },
  ]);
  expect(blocks).toEqual({
    '198.18.0.0/29': { node: 'a', incarnation: 'ua' },
    '198.18.0.8/29': { node: 'a', incarnation: 'ua' },
  });
  expect(report.reassigned).toEqual([{ block: '198.18.0.0/29', from: 'b', to: 'a' }]);
  expect(report.duplicates).toEqual(['block 198.18.0.16/29 is held by nodes a and c']);
});

test('an address a lease asked for by name comes back in its own pinned block, not a whole pool block', () => {
  // The soak: a /26 cut around a static address fenced the other static addresses in it for good.
  const state = empty();
  const report = rebuildNodeTables(
    state,
    evidence({
      leases: [
        { owner: 'lease/s/eth0', podUid: 's', pool: 'p', addresses: ['198.18.0.10'], asked: ['198.18.0.10'] },
        { owner: 'lease/o/eth0', podUid: 'o', pool: 'p', addresses: ['198.18.0.17'], asked: [] },
      ],
    }),
    0,
    1000,
  );
  expect((state.tables.p ?? emptyTable()).blocks.map((b) => b.cidr)).toEqual([
    '198.18.0.10/32',
    '198.18.0.16/29',
  ]);
  expect(report.allocationsAdded).toEqual(['198.18.0.10', '198.18.0.17']);
});
