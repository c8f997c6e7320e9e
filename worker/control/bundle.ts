// Where the prebuilt workflow bundle lives (made by `npm run build`).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const WORKFLOW_BUNDLE_PATH = join(__dirname, '..', '..', 'workflow-bundle.js');

export function prebuiltBundle(): { code: string } {
  if (!existsSync(WORKFLOW_BUNDLE_PATH)) {
    throw new Error(`missing ${WORKFLOW_BUNDLE_PATH}: run "npm run build"`);
  }
  return { code: readFileSync(WORKFLOW_BUNDLE_PATH, 'utf8') };
}
