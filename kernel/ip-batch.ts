// Several `ip` commands in one process: `ip -batch -` reads them from stdin, one a line, and (no
// -force) stops at the first that fails, so later steps never run on top of a failed one, as with
// one process per command. A process costs ~3 ms; a kernel request well under one.
import { ip, IpError, runIn, type Netns } from './ip';

/**
 * iproute2's batch reader cuts a line at "#" (a comment) and takes a word that starts with a quote
 * for a quoted string; interface names may hold either, and such commands run one per process.
 */
const batchable = (word: string): boolean => word !== '' && !/[#\s]|^['"]/.test(word);

/** The failing line's command and message, from ip's "Command failed -:<line>". */
function failedCommand(err: IpError, commands: string[][]): IpError {
  const match = /^Command failed -:(\d+)\s*$/m.exec(err.stderr);
  const command = match && commands[Number(match[1]) - 1];
  if (!command) return err;
  return new IpError(command, err.stderr.replace(match[0], '').trim());
}

/** Runs `commands` (each an `ip` argument list without global options) in order, in `netns`. */
export async function ipBatch(netns: Netns, commands: string[][]): Promise<void> {
  if (commands.length === 0) return;
  if (!commands.every((c) => c.every(batchable))) {
    for (const command of commands) await ip(netns, command);
    return;
  }
  const input = commands.map((c) => `${c.join(' ')}\n`).join('');
  try {
    await runIn(netns, 'ip', ['-batch', '-'], input);
  } catch (err) {
    throw err instanceof IpError ? failedCommand(err, commands) : err;
  }
}
