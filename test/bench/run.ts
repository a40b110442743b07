/**
 * `npm run bench [name…]`: runs the benchmarks (all by default) and prints their
 * figures as JSON with the machine's conditions. Not part of `npm test`.
 */
import os from 'node:os';
import path from 'node:path';
import { readdirSync } from 'node:fs';

async function main() {
  const wanted = process.argv.slice(2);
  const files = readdirSync(__dirname).filter((f) => f.endsWith('.bench.js')).sort();
  const machine = {
    cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    loadavg: os.loadavg().map((l) => Math.round(l * 100) / 100), node: process.version, date: new Date().toISOString(),
  };
  console.log(JSON.stringify({ machine }, null, 2));
  for (const file of files) {
    const name = file.replace(/\.bench\.js$/, '');
    if (wanted.length && !wanted.includes(name)) continue;
    const mod = require(path.join(__dirname, file));
    const started = Date.now();
    const result = await mod.run();
    console.log(JSON.stringify({ bench: name, seconds: Math.round((Date.now() - started) / 100) / 10, result }, null, 2));
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
