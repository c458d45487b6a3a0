// markdown.js: the agent's markdown as DOM nodes. It builds elements and
// text nodes directly and never parses HTML, so markup in a reply shows as
// the characters it is made of and cannot run. Links keep only http(s) and
// mailto targets and open in a new tab with rel=noopener.
//
// It covers what coding agents write: headings, paragraphs, fenced code,
// lists (nested, numbered), quotes, tables, rules, and inline code,
// emphasis, strikethrough, links and bare URLs. A streaming reply is cut
// into blocks (splitBlocks) so that only the block still growing is
// rendered again as text arrives.

import { el } from './dom.js';

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^\s`]*)[^`]*$/;
const HEADING = /^ {0,3}(#{1,6})(?:\s+(.*?))?(?:\s+#+)?\s*$/;
const RULE = /^ {0,3}([-*_])(?:\s*\1){2,}\s*$/;
const QUOTE = /^ {0,3}> ?/;
const LIST_ITEM = /^(\s*)([-*+]|\d{1,9}[.)])(?:\s+(.*)|\s*$)/;
const TABLE_SEP = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;
const ESCAPABLE = '\\`*_{}[]()#+-.!|~<>"\'';

/**
 * splitBlocks cuts markdown into blocks: a block ends at a blank line
 * outside a code fence, and a fence (open or closed) is one block. Joining
 * the blocks with blank lines renders as the whole text does.
 */
export function splitBlocks(text) {
  const blocks = [];
  let cur = [];
  let fence = null;
  const flush = () => {
    if (cur.length) blocks.push(cur.join('\n'));
    cur = [];
  };
  for (const line of text.split('\n')) {
    if (fence) {
      cur.push(line);
      if (closesFence(line, fence)) {
        fence = null;
        flush();
      }
      continue;
    }
    const f = FENCE.exec(line);
    if (f) {
      flush();
      fence = f[1];
      cur.push(line);
      continue;
    }
    if (line.trim() === '') flush();
    else cur.push(line);
  }
  flush();
  return blocks;
}

