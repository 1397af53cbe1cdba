// {{name}}: a toolhost tool. It counts the lines and bytes of a file in the workspace; change
// `schema`, `validate` and `call` to make it yours. Build with `./build.sh`, try it with
// `toolhost --tools dist call {{name}} '{"path":"README.md"}'`.
//
// componentize-js conventions: the exported interface `tool` is an exported object; a function
// returning `result<T, E>` returns T and throws E. StarlingMonkey has no file API, so files are
// read through the `wasi:filesystem` imports declared in wit/world.wit.

import { getDirectories } from 'wasi:filesystem/preopens@0.2.12';
import { contextGet } from 'toolhost:tool/host@0.1.0';

const NAME = '{{name}}';
const SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  properties: { path: { type: 'string', description: 'A file, relative to the workspace or absolute.' } },
  required: ['path'],
  additionalProperties: false,
};

function normalize(path) {
  const parts = [];
  for (const p of path.split('/')) {
    if (p === '' || p === '.') continue;
    if (p === '..') parts.pop();
    else parts.push(p);
  }
  return '/' + parts.join('/');
}

// Granted directories are preopened at their absolute paths: open the file through the
// deepest one that holds it.
function readFile(path) {
  const ws = contextGet('toolhost.workspace');
  const abs = normalize(path.startsWith('/') ? path : `${ws ? JSON.parse(ws) : ''}/${path}`);
  let best = null;
  for (const [dir, name] of getDirectories()) {
    const root = normalize(name);
    if ((root === '/' || abs === root || abs.startsWith(root + '/')) && (!best || root.length > best.root.length)) {
      best = { dir, root };
    }
  }
  if (!best) throw { tag: 'denied', val: `${path}: outside every granted directory` };
  const rel = abs === best.root ? '.' : abs.slice(best.root === '/' ? 1 : best.root.length + 1);
  try {
    const file = best.dir.openAt({ symlinkFollow: true }, rel, {}, { read: true });
    const chunks = [];
    let offset = 0n;
    for (;;) {
      const [bytes, eof] = file.read(65536n, offset);
      chunks.push(bytes);
      offset += BigInt(bytes.length);
      if (eof || bytes.length === 0) break;
    }
    return chunks;
  } catch (e) {
    const code = e && e.payload !== undefined ? e.payload : String(e);
    if (code === 'no-entry') throw { tag: 'invalid-input', val: `${path}: no such file` };
    throw { tag: 'failed', val: `${path}: ${code}` };
  }
}

export const tool = {
  schema() {
    return {
      name: NAME,
      description: 'Counts the lines and bytes of a file in the workspace.',
      inputSchema: JSON.stringify(SCHEMA),
      permissionSubject: '/path', // what permission rules match
      readOnly: true, // never writes: may run in parallel
      capabilities: [{ tag: 'fs-read', val: '.' }], // the most it may be granted
    };
  },
  isConcurrencySafe(_input) {
    return true;
  },
  // Runs with no capabilities at all: decide from the input alone.
  validate(input) {
    if (!JSON.parse(input).path.trim()) throw `${NAME}: \`path\` is empty; give a file such as "README.md"`;
  },
  call(input) {
    const { path } = JSON.parse(input);
    let lines = 0;
    let bytes = 0;
    for (const chunk of readFile(path)) {
      bytes += chunk.length;
      for (const b of chunk) if (b === 10) lines++;
    }
    return { content: [{ tag: 'text', val: `${path}: ${lines} lines, ${bytes} bytes` }], contextUpdates: [] };
  },
};
