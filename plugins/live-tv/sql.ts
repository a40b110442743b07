import type { Database } from 'antenna/sdk';

/** Whether `db` is SQLite (else PostgreSQL): for the few statements the two write differently. */
export function isSqlite(db: Database): boolean {
  return String(db.client.config.client).startsWith('sqlite');
}

/** Bound values per VALUES statement: under SQLite's limit (32,766) and PostgreSQL's (65,535). */
const MAX_VALUES = 30_000;
/** Rows per JSON text on SQLite (a few MB). */
const JSON_ROWS = 10_000;

/**
 * Inserts rows (each its values in `columns` order) in as few statements as it takes. `tail` is
 * SQL appended to each statement, e.g. `ON CONFLICT (id) DO UPDATE SET …`.
 *
 * On SQLite the rows go as one JSON text per statement, which SQLite takes apart itself
 * (jsonb_each hands each row over parsed): node-sqlite3 binds each value on the main thread, about
 * a microsecond apiece, and a playlist or guide import has millions. Elsewhere, multi-row VALUES.
 */
export async function insertRows(db: Database, table: string, columns: readonly string[], rows: readonly unknown[][], tail = ''): Promise<void> {
  const into = `INSERT INTO ${table} (${columns.join(', ')})`;
  if (isSqlite(db)) {
    // The JSON goes as UTF-8 bytes, cast back to TEXT (jsonb_each would read a BLOB as JSONB):
    // node-sqlite3 converts a bound string on the main thread, a Buffer it copies once.
    // WHERE true: without it SQLite would read an ON CONFLICT as the join's constraint.
    const sql = `${into} SELECT ${columns.map((_, i) => `value->>${i}`).join(', ')} FROM jsonb_each(CAST(? AS TEXT)) WHERE true ${tail}`;
    for (let i = 0; i < rows.length; i += JSON_ROWS) await db.raw(sql, [Buffer.from(JSON.stringify(rows.slice(i, i + JSON_ROWS)))]);
    return;
  }
  const perStatement = Math.floor(MAX_VALUES / columns.length);
  const tuple = `(${columns.map(() => '?').join(', ')})`;
  for (let i = 0; i < rows.length; i += perStatement) {
    const chunk = rows.slice(i, i + perStatement);
    await db.raw(`${into} VALUES ${chunk.map(() => tuple).join(', ')} ${tail}`, chunk.flat().map((v) => v ?? null) as never[]);
  }
}

/** `ON CONFLICT (key) DO UPDATE` setting every other column of `columns`: rows written over the ones stored. */
export function upsertTail(key: string, columns: readonly string[]): string {
  return `ON CONFLICT (${key}) DO UPDATE SET ${columns.filter((c) => c !== key).map((c) => `${c} = excluded.${c}`).join(', ')}`;
}
