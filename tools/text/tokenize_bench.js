#!/usr/bin/env node
// Encode throughput of HF tokenizers (Rust, via @anush008/tokenizers) on the
// benchmark corpus, the peer figure for bench/tokenize_bench.cpp.
//
//   node tools/text/tokenize_bench.js corpus OUT_FILE [MB]
//       writes the benchmark corpus: documents of about 4 KB separated by
//       "\n\f\n", drawn in a fixed pseudo-random order from
//       tests/fixtures/tokenizer/corpus.json (the invalid-UTF-8 cases left out)
//   node tools/text/tokenize_bench.js run TOKENIZER_JSON CORPUS_FILE
//       prints MB/s for encode() one document at a time and for encodeBatch()
//       of all documents (the library's own thread pool)
'use strict';
const fs = require('fs');
const path = require('path');

const root = path.resolve(__dirname, '..', '..');
const kSep = '\n\f\n';

function writeCorpus(out, mb) {
  const corpus = JSON.parse(
      fs.readFileSync(path.join(root, 'tests', 'fixtures', 'tokenizer', 'corpus.json'), 'utf8'));
  const texts = corpus.cases.filter((c) => c.text !== undefined && c.name !== 'unicode15_chars')
                    .map((c) => c.text);
  let state = 12345n;
  const docs = [];
  let total = 0;
  while (total < mb * 1e6) {
    let doc = '';
    while (Buffer.byteLength(doc) < 4096) {
      state = (state * 6364136223846793005n + 1442695040888963407n) & 0xffffffffffffffffn;
      doc += texts[Number((state >> 33n) % BigInt(texts.length))] + ((state >> 20n) % 3n ? ' ' : '\n');
    }
    docs.push(doc);
    total += Buffer.byteLength(doc);
  }
  fs.writeFileSync(out, docs.join(kSep));
  console.error(`wrote ${out}: ${docs.length} documents, ${(total / 1e6).toFixed(2)} MB`);
}

async function run(tokPath, corpusPath) {
  const { Tokenizer } = require(path.join(root, 'tools', 'npm', 'node_modules', '@anush008', 'tokenizers'));
  const tok = Tokenizer.fromFile(tokPath);
  const docs = fs.readFileSync(corpusPath, 'utf8').split(kSep);
  const bytes = docs.reduce((n, d) => n + Buffer.byteLength(d), 0);
  let ids = 0;
  for (const d of docs.slice(0, 50)) await tok.encode(d, null, { addSpecialTokens: false });  // warm up
  const best = async (fn) => {
    let bestS = Infinity;
    for (let rep = 0; rep < 3; ++rep) {
      const t0 = process.hrtime.bigint();
      await fn();
      bestS = Math.min(bestS, Number(process.hrtime.bigint() - t0) / 1e9);
    }
    return bestS;
  };
  const single = await best(async () => {
    ids = 0;
    for (const d of docs) ids += (await tok.encode(d, null, { addSpecialTokens: false })).getIds().length;
  });
  const batch = await best(async () => {
    await tok.encodeBatch(docs, { addSpecialTokens: false });
  });
  console.log(`rust tokenizers ${path.basename(path.dirname(path.dirname(tokPath)))}: ` +
              `${(bytes / 1e6).toFixed(2)} MB, ${docs.length} docs, ${ids} ids; ` +
              `encode ${(bytes / 1e6 / single).toFixed(2)} MB/s, ` +
              `encodeBatch ${(bytes / 1e6 / batch).toFixed(2)} MB/s`);
}

const [cmd, ...args] = process.argv.slice(2);
if (cmd === 'corpus' && args.length >= 1) {
  writeCorpus(args[0], Number(args[1] || 4));
} else if (cmd === 'run' && args.length === 2) {
  run(args[0], args[1]).catch((e) => { console.error(e); process.exit(1); });
} else {
  console.error('usage: tokenize_bench.js corpus OUT_FILE [MB] | run TOKENIZER_JSON CORPUS_FILE');
  process.exit(2);
}
