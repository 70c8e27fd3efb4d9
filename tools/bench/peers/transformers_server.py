#!/usr/bin/env python3
"""transformers as a benchmark peer: a small OpenAI-compatible /v1/completions server.

It serves benchmarks only: every request generates exactly max_tokens tokens greedily
(ignore_eos must be true), prompts are token-id lists or text, streaming follows the
OpenAI SSE format with a usage chunk.

Engines (--engine):
  continuous  transformers' continuous batching (model.init_continuous_batching(), the
              ContinuousBatchingManager that `transformers serve` builds on): requests
              join and leave the running batch at every step.
  generate    model.generate() over static batches: requests that arrive while a batch
              runs wait for the next one (up to --max-batch-size per batch).
  auto        continuous when the manager starts and answers a probe request on this
              model, else generate; the probe runs in a child process with its own model
              load (a refused manager can leave a process unfit for generate(), see
              probe_in_child); the reason is printed and reported by /health.
The engine that ran is reported by GET /health and GET /v1/models, and run_peers.sh
records it next to the figures. Weights in --dtype (bfloat16), attention through
--attn-implementation (sdpa: flash-attn is not installed on the benchmark image). The
flash-linear-attention fast path of the GDN layers is not installed there either, so
transformers runs its torch fallback for them: the peer's own limitation on that image.
"""
import argparse
import inspect
import json
import os
import queue
import socket
import subprocess
import sys
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig
from transformers.generation.streamers import BaseStreamer

DONE = object()


class Job:
    def __init__(self, rid, ids, max_tokens):
        self.rid, self.ids, self.max_tokens = rid, ids, max_tokens
        self.out = queue.Queue()  # lists of new token ids, then DONE (or an Exception)


class ContinuousEngine:
    name = "continuous"

    def __init__(self, model, args):
        gen = GenerationConfig(max_new_tokens=args.max_model_len, do_sample=False, eos_token_id=-1)
        self.manager = model.init_continuous_batching(generation_config=gen)
        self.manager.start()
        self.jobs, self.lock = {}, threading.Lock()
        self.add_kwargs = {}
        params = inspect.signature(self.manager.add_request).parameters
        if "streaming" in params:
            self.add_kwargs["streaming"] = True
        if "eos_token_id" in params:
            self.add_kwargs["eos_token_id"] = -1
        threading.Thread(target=self._route, daemon=True).start()

    def _route(self):
        sent = {}
        while True:
            r = self.manager.get_result(timeout=0.1)
            if r is None:
                continue
            with self.lock:
                job = self.jobs.get(r.request_id)
            if job is None:
                continue
            if getattr(r, "error", None):
                job.out.put(RuntimeError(str(r.error)))
                continue
            toks = list(getattr(r, "generated_tokens", []) or [])[: job.max_tokens]
            done = sent.get(r.request_id, 0)
            if len(toks) > done:
                job.out.put(toks[done:])
                sent[r.request_id] = len(toks)
            if r.is_finished():
                sent.pop(r.request_id, None)
                with self.lock:
                    self.jobs.pop(r.request_id, None)
                job.out.put(DONE)

    def submit(self, job):
        with self.lock:
            self.jobs[job.rid] = job
        self.manager.add_request(input_ids=job.ids, request_id=job.rid, max_new_tokens=job.max_tokens,
                                 **self.add_kwargs)


class _BatchStreamer(BaseStreamer):
    """Hands each generated column of a generate() batch to the rows' jobs."""

    def __init__(self, jobs):
        self.jobs, self.prompt_seen, self.count = jobs, False, 0

    def put(self, value):
        if not self.prompt_seen:  # generate() first passes the prompt
            self.prompt_seen = True
            return
        col = value.reshape(len(self.jobs), -1)[:, -1].tolist()
        self.count += 1
        for job, tok in zip(self.jobs, col):
            if self.count <= job.max_tokens:
                job.out.put([tok])

    def end(self):
        for job in self.jobs:
            job.out.put(DONE)