function closesFence(line, marker) {
  const t = line.trim();
  return t.length >= marker.length && t[0] === marker[0] && /^(`+|~+)$/.test(t) && line.search(/\S/) <= 3;
}

/** renderBlock renders one block (see splitBlocks) as a DocumentFragment. */
export function renderBlock(src) {
  const frag = document.createDocumentFragment();
  renderLines(src.split('\n'), frag);
  return frag;
}

/** renderMarkdown renders a whole text as a DocumentFragment. */
export function renderMarkdown(text) {
  const frag = document.createDocumentFragment();
  for (const b of splitBlocks(text)) frag.append(renderBlock(b));
  return frag;
}

// renderLines renders the lines of one block into parent.
function renderLines(lines, parent) {
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (line.trim() === '') { i++; continue; }
    let m;
    if ((m = FENCE.exec(line))) {
      i = renderFence(lines, i, m, parent);
    } else if ((m = HEADING.exec(line))) {
      const level = Math.min(6, m[1].length + 1); // h1 is the page's title
      parent.append(inline(el(`h${level}`), m[2] || ''));
      i++;
    } else if (RULE.test(line)) { // before lists: "* * *" is a rule
      parent.append(el('hr'));
      i++;
    } else if (QUOTE.test(line)) {
      const inner = [];
      while (i < lines.length && QUOTE.test(lines[i])) inner.push(lines[i++].replace(QUOTE, ''));
      const quote = el('blockquote');
      renderLines(inner, quote);
      parent.append(quote);
    } else if (LIST_ITEM.test(line)) {
      i = renderList(lines, i, parent);
    } else if (line.includes('|') && i + 1 < lines.length && TABLE_SEP.test(lines[i + 1]) && lines[i + 1].includes('-')) {
      i = renderTable(lines, i, parent);
    } else {
      const para = [];
      while (i < lines.length && lines[i].trim() !== '' && (para.length === 0 || !startsBlock(lines[i]))) {
        para.push(lines[i++].trim());
      }
      parent.append(inline(el('p'), para.join('\n')));
    }
  }
}

// startsBlock reports whether a line inside a paragraph starts a new block.
function startsBlock(line) {
  return FENCE.test(line) || HEADING.test(line) || QUOTE.test(line) || LIST_ITEM.test(line) || RULE.test(line);
}

function renderFence(lines, start, m, parent) {
  const marker = m[1];
  const lang = /^[\w+#.-]{1,32}$/.test(m[2]) ? m[2] : '';
  const body = [];
  let i = start + 1;
  while (i < lines.length && !closesFence(lines[i], marker)) body.push(lines[i++]);
  const open = i >= lines.length; // still streaming, or never closed
  if (!open) i++;
  const code = el('code', lang ? { class: `language-${lang}` } : null, body.join('\n'));
  parent.append(el('div', { class: open ? 'code open' : 'code' },
    lang ? el('div', { class: 'code-lang', text: lang }) : null,
    el('pre', null, code)));
  return i;
}

function indentOf(line) {
  const m = /^[ \t]*/.exec(line)[0];
  return m.replace(/\t/g, '    ').length;
}

// renderList renders the list starting at lines[start] and returns the
// index of the first line after it. Items nest by indentation.
function renderList(lines, start, parent) {
  const first = LIST_ITEM.exec(lines[start]);
  const indent = indentOf(lines[start]);
  const ordered = /\d/.test(first[2]);
  const list = el(ordered ? 'ol' : 'ul');
  if (ordered) {
    const n = parseInt(first[2], 10);
    if (n !== 1) list.setAttribute('start', String(n));
  }
  let i = start;
  while (i < lines.length) {
    const m = LIST_ITEM.exec(lines[i]);
    if (!m || indentOf(lines[i]) !== indent || /\d/.test(m[2]) !== ordered) break;
    const text = [m[3] || ''];
    const nested = [];
    i++;
    while (i < lines.length && lines[i].trim() !== '') {
      const sub = LIST_ITEM.exec(lines[i]);
      const ind = indentOf(lines[i]);
      if (sub && ind <= indent) break;
      if (sub || nested.length) nested.push(lines[i]);
      else text.push(lines[i].trim());
      i++;
    }
    const item = inline(el('li'), text.join('\n'));
    if (nested.length) {
      const cut = Math.min(...nested.filter((l) => l.trim()).map(indentOf));
      renderLines(nested.map((l) => dedent(l, cut)), item);
    }
    list.append(item);
  }
  parent.append(list);
  return i;
}

function dedent(line, n) {
  let i = 0;
  let col = 0;
  while (i < line.length && col < n && (line[i] === ' ' || line[i] === '\t')) {
    col += line[i] === '\t' ? 4 : 1;
    i++;
  }
  return line.slice(i);
}

function splitRow(line) {
  let s = line.trim();
  if (s.startsWith('|')) s = s.slice(1);
  if (s.endsWith('|') && !s.endsWith('\\|')) s = s.slice(0, -1);
  const cells = [];
  let cur = '';
  let code = false;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '\\' && s[i + 1] === '|') { cur += '|'; i++; continue; }
    if (c === '`') code = !code;
    if (c === '|' && !code) { cells.push(cur.trim()); cur = ''; continue; }
    cur += c;
  }
  cells.push(cur.trim());
  return cells;
}

function renderTable(lines, start, parent) {
  const head = splitRow(lines[start]);
  const aligns = splitRow(lines[start + 1]).map((c) => {
    const l = c.startsWith(':');
    const r = c.endsWith(':');
    return l && r ? 'center' : r ? 'right' : l ? 'left' : '';
  });
  const cell = (tag, text, k) => inline(el(tag, aligns[k] ? { class: `align-${aligns[k]}` } : null), text);
  const thead = el('thead', null, el('tr', null, head.map((c, k) => cell('th', c, k))));
  const tbody = el('tbody');
  let i = start + 2;
  while (i < lines.length && lines[i].includes('|') && lines[i].trim() !== '') {
    const cells = splitRow(lines[i]);
    tbody.append(el('tr', null, head.map((_, k) => cell('td', cells[k] ?? '', k))));
    i++;
  }
  parent.append(el('div', { class: 'table-wrap' }, el('table', null, thead, tbody)));
  return i;
}

// ---- inline ----

/** safeURL returns url when it is an absolute http(s) or mailto link. */
export function safeURL(url) {
  const u = String(url).trim();
  if (!/^(https?:\/\/|mailto:)/i.test(u)) return '';
  try {
    const parsed = new URL(u);
    return ['http:', 'https:', 'mailto:'].includes(parsed.protocol) ? u : '';
  } catch {
    return '';
  }
}

function link(href, children) {
  return el('a', { href, target: '_blank', rel: 'noopener noreferrer nofollow' }, children);
}

const isSpace = (c) => c === undefined || /\s/.test(c);
const isWord = (c) => c !== undefined && /[\p{L}\p{N}]/u.test(c);

