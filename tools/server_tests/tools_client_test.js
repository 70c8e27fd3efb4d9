// tools, tool_choice, the reasoning split and structured-output fields through the real
// `openai` npm client, against `vtllm serve` with --tool-call-parser qwen3_coder
// --enable-auto-tool-choice --reasoning-parser qwen3 on the random-weight tiny model.
// Its output is not a trained model's, so this checks the API's shape, that a
// streamed reply reassembles to the whole reply (temperature 0: the same text), that
// constrained replies (json_schema, a named tool) satisfy their constraint, and that
// bad fields are a 400 naming them.
// Run by run.sh (VTLLM_URL, VTLLM_KEY). Exits 1 on any failure.
'use strict';
const OpenAI = require('openai');

const client = new OpenAI(
    {apiKey: process.env.VTLLM_KEY, baseURL: process.env.VTLLM_URL + '/v1', maxRetries: 0});
let failures = 0;
function check(cond, what) {
  if (!cond) {
    failures++;
    console.error('FAIL: ' + what);
  } else {
    console.log('ok: ' + what);
  }
}

const tools = [{
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather for a city',
    parameters: {
      type: 'object',
      properties: {city: {type: 'string'}, days: {type: 'integer'}},
      required: ['city']
    },
  },
}];
const messages = [{role: 'user', content: 'What is the weather in Paris?'}];

function wellFormedCalls(calls) {
  return (calls ?? [])
      .every(
          (c) => c.id.startsWith('call_') && c.type === 'function' &&
              typeof c.function.name === 'string' && (() => {
                   try {
                     JSON.parse(c.function.arguments);
                     return true;
                   } catch {
                     return false;
                   }
                 })());
}

async function expect400(what, params, param) {
  try {
    await client.chat.completions.create({model: 'tiny', messages, max_tokens: 4, ...params});
    check(false, what + ': expected a 400');
  } catch (e) {
    check(
        e.status === 400 && e.error?.param === param,
        `${what}: 400 naming ${param} (got ${e.status} ${e.error?.param})`);
  }
}