class GenerateEngine:
    name = "generate"

    def __init__(self, model, tokenizer, args):
        self.model, self.args = model, args
        self.pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self.waiting = queue.Queue()
        threading.Thread(target=self._loop, daemon=True).start()

    def submit(self, job):
        self.waiting.put(job)

    def _loop(self):
        while True:
            batch = [self.waiting.get()]
            while len(batch) < self.args.max_batch_size:
                try:
                    batch.append(self.waiting.get_nowait())
                except queue.Empty:
                    break
            try:
                self._run(batch)
            except Exception as e:  # a failed batch fails its requests, not the server
                traceback.print_exc()
                for job in batch:
                    job.out.put(e)

    @torch.inference_mode()
    def _run(self, batch):
        width = max(len(j.ids) for j in batch)
        ids = torch.full((len(batch), width), self.pad, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for i, j in enumerate(batch):  # left padding, as generate() expects for decoder-only models
            ids[i, width - len(j.ids):] = torch.tensor(j.ids)
            mask[i, width - len(j.ids):] = 1
        n = max(j.max_tokens for j in batch)
        t0 = time.time()
        self.model.generate(input_ids=ids.to(self.model.device), attention_mask=mask.to(self.model.device),
                            max_new_tokens=n, min_new_tokens=n, do_sample=False, pad_token_id=self.pad,
                            streamer=_BatchStreamer(batch))
        dt = time.time() - t0
        print(f"transformers_server: generate batch {len(batch)} x {width} prompt tokens, {n} new: "
              f"{dt:.2f} s ({len(batch) * n / dt:.1f} tok/s)", file=sys.stderr, flush=True)


def make_handler(state):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def setup(self):
            super().setup()
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def _json(self, code, obj):
            body = json.dumps(obj).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _error(self, code, msg):
            self._json(code, {"error": {"message": msg, "type": "invalid_request_error", "code": code}})

        def _chunk(self, obj):
            data = ("data: " + (obj if isinstance(obj, str) else json.dumps(obj)) + "\n\n").encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        def do_GET(self):
            info = {"engine": state["engine"].name, "engine_note": state["note"], "dtype": state["args"].dtype,
                    "attn_implementation": state["args"].attn_implementation}
            if self.path == "/health":
                self._json(200, {"status": "ok", **info})
            elif self.path == "/v1/models":
                self._json(200, {"object": "list", "data": [{"id": state["args"].served_model_name,
                                                             "object": "model", **info}]})
            else:
                self._error(404, f"no route {self.path}")

        def do_POST(self):
            if self.path != "/v1/completions":
                return self._error(404, f"no route {self.path}")
            try:
                req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                prompt = req["prompt"]
                if isinstance(prompt, str):
                    ids = state["tokenizer"].encode(prompt)
                elif isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt):
                    ids = prompt
                else:
                    raise ValueError("prompt must be a string or a non-empty list of token ids")
                max_tokens = int(req.get("max_tokens", 16))
                if max_tokens < 1 or len(ids) + max_tokens > state["args"].max_model_len:
                    raise ValueError(f"max_tokens {max_tokens} with {len(ids)} prompt tokens exceeds "
                                     f"--max-model-len {state['args'].max_model_len}")
                if not req.get("ignore_eos", False):
                    raise ValueError("this benchmark server generates exactly max_tokens: send ignore_eos true")
            except (ValueError, KeyError, json.JSONDecodeError) as e:
                return self._error(400, str(e))
            with state["lock"]:
                state["count"] += 1
                rid = f"cmpl-{state['count']}"
            job = Job(rid, ids, max_tokens)
            state["engine"].submit(job)
            stream = bool(req.get("stream", False))
            tok = state["tokenizer"]
            produced, text = [], []
            if stream:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
            while True:
                item = job.out.get()
                if item is DONE:
                    break
                if isinstance(item, Exception):
                    if stream:
                        self._chunk({"error": {"message": str(item), "code": 500}})
                        self._chunk("[DONE]")
                        self.wfile.write(b"0\r\n\r\n")
                        return
                    return self._error(500, str(item))
                produced += item
                piece = tok.decode(item)
                text.append(piece)
                if stream:
                    self._chunk({"id": rid, "object": "text_completion", "created": int(time.time()),
                                 "model": state["args"].served_model_name,
                                 "choices": [{"index": 0, "text": piece, "finish_reason": None}]})
            usage = {"prompt_tokens": len(ids), "completion_tokens": len(produced),
                     "total_tokens": len(ids) + len(produced)}
            if not stream:
                return self._json(200, {"id": rid, "object": "text_completion", "model": state["args"].served_model_name,
                                        "choices": [{"index": 0, "text": "".join(text), "finish_reason": "length"}],
                                        "usage": usage})
            self._chunk({"id": rid, "object": "text_completion", "choices": [{"index": 0, "text": "",
                                                                              "finish_reason": "length"}]})
            if (req.get("stream_options") or {}).get("include_usage"):
                self._chunk({"id": rid, "object": "text_completion", "choices": [], "usage": usage})
            self._chunk("[DONE]")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    return Handler


