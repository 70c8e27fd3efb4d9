// Client-side tests of `vtllm serve` with the real `openai` npm package and curl.
// Run by run.sh, which passes VTLLM_URL and VTLLM_KEY. Exits 1 on any failure.
'use strict';
const OpenAI = require('openai');
const { execFileSync } = require('child_process');
const http = require('http');

const url = process.env.VTLLM_URL;
const key = process.env.VTLLM_KEY;
const client = new OpenAI({ apiKey: key, baseURL: url + '/v1', maxRetries: 0 });
let failures = 0;
function check(cond, what) {
  if (!cond) { failures++; console.error('FAIL: ' + what); } else { console.log('ok: ' + what); }
}

async function raw(path, body, headers = {}) {
  const res = await fetch(url + path, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + key, ...headers },
    body,
  });
  return { status: res.status, text: await res.text() };
}

async function metric(name) {
  const page = (await raw('/metrics')).text;
  const line = page.split('\n').find((l) => l.startsWith(name + '{'));
  return line ? Number(line.split(' ').pop()) : NaN;
}

async function streamText(prompt, max_tokens) {
  const stream = await client.completions.create({ model: 'tiny', prompt, max_tokens, temperature: 0, stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
  return text;
}

// Opens a streaming request, waits for the first event, then destroys the socket.
function hangUp(prompt) {
  return new Promise((resolve) => {
    const body = JSON.stringify({ prompt, max_tokens: 200, stream: true });
    const req = http.request(url + '/v1/completions', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + key, 'Content-Length': Buffer.byteLength(body) },
    }, (res) => {
      res.once('data', () => { req.destroy(); resolve(true); });
      res.on('error', () => resolve(true));
    });
    req.on('error', () => resolve(false));
    req.setTimeout(30000, () => { req.destroy(); resolve(false); });
    req.end(body);
  });
}

async function main() {
  // Chat and completions through the openai client.
  const chat = await client.chat.completions.create({
    model: 'tiny', messages: [{ role: 'user', content: 'Hello!' }], max_tokens: 6, temperature: 0 });
  check(chat.object === 'chat.completion' && chat.choices[0].message.role === 'assistant', 'chat completion object');
  check(chat.usage.completion_tokens === 6 && chat.choices[0].finish_reason === 'length', 'chat usage and finish_reason');
  const comp = await client.completions.create({ model: 'tiny', prompt: 'Once upon', max_tokens: 5, temperature: 0, logprobs: 2 });
  check(comp.choices[0].logprobs.tokens.length === 5, 'completion logprobs, one per token');
  const chatStream = await client.chat.completions.create({
    model: 'tiny', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 5, temperature: 0, stream: true,
    stream_options: { include_usage: true } });
  let role = null, streamed = '', usage = null;
  for await (const chunk of chatStream) {
    if (chunk.choices.length && chunk.choices[0].delta.role) role = chunk.choices[0].delta.role;
    if (chunk.choices.length) streamed += chunk.choices[0].delta.content ?? '';
    if (chunk.usage) usage = chunk.usage;
  }
  const whole = await client.chat.completions.create({
    model: 'tiny', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 5, temperature: 0 });
  check(role === 'assistant' && usage && usage.completion_tokens === 5, 'chat stream: role first, usage last');
  check(streamed === whole.choices[0].message.content, 'chat stream text equals the non-streamed text');

  // curl.
  const curlOut = execFileSync('curl', ['-s', '-H', 'Authorization: Bearer ' + key, url + '/v1/models']).toString();
  check(JSON.parse(curlOut).data[0].id === 'tiny', 'curl /v1/models');

  // Auth.
  check((await raw('/v1/models', undefined, { Authorization: '' })).status === 401, 'no key: 401');
  check((await raw('/v1/models', undefined, { Authorization: 'Bearer nope' })).status === 401, 'wrong key: 401');
  check((await raw('/v1/models')).status === 200, 'right key: 200');

  // 64 concurrent streams give the sequential greedy outputs.
  const prompts = Array.from({ length: 64 }, (_, i) => `Prompt ${i * 13}:`);
  const sequential = [];
  for (const p of prompts) sequential.push(await streamText(p, 8));
  const concurrent = await Promise.all(prompts.map((p) => streamText(p, 8)));
  check(concurrent.every((t, i) => t === sequential[i]), '64 concurrent streams equal sequential ones');

  // Malformed input: status, error object, and the server still serves.
  const bad = [
    ['{"prompt": ', 400], ['{"prompt": "a", "max_tokens": -1}', 400], ['{"prompt": "a", "n": 100000}', 400],
    ['{"prompt": 3}', 400], ['{"prompt": "a", "model": "nope"}', 404],
  ];
  for (const [body, status] of bad) {
    const r = await raw('/v1/completions', body);
    const err = JSON.parse(r.text).error;
    check(r.status === status && typeof err.message === 'string' && 'param' in err && 'code' in err && 'type' in err,
      `malformed ${body} -> ${status} with an error object`);
  }
  const badChat = await raw('/v1/chat/completions', '{"messages": []}');
  check(badChat.status === 400 && JSON.parse(badChat.text).error.param === 'messages', 'empty messages: 400');
  const utf8 = await fetch(url + '/v1/completions', { method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + key },
    body: Buffer.from([0x7b, 0x22, 0x70, 0x72, 0x6f, 0x6d, 0x70, 0x74, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]) });
  check(utf8.status === 400 && (await utf8.json()).error.code === 'invalid_utf8', 'invalid UTF-8: 400');
  const ok = await client.completions.create({ model: 'tiny', prompt: 'still serving', max_tokens: 2, unknown_field: 1 });
  check(ok.choices.length === 1, 'serves the next request (unknown fields ignored)');

  // 1000 clients that disconnect mid-stream leave no blocks held.
  let seen = 0;
  for (let batch = 0; batch < 1000; batch += 50) {
    const got = await Promise.all(Array.from({ length: 50 }, (_, i) => hangUp(`bye ${batch + i}`)));
    seen += got.filter(Boolean).length;
  }
  check(seen === 1000, `1000 clients saw a first event and hung up (${seen})`);
  let used = NaN, running = NaN;
  for (let i = 0; i < 300; i++) {
    used = await metric('vtllm:kv_cache_blocks_used');
    running = await metric('vtllm:num_requests_running');
    if (used === 0 && running === 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  check(used === 0 && running === 0, `no leaked blocks after disconnects (used ${used}, running ${running})`);

  if (failures) { console.error(`${failures} failures`); process.exit(1); }
  console.log('all server client tests passed');
}

main().catch((e) => { console.error(e); process.exit(1); });
