// One recipe for the image: the Dockerfile (for those with Docker) and tools/netlease-image (the
// OCI archive built here) must make the same file layout and run the same way. This reads the
// Dockerfile's build steps and last stage and compares them with RECIPE, which the script builds.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { RECIPE } from '../../tools/netlease-image';

const ROOT = join(__dirname, '..', '..', '..');
const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8').replace(/\\\n\s*/g, ' ');
const lines = dockerfile.split('\n').filter((l) => l.trim() && !l.trim().startsWith('#'));
const stages = lines.reduce<string[][]>((all, line) => {
  if (/^FROM\s/.test(line)) all.push([]);
  all[all.length - 1]?.push(line);
  return all;
}, []);
const last = stages[stages.length - 1] ?? [];
const build = stages.find((s) => /\bAS build\b/.test(s[0] ?? '')) ?? [];
const args = (keyword: string, stage: string[]) =>
  stage.filter((l) => l.startsWith(`${keyword} `)).map((l) => l.slice(keyword.length + 1).trim());

test('the Dockerfile has a build stage and a runtime stage to compare', () => {
  expect(stages.length).toBeGreaterThanOrEqual(3);
  expect(build.length).toBeGreaterThan(1);
  expect(last[0]).toMatch(/^FROM node:\$\{NODE_VERSION\}-bookworm-slim$/);
});

test('the same Node.js major, and the machine builds the archive with it', () => {
  expect(dockerfile).toContain(`ARG NODE_VERSION=${RECIPE.nodeMajor}\n`);
  expect(Number(process.versions.node.split('.')[0])).toBe(RECIPE.nodeMajor);
});

test('the same working directory and environment', () => {
  expect(args('WORKDIR', last)).toEqual([RECIPE.workdir]);
  expect(args('ENV', last)).toEqual(Object.entries(RECIPE.env).map(([k, v]) => `${k}=${v}`));
});

test('the same Debian packages in the runtime stage', () => {
  const install = args('RUN', last).join(' ');
  const packages = /apt-get install -y --no-install-recommends ([\w\s.-]+?)(?:&&|$)/.exec(install)?.[1];
  expect(packages?.trim().split(/\s+/).sort()).toEqual(Object.keys(RECIPE.packages).sort());
});

test('the same files in the app directory', () => {
  // COPY [--from=x] <source> <dest>: the destination relative to WORKDIR, its name as in RECIPE.app.
  const copied = args('COPY', last).map((l) => {
    const [dest = '', source = ''] = l.split(/\s+/).reverse();
    const relativeDest = dest.replace(/^\.\//, '').replace(/\/$/, '');
    return relativeDest === '' || relativeDest === '.' ? source.split('/').pop() : relativeDest;
  });
  expect(copied.sort()).toEqual([...RECIPE.app].sort());
});

test('the same build: production dependencies only, tests and build info removed', () => {
  const run = args('RUN', build).join('\n');
  expect(run).toContain('npm run build');
  expect(run).toContain(`npm prune --omit=${RECIPE.omit}`);
  expect(run).toContain(`rm -rf ${RECIPE.notShipped.join(' ')}`);
});
