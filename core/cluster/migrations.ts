import type { Migration } from '../../sdk/plugin.js';

/**
 * Tables of cluster mode (PostgreSQL only; a single node never creates them):
 * the nodes and their heartbeats, the leases, and the secrets every node signs with.
 */
export const clusterMigrations: Migration[] = [
  {
    name: '001_cluster',
    async up(knex) {
      await knex.schema.createTable('cluster_nodes', (t) => {
        t.string('id', 64).primary();
        t.string('advertise_url', 512).nullable();
        t.timestamp('started_at', { useTz: true }).notNullable();
        t.timestamp('heartbeat_at', { useTz: true }).notNullable();
        t.text('status').notNullable(); // JSON: load, memory, running jobs
      });
      // A lease: held by `node` until `expires_at` (the database's clock, never a node's);
      // `token` grows on every take, so a late write of an old holder can be told apart.
      await knex.schema.createTable('cluster_leases', (t) => {
        t.string('name', 191).primary();
        t.string('node', 64).notNullable();
        t.bigInteger('token').notNullable();
        t.timestamp('expires_at', { useTz: true }).notNullable();
      });
      await knex.schema.createTable('cluster_secrets', (t) => {
        t.string('name', 64).primary();
        t.text('value').notNullable();
      });
    },
  },
  {
    // Leases counted together (one tuner's streams across the nodes).
    name: '002_lease_groups',
    async up(knex) {
      await knex.schema.alterTable('cluster_leases', (t) => {
        t.string('grp', 191).nullable().index();
      });
    },
  },
  {
    // What a lease is for now, when its name is one of a pool (`transcodes:<node>:<n>`): the job
    // it counts, so that a request for that job on another node finds the node running it.
    name: '003_lease_subjects',
    async up(knex) {
      await knex.schema.alterTable('cluster_leases', (t) => {
        t.string('subject', 191).nullable().index();
      });
    },
  },
  {
    // Failed sign-ins and password checks of every node (core/auth/rate-limit.ts): counted together,
    // or an attacker would get the attempts once per node.
    name: '004_login_failures',
    async up(knex) {
      await knex.schema.createTable('cluster_login_failures', (t) => {
        t.text('key').notNullable();
        t.bigInteger('at').notNullable();
        t.index(['key', 'at']);
        t.index(['at']);
      });
    },
  },
  {
    // Cluster.once: when a piece of start-up work last ended, and for what (its fingerprint).
    name: '005_runs',
    async up(knex) {
      await knex.schema.createTable('cluster_runs', (t) => {
        t.string('name', 191).primary();
        t.string('fingerprint', 128).notNullable();
        t.timestamp('ended_at', { useTz: true }).notNullable();
      });
    },
  },
];
