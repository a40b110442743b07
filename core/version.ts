import { readFileSync } from 'node:fs';
import path from 'node:path';

/** package.json's version: one source of truth for /api/version, the CLI and OpenAPI. */
export const VERSION: string = JSON.parse(readFileSync(path.resolve(__dirname, '../../package.json'), 'utf8')).version;
