// The address-ownership invariant (domain/address-ownership): each kind of violation is found,
// and a clean set of tables and leases gives nothing.
import {
  addressOwnershipFindings,
  allocationCount,
  type NodeTables,
  type OpenLease,
} from '../../domain/address-ownership';
import { emptyTable, type Allocation, type AllocationTable } from '../../domain/allocation';

const allocation = (address: string, owner: string): Allocation => ({
  address,
  family: 4,
  block: '198.18.0.0/26',
  owner,
  podUid: owner.split('/')[1] ?? '',
  incarnation: 'uid-1',
});
const table = (...allocations: Allocation[]): AllocationTable => ({
  ...emptyTable(),
  allocations: Object.fromEntries(allocations.map((a) => [a.address, a])),
});
const nodeA = (...allocations: Allocation[]): NodeTables => ({
  node: 'a',
  tables: { p: table(...allocations) },
});
const nodeB = (...allocations: Allocation[]): NodeTables => ({
  node: 'b',
  tables: { p: table(...allocations) },
});

const one: OpenLease = { workflowId: 'lease/one/eth0', addresses: ['198.18.0.2'] };
const two: OpenLease = { workflowId: 'lease/two/eth0', addresses: ['198.18.0.3'] };
const clean = [
  nodeA(allocation('198.18.0.2', one.workflowId)),
  nodeB(allocation('198.18.0.3', two.workflowId)),
];

const problems = (nodes: NodeTables[], leases?: OpenLease[]) =>
  addressOwnershipFindings(nodes, leases).map((f) => [f.problem, f.address]);

test('a clean state has no findings, with or without the open leases', () => {
  expect(addressOwnershipFindings(clean, [one, two])).toEqual([]);
  expect(addressOwnershipFindings(clean)).toEqual([]);
  expect(addressOwnershipFindings([], [])).toEqual([]);
  expect(allocationCount(clean)).toBe(2);
});

test('an address held on two nodes is found, naming both owners and nodes', () => {
  const nodes = [
    nodeA(allocation('198.18.0.2', one.workflowId)),
    nodeB(allocation('198.18.0.2', two.workflowId)),
  ];
  const found = addressOwnershipFindings(nodes);
  expect(found).toEqual([
    {
      problem: 'heldTwice',
      address: '198.18.0.2',
      message: '198.18.0.2 is held 2 times: lease/one/eth0 (node a, pool p); lease/two/eth0 (node b, pool p)',
    },
  ]);
});

test('an allocation whose owner is not an open lease is found', () => {
  expect(problems(clean, [one])).toEqual([['ownerNotOpen', '198.18.0.3']]);
  expect(addressOwnershipFindings(clean, [one])[0]?.message).toBe(
    '198.18.0.3 on node b is held by lease/two/eth0, which is not an open lease',
  );
});

test('an address two open leases list is found (and the one it is not allocated to)', () => {
  const both = { ...two, addresses: ['198.18.0.3', '198.18.0.2'] };
  expect(problems(clean, [one, both])).toEqual([
    ['claimedTwice', '198.18.0.2'],
    ['notAllocated', '198.18.0.2'],
  ]);
});

test("an open lease's address that no node has allocated to it is found", () => {
  const listed = { ...one, addresses: ['198.18.0.2', '198.18.0.9'] };
  expect(problems(clean, [listed, two])).toEqual([['notAllocated', '198.18.0.9']]);
  expect(addressOwnershipFindings(clean, [listed, two])[0]?.message).toBe(
    'lease/one/eth0 lists 198.18.0.9, but no node has it allocated to that lease',
  );
});

test('without the open leases only addresses held twice are judged', () => {
  expect(problems([nodeA(allocation('198.18.0.7', 'lease/closed/eth0'))])).toEqual([]);
});
