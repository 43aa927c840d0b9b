// The TypeScript examples of README.md and docs/*.md, as scripts/check-doc-examples.js and
// test/unit/doc-examples.spec.ts read them.
//
// Every ```ts (or ```typescript) block is one of:
// - a whole file (info string `ts`): type-checked as it is, with its own imports;
// - a fragment (`ts fragment`): type-checked after a prelude that imports the names the docs use
//   (doc-examples/prelude.ts) — top-level code: decorated classes, module options, calls;
// - class members (`ts members`): the prelude, then the code inside a class whose constructor
//   injects `redlock: RedlockService` and the app's own collaborators (`stock`, `payments`, …);
// - statements (`ts statements`): the prelude, then the code inside an async method of that class;
// - a file of this repository, included verbatim: an HTML comment `<!-- include: path -->` right
//   before the block. Its text must equal the file's, and it is type-checked under that path
//   (so its relative imports resolve to the other included files);
// - a whole file beside the included ones: `<!-- doc-example: beside sample/minimal -->` right
//   before the block, so that its relative imports (`./app.module.js`) resolve to that folder's files;
// - not checked: `<!-- doc-example: skip <reason> -->` right before the block; the reason is
//   required and printed by the checker.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..', '..');

/** README.md and every docs/*.md, repository-relative. */
function docFiles() {
  const docs = fs
    .readdirSync(path.join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`);
  return ['README.md', ...docs];
}

const KINDS = new Set(['file', 'fragment', 'members', 'statements']);

/**
 * The TypeScript blocks of one document: { doc, line (1-based, of the first code line), kind,
 * code, include?, skip? }. Throws on an unknown kind or a marker it cannot read.
 */
function extractBlocks(doc) {
  const lines = fs.readFileSync(path.join(root, doc), 'utf8').split('\n');
  const blocks = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,})(\S*)\s*(.*)$/.exec(lines[i]);
    if (!open) continue;
    const [, indent, fence, lang, rest] = open;
    let end = i + 1;
    while (end < lines.length && !lines[end].startsWith(`${indent}${fence}`)) end++;
    const body = lines.slice(i + 1, end).map((l) => l.slice(indent.length));
    const startLine = i + 2;
    const previous = lines
      .slice(0, i)
      .reverse()
      .find((l) => l.trim() !== '');
    i = end;
    if (lang !== 'ts' && lang !== 'typescript') continue;
    const kind = rest.trim() === '' ? 'file' : rest.trim();
    if (!KINDS.has(kind)) {
      throw new Error(`${doc}:${startLine - 1}: unknown example kind "${kind}"`);
    }
    const block = { doc, line: startLine, kind, code: `${body.join('\n')}\n` };
    const marker = /^<!--\s*(include|doc-example):\s*(.*?)\s*-->$/.exec((previous ?? '').trim());
    if (marker && marker[1] === 'include') block.include = marker[2];
    if (marker && marker[1] === 'doc-example') {
      const skip = /^skip\s+(\S.*)$/.exec(marker[2]);
      const beside = /^beside\s+(\S+)$/.exec(marker[2]);
      if (skip) block.skip = skip[1];
      else if (beside) block.beside = beside[1];
      else {
        throw new Error(
          `${doc}:${startLine - 1}: "doc-example: skip <reason>" or "doc-example: beside <folder>" expected`,
        );
      }
    }
    blocks.push(block);
  }
  return blocks;
}

/** Every block of every document. */
function allBlocks() {
  return docFiles().flatMap(extractBlocks);
}

module.exports = { root, docFiles, extractBlocks, allBlocks };