async function main() {
  const req = {model: 'tiny', messages, tools, max_tokens: 48, temperature: 0};
  const whole = await client.chat.completions.create(req);
  const m = whole.choices[0].message;
  check(m.role === 'assistant', 'tool request: assistant message');
  check(
      ['stop', 'length', 'tool_calls'].includes(whole.choices[0].finish_reason),
      'tool request: finish_reason');
  check(wellFormedCalls(m.tool_calls), 'tool calls (if any) have ids, names and JSON arguments');
  check(
      whole.choices[0].finish_reason !== 'tool_calls' || m.tool_calls.length > 0,
      '\'tool_calls\' finish only with calls');
  // With thinking on and no </think> in 48 random tokens, the reply is reasoning.
  check(
      typeof m.reasoning === 'string' || typeof m.content === 'string',
      'reasoning or content present');
  check(m.reasoning === m.reasoning_content, 'reasoning and reasoning_content agree');

  const stream = await client.chat.completions.create({...req, stream: true});
  let content = '', reasoning = '';
  const calls = [];
  let finish = null;
  for await (const chunk of stream) {
    const c = chunk.choices[0];
    if (!c) continue;
    content += c.delta.content ?? '';
    reasoning += c.delta.reasoning ?? '';
    for (const t of c.delta.tool_calls ?? []) {
      if (!calls[t.index]) calls[t.index] = {id: t.id, name: t.function.name, arguments: ''};
      calls[t.index].arguments += t.function.arguments ?? '';
    }
    if (c.finish_reason) finish = c.finish_reason;
  }
  check(content === (m.content ?? ''), 'streamed content reassembles to the reply\'s');
  check(reasoning === (m.reasoning ?? ''), 'streamed reasoning reassembles to the reply\'s');
  check(
      calls.length === (m.tool_calls ?? []).length &&
          calls.every(
              (c, i) => c.name === m.tool_calls[i].function.name &&
                  c.arguments === m.tool_calls[i].function.arguments),
      'streamed tool calls reassemble to the reply\'s');
  check(finish === whole.choices[0].finish_reason, 'streamed finish_reason equals the reply\'s');

  const off = await client.chat.completions.create({
    model: 'tiny',
    messages,
    max_tokens: 8,
    temperature: 0,
    chat_template_kwargs: {enable_thinking: false}
  });
  check(
      off.choices[0].message.reasoning === undefined &&
          typeof off.choices[0].message.content === 'string',
      'enable_thinking false: all content, no reasoning');

  // Constrained: the random-weight model's output must satisfy the constraint. With
  // thinking off the prompt ends the reasoning, so the grammar holds from the first token.
  // Compact JSON (structured_outputs.disable_any_whitespace, merged with response_format
  // as vLLM does): vLLM's default lets a random model spend its tokens on whitespace.
  const off_thinking = {chat_template_kwargs: {enable_thinking: false}};
  const compact = {structured_outputs: {disable_any_whitespace: true}};
  const schema = {
    type: 'object',
    properties: {n: {type: 'integer', minimum: 0, maximum: 9}, e: {enum: ['x', 'y']}},
    required: ['n', 'e'],
    additionalProperties: false
  };
  const validates = (text) => {
    let obj = null;
    try { obj = JSON.parse(text); } catch { /* not JSON */ }
    return obj && Number.isInteger(obj.n) && obj.n >= 0 && obj.n <= 9 &&
        ['x', 'y'].includes(obj.e) && Object.keys(obj).length === 2;
  };
  const js = await client.chat.completions.create({
    model: 'tiny', messages, max_tokens: 40, temperature: 0, ...off_thinking, ...compact,
    response_format: {type: 'json_schema', json_schema: {name: 'w', schema, strict: true}}
  });
  check(validates(js.choices[0].message.content),
      `json_schema output validates (${js.choices[0].message.content})`);
  // Thinking on: the grammar starts after </think> (vLLM's order). A bias makes </think>
  // the first token; after it the mask keeps it out and the content validates.
  const think_end = (await (await fetch(process.env.VTLLM_URL + '/tokenize', {
    method: 'POST',
    headers: {'Content-Type': 'application/json', Authorization: 'Bearer ' + process.env.VTLLM_KEY},
    body: JSON.stringify({model: 'tiny', prompt: '</think>'})
  })).json()).tokens;
  check(think_end.length === 1, '</think> is one token');
  const thinking = await client.chat.completions.create({
    model: 'tiny', messages, max_tokens: 40, temperature: 0, logit_bias: {[think_end[0]]: 100},
    ...compact, response_format: {type: 'json_schema', json_schema: {name: 'w', schema}}
  });
  check(!thinking.choices[0].message.reasoning && validates(thinking.choices[0].message.content),
      `json_schema after </think> validates (${JSON.stringify(thinking.choices[0].message)})`);
  const modeTool = {
    type: 'function',
    function: {
      name: 'set_mode',
      parameters: {type: 'object', properties: {mode: {enum: ['fast', 'slow']}}, required: ['mode']}
    }
  };
  const forced = await client.chat.completions.create({
    model: 'tiny', messages, max_tokens: 200, temperature: 0, tools: [modeTool, ...tools],
    ...off_thinking,
    tool_choice: {type: 'function', function: {name: 'set_mode'}}
  });
  const fc = forced.choices[0].message.tool_calls ?? [];
  let fargs = null;
  try { fargs = JSON.parse(fc[0].function.arguments); } catch { /* checked below */ }
  check(fc.length === 1 && fc[0].function.name === 'set_mode' && fargs &&
      ['fast', 'slow'].includes(fargs.mode),
      `named tool_choice forces one valid call (${JSON.stringify(fc)})`);
  await expect400('unsupported schema keyword', {
    response_format:
        {type: 'json_schema', json_schema: {name: 'w', schema: {type: 'integer', multipleOf: 3}}}
  }, 'response_format.json_schema.schema');
  await expect400(
      'unknown named tool', {tools, tool_choice: {type: 'function', function: {name: 'nope'}}},
      'tool_choice');
  await expect400(
      'bad tool', {tools: [{type: 'function', function: {}}]}, 'tools[0].function.name');
  if (failures) {
    console.error(`${failures} failure(s)`);
    process.exit(1);
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
