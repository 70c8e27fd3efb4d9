// The openai npm client sends images and a video to `vtllm serve` on the VL oracle
// fixture (tests/fixtures/qwen3_5-tiny-vl): each image chat of the fixture, its images as
// base64 data: URLs in image_url parts, greedy, with vLLM's return_token_ids. The
// prompt's token count and the 32 generated ids must equal transformers' (the
// fixture's vl_reference.json); a corrupt image must be a 400 that names it. Then an
// MP4 clip in a video_url part, and a corrupt one.
// Run by run.sh with VTLLM_URL, VTLLM_KEY and VTLLM_FIXTURE.
'use strict';
const OpenAI = require('openai');
const fs = require('fs');
const path = require('path');

const fixture = process.env.VTLLM_FIXTURE;
const client = new OpenAI({ apiKey: process.env.VTLLM_KEY, baseURL: process.env.VTLLM_URL + '/v1', maxRetries: 0 });
const ref = JSON.parse(fs.readFileSync(path.join(fixture, 'vl_reference.json'), 'utf8'));
let failures = 0;
function check(cond, what) {
  if (!cond) { failures++; console.error('FAIL: ' + what); } else { console.log('ok: ' + what); }
}

function dataUrl(item) {
  const dir = path.join(fixture, 'media');
  const file = fs.readdirSync(dir).find((f) => path.parse(f).name === item && !f.endsWith('.npy'));
  const mime = file.endsWith('.jpg') ? 'image/jpeg' : 'image/png';
  return 'data:' + mime + ';base64,' + fs.readFileSync(path.join(dir, file)).toString('base64');
}

// The fixture's messages with each {"type": "image", "_item": NAME} as an image_url part.
function messagesOf(c) {
  return c.messages.map((m) => ({
    role: m.role,
    content: typeof m.content === 'string' ? m.content : m.content.map((p) =>
      p.type === 'image' ? { type: 'image_url', image_url: { url: dataUrl(p._item) } } : p),
  }));
}

(async () => {
  let chats = 0;
  for (const c of ref.cases) {
    if (c.videos.length > 0) continue;
    const r = await client.chat.completions.create({
      model: 'vl', messages: messagesOf(c), max_tokens: c.continuation.length, temperature: 0,
      ignore_eos: true, return_token_ids: true,
    });
    check(r.usage.prompt_tokens === c.ids.length,
      `${c.name}: ${r.usage.prompt_tokens} prompt tokens (oracle ${c.ids.length})`);
    check(JSON.stringify(r.choices[0].token_ids) === JSON.stringify(c.continuation),
      `${c.name}: the ${c.continuation.length} greedy ids equal the oracle's`);
    chats++;
  }
  check(chats >= 3, `${chats} image chats sent`);
  try {
    await client.chat.completions.create({
      model: 'vl', max_tokens: 4,
      messages: [{ role: 'user', content: [
        { type: 'image_url', image_url: { url: 'data:image/png;base64,' + Buffer.from('not a png').toString('base64') } },
        { type: 'text', text: 'hi' }] }],
    });
    check(false, 'a corrupt image was accepted');
  } catch (e) {
    check(e.status === 400, `a corrupt image is a 400 (${e.status}: ${e.message})`);
  }
  // A video file as vLLM's video_url part (not in OpenAI's types; the client passes it on):
  // the 2 s H.264 test clip, sampled by the fixture's video processor. Its prompt is the
  // engine's expansion (checked against transformers by multimodal_tests and VlFixtureEngine):
  // the ids /tokenize reports, with video pads between vision_start/end and a timestamp.
  const clip = path.join(fixture, '..', 'media', 'video', 'h264_64x48_10fps.mp4');
  const video = [{ role: 'user', content: [
    { type: 'video_url', video_url: { url: 'data:video/mp4;base64,' + fs.readFileSync(clip).toString('base64') } },
    { type: 'text', text: 'What happens?' }] }];
  const vr = await client.chat.completions.create({
    model: 'vl', messages: video, max_tokens: 4, temperature: 0, return_token_ids: true,
  }).catch((e) => e);
  if (vr.status === 400 && /VTLLM_VIDEO/.test(vr.message)) {
    console.log('skip: this vtllm was built without video input (' + vr.message + ')');
  } else {
    const ids = vr.prompt_token_ids || [];
    const pads = ids.filter((t) => t === ref.vision_token_ids.video_token_id).length;
    check(vr.choices && vr.choices[0].token_ids.length === 4, `a video chat generates (${vr.message || 'ok'})`);
    check(pads > 0 && ids.includes(ref.vision_token_ids.vision_start_token_id),
      `the video's prompt carries ${pads} video pads`);
    const tok = await fetch(process.env.VTLLM_URL + '/tokenize', {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ messages: video }),
    }).then((r) => r.json());
    check(JSON.stringify(tok.tokens) === JSON.stringify(ids) && vr.usage.prompt_tokens === ids.length,
      `/tokenize gives the video chat's ${ids.length} prompt ids`);
    try {
      await client.chat.completions.create({ model: 'vl', max_tokens: 4, messages: [{ role: 'user', content: [
        { type: 'video_url', video_url: { url: 'data:video/mp4;base64,' + Buffer.from('not a video').toString('base64') } }] }] });
      check(false, 'a corrupt video was accepted');
    } catch (e) {
      check(e.status === 400 && /video/.test(e.message), `a corrupt video is a 400 (${e.status}: ${e.message})`);
    }
  }
  if (failures) { console.error(failures + ' failure(s)'); process.exit(1); }
  console.log('vision client: all checks passed');
})().catch((e) => { console.error(e); process.exit(1); });
