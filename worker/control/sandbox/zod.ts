// What bundled workflow and domain code gets for `import { z } from 'zod'`: the zod that
// ./shared-zod keeps for the whole V8 context (tools/bundle-workflows redirects 'zod' here).
import { sharedZod } from './shared-zod';

export = sharedZod();
