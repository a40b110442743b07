import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** The repository root (the folder whose package.json is named antenna), wherever the compiled tests live. */
function findRoot(): string {
  for (let dir = __dirname; dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const pkg = path.join(dir, 'package.json');
    if (existsSync(pkg) && JSON.parse(readFileSync(pkg, 'utf8')).name === 'antenna') return dir;
  }
  throw new Error(`no antenna package.json above ${__dirname}`);
}

export const REPO_ROOT = findRoot();
export const CLI = path.join(REPO_ROOT, 'dist/core/cli/main.js');
