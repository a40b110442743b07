import type { Knex } from 'knex';

export interface InsertOptions {
  /** Column order (default: the keys of the first row; insertValues requires it). */
  columns?: string[];
  /** SQL appended to each statement, e.g. `ON CONFLICT (tuner_id, key) DO UPDATE SET name = excluded.name`. */
  onConflict?: string;
  /** Bound variables per statement on the VALUES path (SQLite allows 32 766, PostgreSQL 65 535). */
  maxVariables?: number;
}

const utf8Encoder = new TextEncoder();
/** Where sqliteText encodes: kept while small (a few hundred KB serve every statement of an import). */
let utf8Room = Buffer.alloc(0);
const UTF8_ROOM_MAX = 4 << 20;

/**
 * `text` as UTF-8 bytes, bound on SQLite as `CAST(? AS TEXT)`: what binding the string would
 * store, for a fifth of the main thread's time. node-sqlite3 converts a bound string on the main
 * thread, walking and copying it twice: 80-125 ms for the 29 MB of a 100,000-channel list's
 * pages, 0.5 s per guide import of 650,000 programmes. TextEncoder.encodeInto writes the same
 * 29 MB in ~20 ms, and a Buffer is bound with one copy. The cast makes the bytes TEXT again;
 * they are well-formed UTF-8 (encodeInto writes a lone surrogate as U+FFFD, as node-sqlite3 does).
 */
export function sqliteText(text: string): Buffer {
  const most = text.length * 3; // UTF-8 bytes per UTF-16 code unit, at most
  if (most > UTF8_ROOM_MAX) {
    const bytes = Buffer.allocUnsafe(Buffer.byteLength(text));
    utf8Encoder.encodeInto(text, bytes);
    return bytes;
  }
  if (utf8Room.length < most) utf8Room = Buffer.allocUnsafeSlow(Math.max(most, 256 << 10));
  const { written } = utf8Encoder.encodeInto(text, utf8Room);
  return Buffer.from(utf8Room.subarray(0, written)); // a copy: the room is written again by the next call
}

/** Whether `knex` talks to SQLite (else PostgreSQL): for the few statements the two write differently. */
export function isSqlite(knex: Knex | Knex.Transaction): boolean {
  return String(knex.client.config.client).startsWith('sqlite');
}

/**
 * Inserts many rows with as few statements as possible.
 *
 * SQLite: the rows travel as ONE bound JSON text per statement
 * (`INSERT … SELECT value->>0, value->>1 … FROM jsonb_each(CAST(? AS TEXT))`,
 * its UTF-8 bound as bytes: sqliteText): binding thousands of variables costs
 * node-sqlite3 about a microsecond each on the main thread, and knex walks
 * every binding again; one text costs neither.
 * jsonb_each, not json_each: json_each hands each row over as JSON text, which
 * every `->>` parses again (100,000 channel rows of 14 columns took 2.2 s to
 * insert that way, 1.4 s this way); jsonb_each hands it over parsed (SQLite 3.45+).
 * Values are encoded so that SQLite stores exactly what binding them would
 * have stored (safe integers that are not 32-bit are written `n.0`, as
 * node-sqlite3 binds them as REAL); a chunk holding anything else (fractions,
 * NaN, BigInt, Buffer, Date, ill-formed UTF-16) takes the VALUES path.
 *
 * Other clients, and the fallback: multi-row VALUES statements, as many rows per
 * statement as the bound-variable limit allows. knex's own multi-row insert on
 * SQLite uses UNION ALL and stops at 500 rows.
 *
 * `onConflict`: SQL appended to each statement, e.g.
 * `ON CONFLICT (tuner_id, key) DO UPDATE SET name = excluded.name`.
 */
export async function insertRows(
  knex: Knex | Knex.Transaction,
  table: string,
  rows: Record<string, unknown>[],
  options: InsertOptions = {},
): Promise<void> {
  if (!rows.length) return;
  const columns = options.columns ?? Object.keys(rows[0]);
  const values = new Array<unknown[]>(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i];
    const v = new Array(columns.length);
    for (let j = 0; j < columns.length; j++) v[j] = row[columns[j]];
    values[i] = v;
  }
  await insertValues(knex, table, columns, values, options);
}

/** insertRows with each row given as an array of values in `columns` order (no object per row). */
export async function insertValues(
  knex: Knex | Knex.Transaction,
  table: string,
  columns: string[],
  rows: unknown[][],
  options: Omit<InsertOptions, 'columns'> = {},
): Promise<void> {
  if (!rows.length) return;
  const inserter = new RowInserter(knex, table, columns, options);
  await inserter.add(rows);
  await inserter.flush();
}

/** Rows per statement on SQLite's JSON path (a few MB of JSON). */
const JSON_ROWS = 10_000;

