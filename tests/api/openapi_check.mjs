// Checks server/api/openapi.json with validators from npm (web/package.json's devDependencies),
// never with code of ours that interprets JSON Schema:
//   1. the document against the official OpenAPI 3.1 schema (@seriousme/openapi-schema-validator);
//   2. every schema in it compiles under ajv's 2020-12 dialect in strict mode (a misspelt keyword
//      or an impossible type is an error, not an annotation);
//   3. given recorded exchanges with the real server, [{method, path_template, target?, status,
//      content_type, body, request_body?}], each response body against the schema the document
//      gives for that operation, status and media type (ajv, $refs resolved inside the document),
//      and each request body the server accepted (2xx) against the operation's requestBody schema,
//      so that the document is neither looser nor stricter than the server.
// Usage: node openapi_check.mjs --web WEB_DIR --document openapi.json [--exchanges exchanges.json]
// WEB_DIR holds node_modules (`cd web && npm ci`). Exit 0: all good; 1: a check failed (each
// failure printed on its own line); 2: bad usage or missing modules.
// Run by tests/api/openapi_process_test.cc with the document the server served.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const kDocumentId = 'https://fabric-chaos.invalid/v1/openapi.json';
const kMethods = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace']);

function usage(message) {
  console.error(`openapi_check: ${message}`);
  console.error('usage: node openapi_check.mjs --web WEB_DIR --document FILE [--exchanges FILE]');
  process.exit(2);
}

function parseArgs(argv) {
  const args = {};
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i];
    if (!['--web', '--document', '--exchanges'].includes(key) || i + 1 >= argv.length) {
      usage(`unexpected argument ${key}`);
    }
    args[key.slice(2)] = argv[i + 1];
  }
  if (!args.web || !args.document) usage('--web and --document are required');
  return args;
}

function readJson(path, what) {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    usage(`cannot read ${what} ${path}: ${e.message}`);
  }
}

