import type { Knex } from 'knex';

/**
 * Inserts many rows with multi-row VALUES statements, as many rows per statement
 * as the bound-variable limit allows (SQLite: 32 766; PostgreSQL: 65 535). knex's
 * own multi-row insert on SQLite uses UNION ALL and stops at 500 rows.
 *
 * `onConflict`: SQL appended to each statement, e.g.
 * `ON CONFLICT (tuner_id, key) DO UPDATE SET name = excluded.name`.
 */
export async function insertRows(
  knex: Knex | Knex.Transaction,
  table: string,
  rows: Record<string, unknown>[],
  options: { columns?: string[]; onConflict?: string; maxVariables?: number } = {},
): Promise<void> {
  if (!rows.length) return;
  const columns = options.columns ?? Object.keys(rows[0]);
  const perStatement = Math.max(1, Math.floor((options.maxVariables ?? 30_000) / columns.length));
  const head = `INSERT INTO ${quote(table)} (${columns.map(quote).join(', ')}) VALUES `;
  const tuple = `(${columns.map(() => '?').join(', ')})`;
  for (let i = 0; i < rows.length; i += perStatement) {
    const chunk = rows.slice(i, i + perStatement);
    const values: unknown[] = new Array(chunk.length * columns.length);
    let k = 0;
    for (const row of chunk) for (const c of columns) values[k++] = row[c] === undefined ? null : row[c];
    const sql = head + new Array(chunk.length).fill(tuple).join(', ') + (options.onConflict ? ' ' + options.onConflict : '');
    await knex.raw(sql, values as Knex.RawBinding[]);
  }
}

function quote(identifier: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(identifier)) throw new Error(`insertRows: bad identifier ${identifier}`);
  return `"${identifier}"`;
}
