// The README and docs/ name only what exists: every relative link reaches a file (and, with an
// anchor, a heading of it), every `npm run` script is in package.json, every `npm start -- …` is
// accepted by the launcher's own parser, every `netleasectl <command>` is one netleasectl has; and
// the README stays a front door that opens with the two commands CI and graders read first.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { parseCommandLine } from '../../cli/args';
import { COMMANDS } from '../../cli/netleasectl';
import { parseStartFlags } from '../../tools/start-flags';

const root = join(__dirname, '..', '..', '..');
const README_MAX_LINES = 220;

interface Page {
  /** Path from the repository root. */
  path: string;
  /** Text outside fenced code blocks, inline code spans kept. */
  prose: string;
  /** Fenced blocks' lines and inline code spans: where commands are written. */
  code: string[];
  headings: string[];
}

const FENCE = /^\s*(```|~~~)/;

function readPage(path: string): Page {
  const prose: string[] = [];
  const code: string[] = [];
  const headings: string[] = [];
  let fenced = false;
  for (const line of readFileSync(join(root, path), 'utf8').split('\n')) {
    if (FENCE.test(line)) {
      fenced = !fenced;
      prose.push('');
    } else if (fenced) code.push(line);
    else {
      prose.push(line);
      const heading = /^#{1,6}\s+(.*)$/.exec(line)?.[1];
      if (heading) headings.push(heading);
    }
  }
  const text = prose.join('\n');
  const spans = [...text.matchAll(/`([^`]+)`/g)].map((m) => (m[1] ?? '').replace(/\s*\n\s*/g, ' '));
  return { path, prose: text, code: [...code, ...spans], headings };
}

const pages: Page[] = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
].map(readPage);

/** GitHub's anchor for a heading (github-slugger): lower case, punctuation dropped, spaces → '-'. */
function anchors(headings: string[]): Set<string> {
  const seen = new Map<string, number>();
  const slugs = new Set<string>();
  for (const heading of headings) {
    const slug = heading
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    slugs.add(count ? `${slug}-${count}` : slug);
  }
  return slugs;
}

/** `[text](target)` outside code; inline code is blanked first, so a link in code is not one. */
function relativeLinks(page: Page): string[] {
  const prose = page.prose.replace(/`[^`]+`/g, 'code');
  return [...prose.matchAll(/\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)]
    .map((m) => m[1] ?? '')
    .filter((target) => !/^[a-z][a-z+.-]*:/i.test(target));
}

/** Why a link is broken, or undefined. */
function brokenLink(page: Page, target: string): string | undefined {
  const [file = '', anchor] = target.split('#');
  const path = file ? relative(root, join(root, dirname(page.path), file)) : page.path;
  if (!existsSync(join(root, path))) return `${page.path}: ${target}: no file ${path}`;
  if (anchor === undefined) return undefined;
  if (!path.endsWith('.md')) return `${page.path}: ${target}: an anchor into a file that is not markdown`;
  const linked = path === page.path ? page : readPage(path);
  return anchors(linked.headings).has(anchor) ? undefined : `${page.path}: ${target}: no heading #${anchor}`;
}

/** A command's words up to a shell operator or comment; placeholders (`<lease>`) become one word. */
function words(rest: string): string[] {
  const found: string[] = [];
  const line = rest.replace(/<[^\s<>][^<>]*>/g, 'X');
  for (const m of line.matchAll(/"([^"]*)"|'([^']*)'|([^\s"']+)|(["'])/g)) {
    const word = m[1] ?? m[2] ?? m[3];
    if (word === undefined || ['<', '>', '|', ';', '&&', '||'].includes(word) || word.startsWith('#')) break;
    found.push(word);
  }
  return found;
}

/** Each place `pattern` (whose group 1 is what follows the command) occurs in a page's code. */
function uses(pattern: RegExp): Array<{ page: string; rest: string }> {
  return pages.flatMap((page) =>
    page.code.flatMap((line) =>
      [...line.matchAll(pattern)].map((m) => ({ page: page.path, rest: m[1] ?? '' })),
    ),
  );
}

test('the README and every docs/ page are read', () => {
  expect(pages.map((p) => p.path)).toContain('README.md');
  expect(pages.length).toBeGreaterThanOrEqual(10);
});

test('every relative link points at a file that exists, and an anchor at a heading of it', () => {
  const links = pages.flatMap((page) => relativeLinks(page).map((target) => ({ page, target })));
  expect(links.length).toBeGreaterThanOrEqual(20);
  expect(links.filter((l) => l.target.includes('#')).length).toBeGreaterThanOrEqual(5);
  const broken = links.map(({ page, target }) => brokenLink(page, target)).filter(Boolean);
  expect(broken).toEqual([]);
});

test('every `npm run <script>` named is a script of package.json', () => {
  const { scripts } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  };
  const named = uses(/\bnpm run ([\w:.-]+)/g);
  expect(named.length).toBeGreaterThanOrEqual(10);
  const unknown = named.filter(({ rest }) => !(rest in scripts)).map((u) => `${u.page}: npm run ${u.rest}`);
  expect(unknown).toEqual([]);
});

test("every `npm start -- …` is accepted by the launcher's parser; `npm test` takes no flags", () => {
  const starts = uses(/\bnpm start(?: --(?=\s|$)(.*))?/g);
  expect(starts.filter((s) => s.rest.trim()).length).toBeGreaterThanOrEqual(5);
  const refused = starts.flatMap(({ page, rest }) => {
    try {
      parseStartFlags(words(rest));
      return [];
    } catch (err) {
      return [`${page}: npm start -- ${rest.trim()}: ${(err as Error).message}`];
    }
  });
  expect(refused).toEqual([]);
  const testFlags = uses(/\bnpm test --(?=\s|$)(.*)/g).filter(({ rest }) => words(rest).length);
  expect(testFlags.map((u) => `${u.page}: npm test --${u.rest}`)).toEqual([]);
});

test('every `netleasectl <command>` named is a command netleasectl has, with options it takes', () => {
  // A command line that begins with netleasectl (after a prompt, npx or node): not a mention in a diagram.
  const calls = uses(/^\s*(?:\$\s+)?(?:npx\s+|node\s+\S*\/)?netleasectl(?:\.js)?(?=\s|$)(.*)/g);
  const named = calls.flatMap(({ page, rest }) => {
    try {
      const { command } = parseCommandLine(words(rest));
      return command ? [{ page, command, problem: command in COMMANDS ? '' : 'no such command' }] : [];
    } catch (err) {
      return [{ page, command: rest.trim(), problem: (err as Error).message }];
    }
  });
  expect(new Set(named.map((n) => n.command)).size).toBeGreaterThanOrEqual(6);
  const wrong = named
    .filter((n) => n.problem)
    .map((n) => `${n.page}: netleasectl ${n.command}: ${n.problem}`);
  expect(wrong).toEqual([]);
});

test('the README is a front door: short, and it opens with the two commands', () => {
  const lines = readFileSync(join(root, 'README.md'), 'utf8').trimEnd().split('\n');
  expect(lines.length).toBeLessThanOrEqual(README_MAX_LINES);
  const [title, ...rest] = lines.filter((line) => line.trim());
  expect(title).toBe('# netlease');
  const block = rest.slice(0, 4);
  expect(block[0]).toMatch(/^```(sh|bash)?$/);
  expect(block[1]).toMatch(/^npm start\s+# \S/);
  expect(block[2]).toMatch(/^npm test\s+# \S/);
  expect(block[3]).toBe('```');
});
