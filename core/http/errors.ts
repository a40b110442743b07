import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { isAppError } from '../../sdk/errors.js';

interface Validation { instancePath: string; message?: string; params: Record<string, any>; keyword: string }

/** `channel_id must be integer`, `username is required`: the field, then the rule. */
function validationMessage(err: FastifyError): string {
  const v = (err.validation as Validation[] | undefined)?.[0];
  if (!v) return err.message;
  const where = err.validationContext === 'body' ? 'body' : err.validationContext ?? '';
  const field = v.instancePath.replace(/^\//, '').replace(/\//g, '.');
  if (v.keyword === 'required') return `${field ? field + '.' : ''}${v.params.missingProperty} is required`;
  if (v.keyword === 'additionalProperties') return `${field || where}: unknown field ${v.params.additionalProperty}`;
  if (v.keyword === 'type' && !field && where === 'body') return `request body must be a JSON ${v.params.type}`;
  return `${field || where} ${v.message ?? 'is invalid'}`;
}

// Fastify's own client errors, with messages a client can act on.
const FASTIFY_CLIENT_ERRORS: Record<string, [number, string]> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: [415, 'Unsupported content type'],
  FST_ERR_CTP_BODY_TOO_LARGE: [413, 'Request body too large'],
  FST_ERR_CTP_EMPTY_JSON_BODY: [400, 'Request body is empty but content-type is application/json'],
  FST_ERR_CTP_INVALID_JSON_BODY: [400, 'Malformed JSON body'],
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: [400, 'Invalid content-length'],
  FST_REQ_FILE_TOO_LARGE: [413, 'File too large'],
  FST_PARTS_LIMIT: [413, 'Too many parts'],
  FST_FILES_LIMIT: [413, 'Too many files'],
  FST_FIELDS_LIMIT: [413, 'Too many fields'],
  FST_INVALID_MULTIPART_CONTENT_TYPE: [415, 'Expected multipart/form-data'],
  FST_PROTO_VIOLATION: [400, 'Malformed multipart body'],
};

/** The one error handler: every error body is exactly {"error": message}. */
export function errorHandler(err: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  if (isAppError(err)) {
    reply.headers(err.headers).code(err.statusCode).send({ error: err.message });
    return;
  }
  if (err.validation) {
    reply.code(400).send({ error: validationMessage(err) });
    return;
  }
  const known = err.code ? FASTIFY_CLIENT_ERRORS[err.code] : undefined;
  if (known) {
    reply.code(known[0]).send({ error: known[1] });
    return;
  }
  if (err instanceof SyntaxError || (err.statusCode === 400 && /JSON/i.test(err.message))) {
    reply.code(400).send({ error: 'Malformed JSON body' });
    return;
  }
  if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
    reply.code(err.statusCode).send({ error: err.message });
    return;
  }
  request.log.error({ err }, 'unhandled error');
  reply.code(500).send({ error: 'Internal server error' });
}
