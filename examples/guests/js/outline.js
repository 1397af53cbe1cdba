// MarkdownOutline: the heading outline of a Markdown file (ATX `#` and setext headings, fenced
// code and front matter skipped), with line numbers and GitHub-style anchors.
//
// A toolhost tool written in JavaScript against the `toolhost:tool/plugin@0.1.0` world and
// built with componentize-js (see ../build.sh and build.mjs). StarlingMonkey has no file API of
// its own, so the tool imports `wasi:filesystem` through its WIT world (wit/world.wit) and
// reads files with it directly.
//
// Conventions of componentize-js: an exported interface is an exported object named after it
// (`tool`); a function returning `result<T, E>` returns T, and throws E (here a `tool-error`,
// `{ tag: 'invalid-input' | 'denied' | 'failed', val: message }`); WASI calls that fail throw an
// error whose `payload` is the WASI error code (e.g. 'no-entry').

import { getDirectories } from 'wasi:filesystem/preopens@0.2.12';
import { contextGet, progress } from 'toolhost:tool/host@0.1.0';

const NAME = 'MarkdownOutline';
const EXTENSIONS = ['.md', '.markdown', '.mdx', '.mkd'];
// Largest file read: an outline is for documents, not dumps.
const MAX_BYTES = 8 << 20;

const SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  properties: {
    path: {
      type: 'string',
      minLength: 1,
      description: 'The Markdown file, relative to the workspace or absolute.',
    },
    max_depth: {
      type: 'integer',
      minimum: 1,
      maximum: 6,
      default: 6,
      description: 'Deepest heading level listed (1 = only `#` headings).',
    },
    format: {
      enum: ['text', 'json'],
      default: 'text',
      description: '`text`: an indented list; `json`: [{level, title, line, anchor}].',
    },
  },
  required: ['path'],
  additionalProperties: false,
};

const toolError = (tag, val) => ({ tag, val });

/** What is wrong with the input's meaning, from the input alone (validate has no files). */
function problems(args) {
  const out = [];
  const lower = args.path.toLowerCase();
  if (!EXTENSIONS.some((e) => lower.endsWith(e))) {
    out.push(`${JSON.stringify(args.path)} is not a Markdown file: the path must end in ${EXTENSIONS.join(', ')}`);
  }
  if (args.path.includes('\0')) out.push('the path contains a NUL character');
  return out;
}

/** `/a/./b/../c` -> `/a/c` (purely lexical: symlinks are the host's business). */
function normalize(path) {
  const parts = [];
  for (const p of path.split('/')) {
    if (p === '' || p === '.') continue;
    if (p === '..') parts.pop();
    else parts.push(p);
  }
  return '/' + parts.join('/');
}

/** The bytes of `path`, read through the granted directory (preopen) that holds it. */
function readFile(path) {
  const ws = contextGet('toolhost.workspace');
  const workspace = ws ? JSON.parse(ws) : '/';
  const abs = normalize(path.startsWith('/') ? path : `${workspace}/${path}`);
  // Preopens are the granted directories, at their absolute host paths: take the deepest one
  // that contains the file.
  let best = null;
  for (const [dir, name] of getDirectories()) {
    const root = normalize(name);
    const inside = root === '/' || abs === root || abs.startsWith(root + '/');
    if (inside && (!best || root.length > best.root.length)) best = { dir, root };
  }
  if (!best) {
    throw toolError('denied', `${path}: outside every directory this tool was granted (the workspace is ${workspace})`);
  }
  const rel = abs === best.root ? '.' : abs.slice(best.root === '/' ? 1 : best.root.length + 1);
  let file;
  try {
    file = best.dir.openAt({ symlinkFollow: true }, rel, {}, { read: true });
  } catch (e) {
    throw wasiError(path, e);
  }
  try {
    const size = file.stat().size;
    if (size > BigInt(MAX_BYTES)) throw toolError('invalid-input', `${path} is larger than ${MAX_BYTES >> 20} MiB`);
    const chunks = [];
    let offset = 0n;
    for (;;) {
      const [bytes, eof] = file.read(1n << 20n, offset);
      chunks.push(bytes);
      offset += BigInt(bytes.length);
      if (eof || bytes.length === 0) break;
    }
    const all = new Uint8Array(Number(offset));
    let at = 0;
    for (const c of chunks) {
      all.set(c, at);
      at += c.length;
    }
    return all;
  } catch (e) {
    throw e && e.tag ? e : wasiError(path, e);
  }
}