/**
 * insertValues for rows that arrive a few at a time (an import): add() them as they come,
 * flush() at the end. They are stored in statements of up to `rowsPerStatement` rows, one
 * statement being stored (SQLite works in libuv's pool) while the next rows are encoded, and
 * add() waits while one is (so a reader feeding it slows down to what the database takes).
 *
 * On SQLite each add() encodes its rows into JSON at once: whatever they were made of can go
 * while it is still in V8's young generation. (An XMLTV import handed over 2,000 programmes at a
 * time, kept until their statement: they lived into the old generation, for mark-compacts to
 * collect. 100 at a time, encoded at once, into statements of 2,000: a 650,000-programme import
 * took 16.6 s instead of 19.7 s, means of interleaved runs; its other threads (V8's GC helpers,
 * SQLite) used a third less CPU.)
 *
 * A failed statement rejects the next add() or flush().
 */
export class RowInserter {
  private readonly sqlite: boolean;
  private readonly cols: string;
  private readonly tail: string;
  /** SQLite's JSON path: one statement for the rows' JSON. */
  private readonly jsonInsert: string;
  private readonly rowsPerStatement: number;
  /** The JSON of rows added and not yet sent, as UTF-8… */
  private readonly json = new JsonRowsBytes();
  /** …or rows added and not yet sent that go by the VALUES path (PostgreSQL, or unfit for JSON); never both. */
  private values: unknown[][] = [];
  /** How many rows are waiting in either. */
  private pending = 0;
  private textual?: boolean[];
  private storing?: Promise<void>;

  constructor(
    private readonly knex: Knex | Knex.Transaction, private readonly table: string, private readonly columns: string[],
    private readonly options: Omit<InsertOptions, 'columns'> & { rowsPerStatement?: number } = {},
  ) {
    this.sqlite = isSqlite(knex);
    this.cols = columns.map(quote).join(', ');
    this.tail = options.onConflict ? ' ' + options.onConflict : '';
    // WHERE true: without it SQLite would read ON CONFLICT as a join constraint.
    // The JSON is bound as UTF-8 bytes (sqliteText): jsonb_each would read a BLOB as JSONB, hence the cast.
    this.jsonInsert = `INSERT INTO ${quote(table)} (${this.cols}) SELECT ${columns.map((_, j) => `value->>${j}`).join(', ')} FROM jsonb_each(CAST(? AS TEXT)) WHERE true${this.tail}`;
    this.rowsPerStatement = Math.max(1, options.rowsPerStatement ?? JSON_ROWS);
  }

  async add(rows: unknown[][]): Promise<void> {
    const width = this.columns.length;
    for (let i = 0; i < rows.length;) {
      const end = Math.min(rows.length, i + this.rowsPerStatement - this.pending);
      const found = this.sqlite ? scan(rows, i, end, width) : SCAN_UNFIT;
      if (found === SCAN_UNFIT) {
        if (!this.json.empty) await this.send();
        for (let r = i; r < end; r++) this.values.push(rows[r]);
      } else {
        if (this.values.length) await this.send();
        const slice = i === 0 && end === rows.length ? rows : rows.slice(i, end);
        let json: string;
        if (found === SCAN_PLAIN) json = JSON.stringify(slice);
        else {
          // A safe integer beyond 32 bits, which node-sqlite3 binds as a REAL: the same in a
          // column of numeric affinity, but a TEXT or BLOB column would store it differently.
          this.textual ??= await textualColumns(this.knex, this.table, this.columns);
          json = found.some((j) => this.textual![j]) ? encodeRows(slice, 0, slice.length, width) : JSON.stringify(slice);
        }
        this.json.append(json);
      }
      this.pending += end - i;
      i = end;
      if (this.pending >= this.rowsPerStatement) await this.send();
    }
  }

  /** Stores what is left; resolves when every row added is stored. */
  async flush(): Promise<void> {
    if (this.pending) await this.send();
    const last = this.storing;
    this.storing = undefined;
    if (last) await last;
  }

  private async send(): Promise<void> {
    const json = this.json.empty ? undefined : this.json.take();
    const values = this.values;
    this.values = [];
    this.pending = 0;
    if (this.storing) await this.storing;
    this.storing = json
      ? this.knex.raw(this.jsonInsert, [json]).then(() => {})
      : insertWithValues(this.knex, this.table, this.cols, this.columns.length, values, 0, values.length, this.options.maxVariables, this.tail);
    this.storing.catch(() => {}); // awaited by the next send() or flush(); not an unhandled rejection meanwhile
  }
}

/**
 * A JSON array of rows written as UTF-8 bytes as its pieces come (JSON arrays of rows each), for
 * binding as sqliteText's bytes are: each piece is encoded at once, so its text can go while
 * still in V8's young generation, and no text of the whole is ever made (joining the pieces and
 * encoding the join walked and copied every row three times).
 */
class JsonRowsBytes {
  private room = Buffer.allocUnsafeSlow(256 << 10);
  private length = 0;

  get empty(): boolean { return this.length === 0; }

  /** Appends the rows of `json`, a JSON array of at least one row. */
  append(json: string): void {
    for (;;) {
      const { read, written } = utf8Encoder.encodeInto(json, this.room.subarray(this.length));
      if (read === json.length) {
        // The piece's '[' opens the array, or is the ',' after the rows before; its ']' is dropped.
        if (this.length) this.room[this.length] = 0x2c;
        this.length += written - 1;
        return;
      }
      const room = Buffer.allocUnsafeSlow(Math.max(this.room.length * 2, this.length + json.length * 3 + 1));
      this.room.copy(room, 0, 0, this.length);
      this.room = room;
    }
  }

