// @ts-check
// The project's layers: which folder may import which. ESLint (eslint.config.js, rule
// netlease/layers) and test/unit/architecture both judge imports by this one table.
// A module is its path from the repository root without `.ts` (`worker/agent/cni-api`).

/** The source folders, bottom to top. */
const FOLDERS = [
  'domain',
  'workflows',
  'activities',
  'kernel',
  'kubernetes',
  'temporal',
  'observability',
  'storage',
  'cni',
  'worker',
  'cli',
  'tools',
];

/** @param {string[]} kept */
const allBut = (...kept) => FOLDERS.filter((folder) => !kept.includes(folder));

/**
 * @typedef {object} LayerRule
 * @property {string} from a folder or sub-folder whose modules the rule binds
 * @property {string[]} forbidden folders or modules `from` must not import
 * @property {string[]} [except] modules of a forbidden folder it may import all the same (`*`: any name part)
 * @property {string[]} [typesOnly] folders it may import types from (`import type`), nothing else
 * @property {string} why what the rule keeps apart
 */

/** @type {LayerRule[]} */
const LAYERS = [
  { from: 'domain', forbidden: allBut('domain'), why: 'domain is pure: it imports only itself' },
  {
    from: 'workflows',
    forbidden: allBut('domain', 'workflows', 'activities'),
    typesOnly: ['activities'],
    why: 'workflows are deterministic: domain, and activities as types only',
  },
  {
    from: 'kernel',
    forbidden: allBut('domain', 'kernel', 'observability', 'storage'),
    why: 'kernel work stands below activities, the CNI and the processes',
  },
  {
    from: 'kubernetes',
    forbidden: allBut('domain', 'kubernetes', 'observability', 'storage'),
    why: 'the Kubernetes client stands below activities, the CNI and the processes',
  },
  {
    from: 'temporal',
    forbidden: allBut('domain', 'workflows', 'temporal', 'observability', 'storage'),
    why: 'Temporal client helpers stand below activities, the CNI and the processes',
  },
  {
    from: 'observability',
    forbidden: allBut('domain', 'observability', 'storage'),
    why: 'logs and metrics are used by every process-side layer and import none of them',
  },
  {
    from: 'storage',
    forbidden: allBut('storage'),
    why: 'durable files stand below everything that uses them',
  },
  {
    from: 'activities',
    forbidden: ['cni', 'worker', 'cli', 'tools'],
    why: 'activities never import a process',
  },
  {
    from: 'cni',
    forbidden: ['activities', 'worker', 'cli', 'tools'],
    why: 'cni/ is the CNI protocol, served by the node agent: it never imports the processes',
  },
  {
    from: 'worker/agent',
    forbidden: ['worker/control'],
    why: 'the node agent and the control worker are two processes (they share worker/config-file and worker/process-flags)',
  },
  {
    from: 'worker/control',
    forbidden: ['worker/agent'],
    why: 'the control worker and the node agent are two processes (they share worker/config-file and worker/process-flags)',
  },
  { from: 'worker', forbidden: ['cli', 'tools'], why: 'the processes never import the CLI or dev tools' },
  {
    from: 'cli',
    forbidden: ['workflows', 'activities', 'kernel', 'worker', 'cni', 'tools'],
    except: ['workflows/*-messages', 'worker/config-file'],
    why: 'the CLI reads through temporal/ and kubernetes/: of workflows/ only the messages, of worker/ only the config loader',
  },
];

/** @param {string} module @param {string} folder */
const within = (module, folder) => module === folder || module.startsWith(`${folder}/`);

/** @param {string} pattern */
const modulePattern = (pattern) => new RegExp(`^${pattern.split('*').map(escapeRegExp).join('[^/]*')}$`);
/** @param {string} text */
function escapeRegExp(text) {
  return text.replace(/[.+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Why module `from` must not import module `to` (undefined: it may). `typeOnly`: an `import type`
 * (or `export type … from`), which a folder's `typesOnly` allows.
 * @param {string} from
 * @param {string} to
 * @param {boolean} typeOnly
 * @returns {string | undefined}
 */
function forbiddenImport(from, to, typeOnly) {
  for (const rule of LAYERS) {
    if (!within(from, rule.from)) continue;
    if (rule.except?.some((pattern) => modulePattern(pattern).test(to))) continue;
    if (rule.forbidden.some((folder) => within(to, folder))) return rule.why;
    if (!typeOnly && rule.typesOnly?.some((folder) => within(to, folder))) return rule.why;
  }
  return undefined;
}

module.exports = { FOLDERS, LAYERS, forbiddenImport };
