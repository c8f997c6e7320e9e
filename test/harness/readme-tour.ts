// The README's "A five-minute tour", read as a reader reads it: its numbered steps and the
// commands of each step's fenced `sh` blocks, split into words the way sh would split them.
// test/integration/readme-tour runs them.

export interface TourStep {
  number: number;
  title: string;
  /** The step's whole text (prose and blocks). */
  text: string;
  /** Each command line of its `sh` blocks, in order, as written (comments and blank lines dropped). */
  commands: string[];
}

const SECTION = '## A five-minute tour';

/** The tour's steps ("1. **Start it.** ..."); throws when the README has no such section. */
export function tourSteps(readme: string): TourStep[] {
  const start = readme.indexOf(`\n${SECTION}\n`);
  if (start < 0) throw new Error(`README.md has no "${SECTION}" section`);
  const end = readme.indexOf('\n## ', start + SECTION.length + 2);
  const section = readme.slice(start, end < 0 ? undefined : end);
  const heads = [...section.matchAll(/^(\d+)\. \*\*(.+?)\*\*/gm)];
  return heads.map((head, i) => {
    const text = section.slice(head.index, heads[i + 1]?.index);
    return { number: Number(head[1]), title: head[2] ?? '', text, commands: blockCommands(text) };
  });
}

/** The command lines of the `sh` blocks in `text`, without their comments. */
function blockCommands(text: string): string[] {
  const blocks = [...text.matchAll(/^ *```sh\n([\s\S]*?)^ *```/gm)].map((m) => m[1] ?? '');
  return blocks
    .flatMap((block) => block.split('\n'))
    .map((line) => line.replace(/(^|\s)#.*$/, '').trim())
    .filter((line) => line !== '');
}

/**
 * The words of one command line as sh splits them: '…' and "…" quoting, a backslash escape,
 * $NAME and ${NAME} expanded from `env` (unquoted or in double quotes), and a # starting a word
 * ends the line. Nothing else of sh (no globs, pipes or redirections: `<` is a word).
 */
export function shellWords(line: string, env: Record<string, string | undefined>): string[] {
  const words: string[] = [];
  let word: string | undefined;
  let i = 0;
  const variable = (): string => {
    const name = /^\$(?:\{(\w+)\}|(\w+))/.exec(line.slice(i));
    if (!name) return line[i++] ?? '';
    i += name[0].length;
    return env[name[1] ?? name[2] ?? ''] ?? '';
  };
  while (i < line.length) {
    const c = line[i] ?? '';
    if (/\s/.test(c)) {
      if (word !== undefined) words.push(word);
      word = undefined;
      i++;
    } else if (c === '#' && word === undefined) {
      break;
    } else if (c === "'") {
      const close = line.indexOf("'", i + 1);
      if (close < 0) throw new Error(`unclosed ' in: ${line}`);
      word = (word ?? '') + line.slice(i + 1, close);
      i = close + 1;
    } else if (c === '"') {
      word ??= '';
      for (i++; i < line.length && line[i] !== '"';) word += line[i] === '$' ? variable() : line[i++];
      if (i >= line.length) throw new Error(`unclosed " in: ${line}`);
      i++;
    } else if (c === '$') {
      word = (word ?? '') + variable();
    } else if (c === '\\') {
      word = (word ?? '') + (line[i + 1] ?? '');
      i += 2;
    } else {
      word = (word ?? '') + c;
      i++;
    }
  }
  if (word !== undefined) words.push(word);
  return words;
}

/** A printed command that may go on over lines ending in a backslash, as one line. */
export const joinContinued = (text: string): string => text.replace(/\\\n\s*/g, ' ').trim();