/** A WASI error (thrown with the error code as `payload`) as a tool error for the model. */
function wasiError(path, e) {
  const code = e && e.payload !== undefined ? e.payload : String(e);
  switch (code) {
    case 'no-entry':
      return toolError('invalid-input', `${path}: no such file`);
    case 'is-directory':
      return toolError('invalid-input', `${path} is a directory, not a Markdown file`);
    case 'access':
    case 'not-permitted':
    case 'read-only':
      return toolError('denied', `${path}: access denied (${code})`);
    default:
      return toolError('failed', `${path}: ${code}`);
  }
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes, made unique. */
function anchorer() {
  const seen = new Map();
  return (title) => {
    const base = title
      .toLowerCase()
      .replace(/[^a-z0-9\u00c0-\uffff\s_-]/g, '') // (no Unicode property classes in this engine build)
      .trim()
      .replace(/\s/g, '-');
    const n = seen.get(base) || 0;
    seen.set(base, n + 1);
    return n ? `${base}-${n}` : base;
  };
}

/** Headings of a Markdown text: [{level, title, line, anchor}]. */
function outline(text, maxDepth = 6) {
  const lines = text.split(/\r?\n/);
  const anchor = anchorer();
  const headings = [];
  let fence = null; // the opening fence (e.g. "```") while inside a code block
  let i = 0;
  // YAML front matter at the very top is not content.
  if (lines[0] === '---') {
    const end = lines.indexOf('---', 1);
    if (end > 0) i = end + 1;
  }
  let paragraph = null; // a plain text line that a setext underline may turn into a heading
  for (; i < lines.length; i++) {
    const line = lines[i];
    const f = /^ {0,3}(`{3,}|~{3,})/.exec(line);
    if (fence) {
      if (f && f[1][0] === fence[0] && f[1].length >= fence.length && line.trim() === f[1]) fence = null;
      continue;
    }
    if (f) {
      fence = f[1];
      paragraph = null;
      continue;
    }
    const atx = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/.exec(line);
    if (atx) {
      add(atx[1].length, (atx[2] || '').trim(), i + 1);
      paragraph = null;
      continue;
    }
    const setext = /^ {0,3}(=+|-+)[ \t]*$/.exec(line);
    if (setext && paragraph) {
      add(setext[1][0] === '=' ? 1 : 2, paragraph.text, paragraph.line);
      paragraph = null;
      continue;
    }
    const plain = line.trim() !== '' && !/^ {0,3}([-*+>]|\d+[.)])(\s|$)/.test(line) && !/^( {4}|\t)/.test(line);
    paragraph = plain ? { text: line.trim(), line: i + 1 } : null;
  }
  return headings;

  function add(level, title, line) {
    const a = anchor(title);
    if (level <= maxDepth) headings.push({ level, title, line, anchor: a });
  }
}

function render(headings, path, format) {
  if (format === 'json') return JSON.stringify(headings);
  if (headings.length === 0) return `${path}: no headings`;
  const top = Math.min(...headings.map((h) => h.level));
  const body = headings.map((h) => `${'  '.repeat(h.level - top)}- ${h.title} (line ${h.line}, #${h.anchor})`);
  return `${path}: ${headings.length} heading${headings.length === 1 ? '' : 's'}\n${body.join('\n')}`;
}

export const tool = {
  schema() {
    return {
      name: NAME,
      description:
        'Outlines a Markdown file: its headings (ATX and setext; code blocks and front matter skipped) ' +
        'as an indented list with line numbers and anchors, or as JSON.',
      inputSchema: JSON.stringify(SCHEMA),
      permissionSubject: '/path',
      readOnly: true,
      capabilities: [{ tag: 'fs-read', val: '.' }],
    };
  },

  isConcurrencySafe(_input) {
    return true; // it only ever reads
  },

  validate(input) {
    const found = problems(JSON.parse(input));
    if (found.length) throw `${NAME}: ${found.join('; ')}`;
  },

  call(input) {
    const args = JSON.parse(input);
    const bytes = readFile(args.path);
    let text;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch (e) {
      throw toolError('invalid-input', `${args.path} is not UTF-8 text (${e.message})`);
    }
    const headings = outline(text, args.max_depth ?? 6);
    progress(`${headings.length} headings`);
    return {
      content: [{ tag: 'text', val: render(headings, args.path, args.format ?? 'text') }],
      contextUpdates: [],
    };
  },
};
