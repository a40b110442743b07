import type { FastifyInstance } from 'fastify';
import type { AuthService, JobManager } from '../../sdk/services.js';
import type { ClusterNode } from './cluster.js';

const ErrorBody = { type: 'object', properties: { error: { type: 'string' } }, required: ['error'] } as const;

const NodeSchema = {
  type: 'object',
  properties: {
    id: { type: 'string', description: 'cluster.nodeId (default: the host name)' },
    advertise_url: { type: ['string', 'null'], description: 'How the other nodes reach it (cluster.advertiseUrl)' },
    started_at: { type: 'string' },
    heartbeat_at: { type: 'string', description: 'Its last heartbeat (every third of a lease time, at most 5 s)' },
    alive: { type: 'boolean', description: 'Heard of within a lease time; a dead node\'s leases are taken over by the others' },
    load: {
      type: 'object', properties: { avg1: { type: 'number' }, cpus: { type: 'integer' } }, required: ['avg1', 'cpus'],
      description: 'One-minute load average, out of this many cores',
    },
    memory_mb: { type: 'integer', description: 'Resident memory of its server process' },
    transcode_capacity: { type: ['integer', 'null'], description: 'How many transcodes it runs at most (cluster.maxNodeTranscodes): a new VOD transcode asked of a node without room goes to the node with the most' },
    jobs: {
      type: 'array', description: 'Its running jobs at its last heartbeat (recordings, live sessions, transcodes, imports)',
      items: { type: 'object', properties: { key: { type: 'string' }, kind: { type: 'string' } }, required: ['key', 'kind'] },
    },
    leases: { type: 'array', items: { type: 'string' }, description: 'Leases it holds now: work that runs on one node at a time' },
  },
  required: ['id', 'advertise_url', 'started_at', 'heartbeat_at', 'alive', 'load', 'memory_mb', 'transcode_capacity', 'jobs', 'leases'],
} as const;

/** GET /api/admin/nodes: the nodes sharing this database (a single node lists itself). */
export async function clusterRoutes(app: FastifyInstance, deps: { cluster: ClusterNode; jobs: JobManager; auth: AuthService }): Promise<void> {
  app.get('/api/admin/nodes', {
    schema: {
      summary: 'The nodes of the installation (admin)', tags: ['admin'],
      description: 'With `cluster` in the config (PostgreSQL), every node on the same database, dead ones included (alive false); otherwise this node alone, with cluster false.',
      response: {
        200: {
          type: 'object',
          properties: { cluster: { type: 'boolean' }, node: { type: 'string', description: 'The node that answered' }, nodes: { type: 'array', items: NodeSchema } },
          required: ['cluster', 'node', 'nodes'],
        },
        401: ErrorBody, 403: ErrorBody,
      },
    },
  }, async (request) => {
    deps.auth.requireAdmin(request);
    return { cluster: deps.cluster.enabled, node: deps.cluster.nodeId, nodes: await deps.cluster.nodes(() => deps.jobs.list()) };
  });
}
