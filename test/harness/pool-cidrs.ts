// A pool of a test's own in the machine's namespace, where a local cluster routes its pool
// (tools/node-reach): a /22 of 198.19.0.0/17 (npm start's pool is 198.18.0.0/16, npm run
// conformance's and the nodes' IPs are in 198.19.128.0/17) and a /64 of fd00::/8, at random. A
// run that draws one another run holds gets PoolRangeTaken and draws again.
import { randomBytes, randomInt } from 'node:crypto';

export const randomPoolCidrs = (): string[] => {
  const ula = `fd${randomBytes(7).toString('hex')}`.match(/.{4}/g) ?? []; // fd + 56 random bits
  return [`198.19.${randomInt(0, 32) * 4}.0/22`, `${ula.join(':')}::/64`];
};