  /** The array so far, closed, as bytes of its own; the next append() starts another. */
  take(): Buffer {
    this.room[this.length] = 0x5d;
    const bytes = Buffer.from(this.room.subarray(0, this.length + 1));
    this.length = 0;
    return bytes;
  }
}

async function insertWithValues(
  knex: Knex | Knex.Transaction, table: string, cols: string, width: number, rows: unknown[][],
  from: number, to: number, maxVariables = 30_000, tail: string,
): Promise<void> {
  const perStatement = Math.max(1, Math.floor(maxVariables / width));
  const head = `INSERT INTO ${quote(table)} (${cols}) VALUES `;
  const tuple = `(${new Array(width).fill('?').join(', ')})`;
  for (let i = from; i < to; i += perStatement) {
    const end = Math.min(to, i + perStatement);
    const values: unknown[] = new Array((end - i) * width);
    let k = 0;
    for (let r = i; r < end; r++) {
      const row = rows[r];
      for (let j = 0; j < width; j++) values[k++] = row[j] === undefined ? null : row[j];
    }
    const sql = head + new Array(end - i).fill(tuple).join(', ') + tail;
    await knex.raw(sql, values as Knex.RawBinding[]);
  }
}

const isWellFormed: (s: string) => boolean = typeof (String.prototype as { isWellFormed?: unknown }).isWellFormed === 'function'
  ? (s) => (s as unknown as { isWellFormed(): boolean }).isWellFormed()
  : (s) => !/[\ud800-\udfff]/.test(s) || /^(?:[^\ud800-\udfff]|[\ud800-\udbff][\udc00-\udfff])*$/.test(s);

const SCAN_PLAIN = 0;
const SCAN_UNFIT = 1;

/**
 * SCAN_PLAIN: JSON.stringify stores every value of rows[from..to) exactly as binding it would;
 * SCAN_UNFIT: some value cannot go through JSON (fraction, -0, NaN, BigInt, Buffer, Date,
 * ill-formed UTF-16); else the columns holding safe integers beyond 32 bits.
 */
function scan(rows: unknown[][], from: number, to: number, width: number): typeof SCAN_PLAIN | typeof SCAN_UNFIT | number[] {
  let wide: number[] | undefined;
  for (let r = from; r < to; r++) {
    const row = rows[r];
    for (let j = 0; j < width; j++) {
      const v = row[j];
      if (v === null || v === undefined) continue;
      const t = typeof v;
      if (t === 'string') {
        if (!isWellFormed(v as string)) return SCAN_UNFIT;
      } else if (t === 'number') {
        if (((v as number) | 0) === v && !Object.is(v, -0)) continue;
        if (!Number.isSafeInteger(v)) return SCAN_UNFIT;
        if (!wide) wide = [j];
        else if (!wide.includes(j)) wide.push(j);
      } else if (t !== 'boolean') {
        return SCAN_UNFIT;
      }
    }
  }
  return wide ?? SCAN_PLAIN;
}

/** Like JSON.stringify(rows.slice(from, to)) but safe integers beyond 32 bits are written `n.0` (a REAL, as bound). */
function encodeRows(rows: unknown[][], from: number, to: number, width: number): string {
  let out = '[';
  for (let r = from; r < to; r++) {
    const row = rows[r];
    let s = r === from ? '[' : ',[';
    for (let j = 0; j < width; j++) {
      if (j !== 0) s += ',';
      const v = row[j];
      if (typeof v === 'number') s += (v | 0) === v ? String(v) : v + '.0';
      else s += v === undefined ? 'null' : JSON.stringify(v);
    }
    out += s + ']';
  }
  return out + ']';
}

/** Per column: does its declared type give it TEXT or BLOB affinity (or is the table unknown)? Cached per database and table. */
const affinityCache = new WeakMap<object, Map<string, Map<string, boolean>>>();
async function textualColumns(knex: Knex | Knex.Transaction, table: string, columns: string[]): Promise<boolean[]> {
  const key = knex.client.config as object;
  let tables = affinityCache.get(key);
  if (!tables) affinityCache.set(key, (tables = new Map()));
  let byName = tables.get(table);
  if (!byName) {
    const info = (await knex.raw(`PRAGMA table_info(${quote(table)})`)) as { name: string; type: string }[];
    byName = new Map(info.map((c) => {
      const type = String(c.type ?? '').toUpperCase();
      const numeric = type.includes('INT') || (!/CHAR|CLOB|TEXT|BLOB/.test(type) && type !== '');
      return [c.name, !numeric];
    }));
    if (byName.size) tables.set(table, byName);
  }
  return columns.map((c) => byName!.get(c) ?? true);
}

function quote(identifier: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(identifier)) throw new Error(`insertRows: bad identifier ${identifier}`);
  return `"${identifier}"`;
}