def probe_continuous(model, args):
    """Starts transformers' continuous-batching manager and runs one 2-token request.
    Returns the engine, or raises what the manager raised (or a timeout)."""
    engine = ContinuousEngine(model, args)
    probe = Job("probe", list(range(1000, 1008)), 2)
    engine.submit(probe)
    got = []
    while True:
        item = probe.out.get(timeout=args.probe_timeout)
        if item is DONE:
            break
        if isinstance(item, Exception):
            raise item
        got += item
    if len(got) != 2:
        raise RuntimeError(f"probe request produced {len(got)} tokens, expected 2")
    return engine


def probe_in_child(args):
    """auto: probes continuous batching in a child process (its own model load) and returns
    None when the manager served the probe, else the reason. A manager that refuses a model
    can leave the process unusable for generate(): seen with transformers 5.17 on Qwen3.5,
    where the refused manager kept 67 GiB allocated and the next generate() ran the GDN
    layers' token-by-token recurrent path even for prompts (no 16-token request finished
    in 90 s, against 4 s in a clean process). A child keeps this process clean."""
    cmd = [sys.executable, __file__, "--probe-only", "--model", args.model, "--dtype", args.dtype,
           "--attn-implementation", args.attn_implementation, "--max-batch-size", str(args.max_batch_size),
           "--max-model-len", str(args.max_model_len), "--probe-timeout", str(args.probe_timeout)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.probe_timeout + 300)
    except subprocess.TimeoutExpired:
        return f"the probe process did not finish within {args.probe_timeout + 300:.0f} s"
    sys.stderr.write(r.stderr[-4000:])
    if r.returncode == 0:
        return None
    lines = [l for l in r.stdout.splitlines() if l.startswith("probe failed:")]
    return lines[-1][len("probe failed: "):] if lines else f"the probe process exited with {r.returncode}"


def start_engine(model, tokenizer, args, refused):
    """Returns (engine, note). `refused` is the child probe's reason (auto) or None."""
    if args.engine == "generate":
        return GenerateEngine(model, tokenizer, args), "--engine generate"
    if refused is None:
        return probe_continuous(model, args), "continuous batching"
    note = f"continuous batching unavailable for this model ({refused}); generate() batches"
    print("transformers_server:", note, file=sys.stderr, flush=True)
    return GenerateEngine(model, tokenizer, args), note


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="HF model directory")
    p.add_argument("--dtype", required=True, choices=["bfloat16", "float16", "float32"])
    p.add_argument("--attn-implementation", required=True,
                   help="sdpa, flash_attention_2, flash_attention_3, eager, ...")
    p.add_argument("--engine", default="auto", choices=["auto", "continuous", "generate"])
    p.add_argument("--max-batch-size", type=int, required=True, help="generate engine: requests per batch")
    p.add_argument("--max-model-len", type=int, default=8192)
    p.add_argument("--probe-timeout", type=float, default=180.0,
                   help="auto: seconds the continuous-batching probe request may take")
    p.add_argument("--probe-only", action="store_true",
                   help="internal (auto): load, probe continuous batching, exit 0 if it served")
    p.add_argument("--served-model-name", default="transformers")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8001)
    args = p.parse_args()

    torch.manual_seed(0)
    # auto probes in a child first (probe_in_child says why), before this process loads.
    refused = probe_in_child(args) if args.engine == "auto" and not args.probe_only else None
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=getattr(torch, args.dtype),
                                                 attn_implementation=args.attn_implementation,
                                                 device_map="cuda").eval()
    if args.probe_only:
        try:
            probe_continuous(model, args)
        except Exception as e:  # the manager refused this model (or its cache kinds), or hung
            print(f"probe failed: {type(e).__name__}: {e}", flush=True)
            os._exit(1)  # the refused manager's threads must not keep the child alive
        print("probe served", flush=True)
        os._exit(0)
    engine, note = start_engine(model, tokenizer, args, refused)
    print(f"transformers_server: attention implementation {model.config._attn_implementation}, "
          f"GPU memory allocated {torch.cuda.memory_allocated() / 2**30:.1f} GiB", file=sys.stderr, flush=True)
    state = {"args": args, "tokenizer": tokenizer, "engine": engine, "note": note,
             "lock": threading.Lock(), "count": 0}
    # socketserver listens with a backlog of 5: 32 or 64 clients connecting at once overflow
    # it and the kernel resets the surplus connections (79 of 128 requests failed at C = 64).
    ThreadingHTTPServer.request_queue_size = 1024
    server = ThreadingHTTPServer((args.host, args.port), make_handler(state))
    server.daemon_threads = True
    print(f"transformers_server: {args.model} {args.dtype} attn={args.attn_implementation} "
          f"engine={engine.name} ({note}) on http://{args.host}:{args.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
