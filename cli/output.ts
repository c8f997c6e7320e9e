// Shared output: aligned tables for people, JSON (-o json) for programs.
import type { Output } from './args';

export type Cell = string | number | undefined;

/** Columns padded to their widest cell; an empty table prints its header and "(none)". */
export function table(headers: string[], rows: Cell[][]): string {
  const text = rows.map((row) => row.map((cell) => (cell === undefined || cell === '' ? '-' : String(cell))));
  const widths = headers.map((h, i) => Math.max(h.length, ...text.map((row) => (row[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(headers), ...(text.length ? text.map(line) : ['(none)'])].join('\n') + '\n';
}

/** Key: value lines, for one object's fields. */
export function fields(pairs: Array<[string, Cell]>): string {
  const width = Math.max(...pairs.map(([key]) => key.length));
  return (
    pairs
      .map(
        ([key, value]) =>
          `${`${key}:`.padEnd(width + 2)}${value === undefined || value === '' ? '-' : value}`,
      )
      .join('\n') + '\n'
  );
}

export const json = (value: unknown): string => JSON.stringify(value, null, 2) + '\n';

/** Prints the JSON value or the text, as the output format says. */
export function emit(output: Output, value: unknown, text: () => string): void {
  process.stdout.write(output === 'json' ? json(value) : text());
}

/** "3m12s", "2h5m", "4d3h": how long ago `since` was. */
export function age(since: Date, now = Date.now()): string {
  let s = Math.max(0, Math.floor((now - since.getTime()) / 1000));
  const d = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  s %= 60;
  if (d) return `${d}d${h}h`;
  if (h) return `${h}h${m}m`;
  if (m) return `${m}m${s}s`;
  return `${s}s`;
}

export const time = (at: Date | undefined): string => (at ? at.toISOString() : '');