// The inline parser is linear in its input, whatever the agent wrote
// (128 KB of "[", "*a ", "http://[" or "*.go " render in milliseconds):
// every forward search that can fail remembers that it failed, so the
// next one of its kind starts no new scan (Scan), bracket pairs are found
// once for the whole text, no search copies the rest of the text
// (sticky regexps), and a bare URL, a link target or a nesting of
// emphasis has a bound. Before issue #33 each "[" or "*" scanned to the
// end of the text: 128 KB of "[" took 167 s.
const MAX_URL = 2048; // longer bare URLs and link targets stay text
const MAX_DEPTH = 16; // emphasis and links nested deeper stay text
const AUTOLINK = /<((?:https?:\/\/|mailto:)[^\s<>]{1,2048})>/iy;
const BARE_URL = /https?:\/\//iy;
const URL_STOP = /[\s<>"]/;
const LINK_TITLE = /\s+(?:"[^"\n]{0,2048}"|'[^'\n]{0,2048}')\s*\)/y;

// Scan holds what one inline() call learned about its text.
class Scan {
  constructor(src) {
    this.src = src;
    this.brackets = null; // index of "[" → index of its "]" (or -1)
    this.codeFail = new Map(); // backtick run length → the first index from which no closing run is found
    this.emFail = new Map(); // delimiter+length → the first index from which no closer is found
    this.urlEnd = -1; // bare URLs: the run of URL characters ends here (before it: not computed)
    this.targetFail = -1; // a link target starting before this index is none (parseLink)
  }

  // closeBracket is the index of the "]" that closes the "[" at i, or -1.
  closeBracket(i) {
    if (!this.brackets) {
      this.brackets = new Map();
      const open = [];
      const src = this.src;
      for (let j = 0; j < src.length; j++) {
        const c = src[j];
        if (c === '\\') { j++; continue; }
        if (c === '[') open.push(j);
        else if (c === ']' && open.length) this.brackets.set(open.pop(), j);
      }
    }
    return this.brackets.get(i) ?? -1;
  }

  // codeClose is the index of the next run of exactly run backticks at or
  // after from, or -1.
  codeClose(from, run) {
    const failed = this.codeFail.get(run);
    if (failed !== undefined && from >= failed) return -1;
    const src = this.src;
    let j = src.indexOf('`', from);
    while (j >= 0) {
      const n = runLength(src, j, '`');
      if (n === run) return j;
      j = src.indexOf('`', j + n);
    }
    this.codeFail.set(run, failed === undefined ? from : Math.min(failed, from));
    return -1;
  }

  // urlRunEnd is where the run of characters a bare URL may hold, from i,
  // ends. Runs are found once each: the next call inside the same run is
  // answered at once.
  urlRunEnd(i) {
    if (i >= this.urlEnd) {
      let j = i;
      while (j < this.src.length && !URL_STOP.test(this.src[j])) j++;
      this.urlEnd = j;
    }
    return this.urlEnd;
  }
}

/** inline renders inline markdown into node and returns node. */
export function inline(node, src, inLink = false, depth = 0) {
  const scan = new Scan(src);
  let buf = '';
  const flush = () => {
    if (buf) node.append(buf);
    buf = '';
  };
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    if (c === '\\' && i + 1 < src.length && ESCAPABLE.includes(src[i + 1])) {
      buf += src[i + 1];
      i += 2;
      continue;
    }
    if (c === '\n') {
      flush();
      node.append(el('br'));
      i++;
      continue;
    }
    if (c === '`') {
      const run = runLength(src, i, '`');
      const close = scan.codeClose(i + run, run);
      if (close < 0) {
        buf += src.slice(i, i + run);
        i += run;
        continue;
      }
      let code = src.slice(i + run, close).replace(/\n/g, ' ');
      if (code.length > 2 && code.startsWith(' ') && code.endsWith(' ')) code = code.slice(1, -1);
      flush();
      node.append(el('code', null, code));
      i = close + run;
      continue;
    }
    if (c === '*' || c === '_' || c === '~') {
      const span = depth < MAX_DEPTH ? emphasis(scan, i) : null;
      if (span) {
        flush();
        node.append(inline(el(span.tag), src.slice(span.from, span.to), inLink, depth + 1));
        if (span.inner) {
          // ***both***: the outer tag holds an inner one.
          const outer = node.lastChild;
          const inner = el(span.inner);
          inner.append(...outer.childNodes);
          outer.append(inner);
        }
        i = span.end;
        continue;
      }
      const run = runLength(src, i, c);
      buf += src.slice(i, i + run);
      i += run;
      continue;
    }
    if (!inLink && depth < MAX_DEPTH && (c === '[' || (c === '!' && src[i + 1] === '['))) {
      const image = c === '!';
      const l = parseLink(scan, image ? i + 1 : i);
      if (l) {
        flush();
        const href = safeURL(l.url);
        if (image) {
          // Images are never loaded (no request leaves for another host):
          // a link to the picture, named by its alt text.
          const label = `image: ${l.text || l.url}`;
          node.append(href ? link(href, label) : label);
        } else if (href) {
          node.append(link(href, inline(document.createDocumentFragment(), l.text, true, depth + 1)));
        } else {
          // An unsafe target (javascript:, data:, relative): the words only.
          inline(node, l.text, true, depth + 1);
        }
        i = l.end;
        continue;
      }
    }
    if (!inLink && c === '<') {
      AUTOLINK.lastIndex = i;
      const m = AUTOLINK.exec(src);
      if (m && safeURL(m[1])) {
        flush();
        node.append(link(m[1], m[1]));
        i += m[0].length;
        continue;
      }
    }
    if (!inLink && (c === 'h' || c === 'H') && !isWord(src[i - 1])) {
      BARE_URL.lastIndex = i;
      const end = BARE_URL.test(src) ? scan.urlRunEnd(i) : -1;
      if (end > i && end - i <= MAX_URL) {
        let url = src.slice(i, end);
        // Trailing punctuation ends the sentence, not the URL.
        while (/[.,;:!?'")\]]$/.test(url)) {
          if (url.endsWith(')') && (url.match(/\(/g) || []).length >= (url.match(/\)/g) || []).length) break;
          url = url.slice(0, -1);
        }
        if (safeURL(url)) {
          flush();
          node.append(link(url, url));
          i += url.length;
          continue;
        }
      }
    }
    buf += c;
    i++;
  }
  flush();
  return node;
}

function runLength(src, i, c) {
  let n = 0;
  while (src[i + n] === c) n++;
  return n;
}

// emphasis finds the span that a run of * _ or ~ opens at i: {tag, inner?,
// from, to, end}, or null when the run opens nothing. A search that found
// no closer is remembered: one from further on finds none either.
function emphasis(scan, i) {
  const src = scan.src;
  const c = src[i];
  const run = runLength(src, i, c);
  const after = src[i + run];
  if (isSpace(after)) return null; // not left-flanking
  if (c === '_' && isWord(src[i - 1])) return null; // snake_case stays as it is
  let want;
  if (c === '~') {
    if (run !== 2) return null;
    want = { len: 2, tag: 'del' };
  } else if (run >= 3) want = { len: 3, tag: 'strong', inner: 'em' };
  else if (run === 2) want = { len: 2, tag: 'strong' };
  else want = { len: 1, tag: 'em' };
  const from = i + want.len;
  const key = c + want.len;
  const failed = scan.emFail.get(key);
  if (failed !== undefined && from >= failed) return null;
  let j = from;
  while (j < src.length) {
    const d = src[j];
    if (d === '\\') { j += 2; continue; }
    if (d === '`') {
      const n = runLength(src, j, '`');
      const close = scan.codeClose(j + n, n);
      j = close < 0 ? j + n : close + n;
      continue;
    }
    if (d === c) {
      const n = runLength(src, j, c);
      const closes = j > from && !isSpace(src[j - 1]) && (c !== '_' || !isWord(src[j + n]));
      if (closes && n >= want.len && (want.len !== 1 || n === 1 || n >= 3)) {
        return { tag: want.tag, inner: want.inner, from, to: j, end: j + want.len };
      }
      j += n;
      continue;
    }
    j++;
  }
  scan.emFail.set(key, failed === undefined ? from : Math.min(failed, from));
  return null;
}

// parseLink reads [text](url "title") at i: {text, url, end}, or null.
function parseLink(scan, i) {
  const src = scan.src;
  if (src[i] !== '[') return null;
  const j = scan.closeBracket(i);
  if (j < 0 || src[j + 1] !== '(') return null;
  const text = src.slice(i + 1, j);
  let k = j + 2;
  // A target that starts where an earlier one was looked for in vain,
  // with no ")" on the way, ends in vain too.
  if (k < scan.targetFail) return null;
  let parens = 0;
  let closed = false;
  const limit = Math.min(src.length, k + MAX_URL);
  while (k < limit) {
    const c = src[k];
    if (c === '(') parens++;
    if (c === ')') {
      closed = true;
      if (parens === 0) break;
      parens--;
    }
    if (/\s/.test(c)) break;
    k++;
  }
  let url = src.slice(j + 2, k);
  // An optional title: skipped, it is not shown.
  LINK_TITLE.lastIndex = k;
  const rest = LINK_TITLE.exec(src);
  if (rest) k += rest[0].length - 1;
  if (src[k] !== ')') {
    if (!closed) scan.targetFail = Math.max(scan.targetFail, k);
    return null;
  }
  url = url.replace(/^<(.*)>$/, '$1');
  return { text, url, end: k + 1 };
}
