import { join } from 'node:path';

/** Written by global setup; read by teardown. Lives in dist/, never in the source tree. */
export const SERVER_FILE = join(__dirname, '..', '.test-server.json');
