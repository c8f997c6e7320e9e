// `npm start`'s arguments (`npm start -- --cluster --nodes 2`): the launcher parses them here, and
// test/unit/docs checks every `npm start -- …` the README and docs/ name against the same parser.

export interface StartFlags {
  cluster: boolean;
  /** Real nodes of the cluster (`--nodes 2`). */
  nodes: 1 | 2;
  /** The dev server (default) or the Temporal server on PostgreSQL. */
  temporal: 'dev' | 'production';
  /** netlease installed as pods by its Helm chart (`--in-cluster`), not run as host processes. */
  inCluster: boolean;
}

export function parseStartFlags(args: string[]): StartFlags {
  const usage = 'known: --cluster, --cluster --nodes 2, --cluster --in-cluster, --temporal dev|production';
  const flags: StartFlags = { cluster: false, nodes: 1, temporal: 'dev', inCluster: false };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === '--cluster') flags.cluster = true;
    else if (arg === '--in-cluster') flags.inCluster = true;
    else if (arg === '--nodes' && (args[i + 1] === '1' || args[i + 1] === '2'))
      flags.nodes = args[++i] === '2' ? 2 : 1;
    else if (arg === '--temporal' && (args[i + 1] === 'dev' || args[i + 1] === 'production'))
      flags.temporal = args[++i] === 'production' ? 'production' : 'dev';
    else throw new Error(`unknown argument ${args.slice(i).join(' ')} (${usage})`);
  }
  if (flags.nodes === 2 && !flags.cluster) throw new Error(`--nodes needs --cluster (${usage})`);
  if (flags.inCluster && !flags.cluster) throw new Error(`--in-cluster needs --cluster (${usage})`);
  return flags;
}