// RFC 6901 token, then percent-encoded for use in a URI fragment.
function pointerToken(token) {
  return encodeURIComponent(String(token).replace(/~/g, '~0').replace(/\//g, '~1'));
}

function pointer(...tokens) {
  return tokens.map((t) => '/' + pointerToken(t)).join('');
}

async function loadModules(webDir) {
  const require = createRequire(join(resolve(webDir), 'package.json'));
  try {
    const Ajv2020 = require('ajv/dist/2020.js');
    const addFormats = require('ajv-formats');
    const validatorPackage = require.resolve('@seriousme/openapi-schema-validator/package.json');
    const { main } = require('@seriousme/openapi-schema-validator/package.json');
    const { Validator } = await import(pathToFileURL(join(dirname(validatorPackage), main)).href);
    return { Ajv2020: Ajv2020.default ?? Ajv2020, addFormats: addFormats.default ?? addFormats,
             Validator };
  } catch (e) {
    usage(`cannot load ajv, ajv-formats and @seriousme/openapi-schema-validator from ` +
          `${webDir}/node_modules (cd web && npm ci): ${e.message}`);
  }
}

function describeErrors(errors) {
  if (typeof errors === 'string') return errors;
  return (errors ?? [])
    .map((e) => `${e.instancePath || '(root)'} ${e.message}` +
                (e.params && Object.keys(e.params).length ? ` ${JSON.stringify(e.params)}` : '') +
                (e.schemaPath ? ` [${e.schemaPath}]` : ''))
    .join('; ');
}

const failures = [];
function fail(message) {
  failures.push(message);
  console.log(`FAIL ${message}`);
}

const args = parseArgs(process.argv.slice(2));
const { Ajv2020, addFormats, Validator } = await loadModules(args.web);
const document = readJson(args.document, 'the document');

// 1. The document against the OpenAPI 3.1 schema.
{
  const validator = new Validator();
  const result = await validator.validate(structuredClone(document));
  if (!result.valid) {
    fail(`the document is not valid OpenAPI ${document.openapi}: ${describeErrors(result.errors)}`);
  } else {
    console.log(`ok: the document is valid OpenAPI ${validator.version} (${document.openapi})`);
  }
}

// 2. Every schema compiles in strict mode. The whole document is added under one id, so that
// "#/components/schemas/X" inside it resolves; schemas are compiled through references to it.
// strictRequired is off: `oneOf: [{required: [a]}, {required: [b]}]` names properties declared by
// the enclosing schema, the usual way to say "exactly one of".
const ajv = new Ajv2020({ strict: true, strictRequired: false, allowUnionTypes: true,
                          allErrors: true });
addFormats(ajv);
// The OpenAPI Object's own fields are not schema keywords: declared as annotations, so that strict
// mode accepts the root while it still checks every schema reached through a reference.
ajv.addVocabulary(['openapi', 'info', 'jsonSchemaDialect', 'servers', 'paths', 'webhooks',
                   'components', 'security', 'tags', 'externalDocs']);
ajv.addSchema(document, kDocumentId);
const compiled = new Map();
function validatorAt(fragment) {
  const ref = `${kDocumentId}#${fragment}`;
  if (!compiled.has(ref)) compiled.set(ref, ajv.compile({ $ref: ref }));
  return compiled.get(ref);
}
let schemaCount = 0;
for (const name of Object.keys(document.components?.schemas ?? {})) {
  try {
    validatorAt(pointer('components', 'schemas', name));
    ++schemaCount;
  } catch (e) {
    fail(`components.schemas.${name} does not compile: ${e.message}`);
  }
}
console.log(`ok: ${schemaCount} component schemas compile (ajv 2020-12, strict)`);

// The object a local $ref names, and the fragment it was found at.
function deref(node, fragment) {
  while (node && typeof node.$ref === 'string') {
    if (!node.$ref.startsWith('#/')) throw new Error(`non-local $ref ${node.$ref}`);
    fragment = node.$ref.slice(1).split('/').map((t) => encodeURIComponent(
        decodeURIComponent(t))).join('/');
    node = node.$ref.slice(2).split('/').reduce(
        (n, t) => n?.[t.replace(/~1/g, '/').replace(/~0/g, '~')], document);
  }
  if (node === undefined) throw new Error(`unresolved reference at ${fragment}`);
  return { node, fragment };
}

// Every media type schema of every response and request body compiles too.
for (const [path, item] of Object.entries(document.paths ?? {})) {
  for (const [method, operation] of Object.entries(item)) {
    if (!kMethods.has(method)) continue;
    const where = `${method.toUpperCase()} ${path}`;
    const bodies = [];
    for (const [status, response] of Object.entries(operation.responses ?? {})) {
      bodies.push([`response ${status}`, response, pointer('paths', path, method, 'responses',
                                                            status)]);
    }
    if (operation.requestBody) {
      bodies.push(['request body', operation.requestBody,
                   pointer('paths', path, method, 'requestBody')]);
    }
    for (const [what, raw, at] of bodies) {
      try {
        const { node, fragment } = deref(raw, at);
        for (const media of Object.keys(node.content ?? {})) {
          validatorAt(`${fragment}${pointer('content', media, 'schema')}`);
        }
      } catch (e) {
        fail(`${where} ${what}: ${e.message}`);
      }
    }
  }
}

// 3. Recorded exchanges.
if (args.exchanges) {
  const exchanges = readJson(args.exchanges, 'the exchanges');
  if (!Array.isArray(exchanges) || exchanges.length === 0) usage('no exchanges recorded');
  let checked = 0;
  for (const ex of exchanges) {
    const method = String(ex.method).toLowerCase();
    const where = `${ex.method} ${ex.target ?? ex.path_template} (${ex.path_template}) -> ` +
                  `${ex.status}`;
    const operation = document.paths?.[ex.path_template]?.[method];
    if (!operation) {
      fail(`${where}: the document has no such operation`);
      continue;
    }
    const opAt = pointer('paths', ex.path_template, method);
    const key = operation.responses?.[String(ex.status)] ? String(ex.status)
                : ex.status >= 400 && operation.responses?.default ? 'default' : null;
    if (key === null) {
      fail(`${where}: status ${ex.status} is not documented (documented: ` +
           `${Object.keys(operation.responses ?? {}).join(', ')})`);
      continue;
    }
    let response;
    try {
      response = deref(operation.responses[key], `${opAt}${pointer('responses', key)}`);
    } catch (e) {
      fail(`${where}: ${e.message}`);
      continue;
    }
    const content = response.node.content ?? {};
    if (ex.status === 204 || Object.keys(content).length === 0) {
      if ((ex.body ?? '') !== '') fail(`${where}: a body where the document says there is none`);
      ++checked;
      continue;
    }
    const media = String(ex.content_type ?? '').split(';')[0].trim().toLowerCase();
    if (!(media in content)) {
      fail(`${where}: Content-Type "${ex.content_type}" is not documented (documented: ` +
           `${Object.keys(content).join(', ')})`);
      continue;
    }
    let body = ex.body ?? '';
    if (media === 'application/json') {
      try {
        body = JSON.parse(body);
      } catch (e) {
        fail(`${where}: the body is not JSON (${e.message}): ${String(ex.body).slice(0, 200)}`);
        continue;
      }
    }
    const validate = validatorAt(`${response.fragment}${pointer('content', media, 'schema')}`);
    if (!validate(body)) {
      fail(`${where}: the body does not match the documented schema: ` +
           `${describeErrors(validate.errors)}\n  body: ${String(ex.body).slice(0, 600)}`);
      continue;
    }
    if (ex.request_body !== undefined && ex.status >= 200 && ex.status < 300 &&
        operation.requestBody) {
      try {
        const request = deref(operation.requestBody, `${opAt}/requestBody`);
        const check = validatorAt(`${request.fragment}${pointer('content', 'application/json',
                                                                 'schema')}`);
        if (!check(JSON.parse(ex.request_body))) {
          fail(`${where}: the server accepted a request body the document refuses: ` +
               `${describeErrors(check.errors)}\n  request: ${ex.request_body.slice(0, 600)}`);
          continue;
        }
      } catch (e) {
        fail(`${where}: request body: ${e.message}`);
        continue;
      }
    }
    ++checked;
  }
  console.log(`ok: ${checked} of ${exchanges.length} recorded exchanges match the document`);
}

if (failures.length > 0) {
  console.log(`${failures.length} check(s) failed`);
  process.exit(1);
}
console.log('all checks passed');
