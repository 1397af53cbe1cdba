// Text tools: a function component in JavaScript (world `test:text/text-tools-js` in
// wit/js.wit: the `text-tools` world of wit/text.wit plus the WASI filesystem imports).
//
// Not a toolhost plugin: it exports plain functions (`shout`, `readFile`) and an interface
// (`text`) instead of `toolhost:tool/tool`, and toolhost makes a tool of each function, with
// an input schema derived from the WIT parameter types. text_tools.py implements the same WIT
// with the same behaviour. Built with componentize-js (see ../build.sh and ../js/build.mjs).
//
// Conventions of componentize-js: top-level exports are exported functions (camelCase), an
// exported interface is an exported object named after it; records are objects with camelCase
// fields, enums are strings, an absent option is `undefined`; a function returning
// `result<T, E>` returns T and throws E. StarlingMonkey has no file API of its own, so
// `readFile` uses the WASI filesystem interfaces (WASI calls that fail throw an error whose
// `payload` is the WASI error code, e.g. 'no-entry').

import { getDirectories } from 'wasi:filesystem/preopens@0.2.12';

const DEFAULT_TOP = 3;

/**
 * Whether `c` (one code point) is a word character: a letter with distinct upper and lower case
 * forms, an ASCII digit, `'` or `-` (the same rule as `_is_word_char` in text_tools.py).
 * StarlingMonkey's regular expressions have no Unicode property escapes (`\p{L}`), so the
 * rule uses case mapping, which it has.
 */
function isWordChar(c) {
  return (c >= '0' && c <= '9') || c === "'" || c === '-' || c.toLowerCase() !== c.toUpperCase();
}

/** The words of `input`: maximal runs of word characters, as [start, end) code point indexes. */
function wordSpans(chars) {
  const spans = [];
  let start = -1;
  chars.forEach((c, i) => {
    if (isWordChar(c)) {
      if (start < 0) start = i;
    } else if (start >= 0) {
      spans.push([start, i]);
      start = -1;
    }
  });
  if (start >= 0) spans.push([start, chars.length]);
  return spans;
}

export function shout(s) {
  return s.toUpperCase() + '!';
}

/** `/a/./b/../c` -> `/a/c` (purely lexical). */
function normalize(path) {
  const parts = [];
  for (const p of path.split('/')) {
    if (p === '' || p === '.') continue;
    if (p === '..') parts.pop();
    else parts.push(p);
  }
  return '/' + parts.join('/');
}

/**
 * The preopen that holds `path` and the path relative to it, as wasi-libc (Python's `open`)
 * resolves it: a relative path in the preopen named ".", an absolute one in the deepest
 * preopen that contains it. `null` when none does.
 */
function locate(path) {
  const dirs = getDirectories();
  if (!path.startsWith('/')) {
    const dot = dirs.find(([, name]) => name === '.');
    if (dot) return { dir: dot[0], rel: normalize(path).slice(1) || '.' };
  }
  const abs = normalize(path);
  let best = null;
  for (const [dir, name] of dirs) {
    if (name === '.') continue;
    const root = normalize(name);
    const inside = root === '/' || abs === root || abs.startsWith(root + '/');
    if (inside && (!best || root.length > best.root.length)) best = { dir, root };
  }
  if (!best) return null;
  const rel = abs === best.root ? '.' : abs.slice(best.root === '/' ? 1 : best.root.length + 1);
  return { dir: best.dir, rel };
}

/** A failed WASI call as the error text of text_tools.py for the same failure. */
function fileError(path, e) {
  const code = e && e.payload !== undefined ? e.payload : String(e);
  switch (code) {
    case 'no-entry':
      return `${path}: not found`;
    case 'access':
    case 'not-permitted':
    case 'read-only':
      return `${path}: not allowed`;
    case 'is-directory':
      return `${path}: is a directory`;
    default:
      return `${path}: ${code}`;
  }
}

export function readFile(path) {
  const at = locate(path);
  if (!at) throw `${path}: not found`;
  let file;
  try {
    file = at.dir.openAt({ symlinkFollow: true }, at.rel, {}, { read: true });
    // Opening a directory for reading succeeds (reading it fails): say what Python's open says.
    if (file.getType() === 'directory') throw { payload: 'is-directory' };
  } catch (e) {
    throw fileError(path, e);
  }
  const chunks = [];
  let size = 0n;
  try {
    for (;;) {
      const [bytes, eof] = file.read(1n << 20n, size);
      chunks.push(bytes);
      size += BigInt(bytes.length);
      if (eof || bytes.length === 0) break;
    }
  } catch (e) {
    throw fileError(path, e);
  }
  const all = new Uint8Array(Number(size));
  let offset = 0;
  for (const c of chunks) {
    all.set(c, offset);
    offset += c.length;
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(all);
  } catch {
    throw `${path}: not UTF-8 text`;
  }
}

export const text = {
  wordStats(input, opts) {
    const ignoreCase = opts ? opts.ignoreCase : false;
    const top = opts && opts.top !== undefined && opts.top !== null ? opts.top : DEFAULT_TOP;
    const chars = [...input];
    const words = wordSpans(chars).map(([a, b]) => chars.slice(a, b).join(''));
    if (words.length === 0) throw 'no words';
    const counts = new Map(); // insertion order = order of first appearance
    for (const w of words) {
      const key = ignoreCase ? w.toLowerCase() : w;
      counts.set(key, (counts.get(key) || 0) + 1);
    }
    // Array.prototype.sort is stable: ties keep their order of first appearance.
    const ranked = [...counts].sort((a, b) => b[1] - a[1]).slice(0, top);
    const length = (w) => [...w].length;
    let longest = words[0];
    for (const w of words.slice(1)) if (length(w) > length(longest)) longest = w;
    const newlines = (input.match(/\n/g) || []).length;
    return {
      words: words.length,
      lines: newlines + (input !== '' && !input.endsWith('\n') ? 1 : 0),
      chars: chars.length,
      top: ranked.map(([word, count]) => ({ word, count })),
      longest,
    };
  },

  convertCase(input, to) {
    switch (to) {
      case 'upper':
        return input.toUpperCase();
      case 'lower':
        return input.toLowerCase();
      default: {
        const chars = [...input];
        let out = '';
        let last = 0;
        for (const [a, b] of wordSpans(chars)) {
          out += chars.slice(last, a).join('');
          out += chars[a].toUpperCase() + chars.slice(a + 1, b).join('').toLowerCase();
          last = b;
        }
        return out + chars.slice(last).join('');
      }
    }
  },
};
