import type { Knex } from 'knex';
import type { Migration } from '../../sdk/plugin.js';

/**
 * Runs one owner's migrations (the core's or a plugin's). Each owner has its own
 * bookkeeping table, so plugins can be added, removed or upgraded independently
 * and nothing ever runs twice.
 */
export async function runMigrations(knex: Knex, owner: string, migrations: Migration[]): Promise<string[]> {
  if (!migrations.length) return [];
  const names = migrations.map((m) => m.name);
  if (new Set(names).size !== names.length) throw new Error(`${owner}: duplicate migration names`);
  const sorted = [...migrations].sort((a, b) => a.name.localeCompare(b.name));
  const source: Knex.MigrationSource<Migration> = {
    getMigrations: async () => sorted,
    getMigrationName: (m) => m.name,
    getMigration: async (m) => ({ up: m.up, down: m.down ?? (async () => {}) }),
  };
  const [, applied] = await knex.migrate.latest({
    migrationSource: source,
    tableName: `migrations_${owner.replace(/[^a-zA-Z0-9]/g, '_')}`,
  });
  return applied as string[];
}
