#!/usr/bin/env python3
"""The image chat of issue 24's TTFT figure, the same for every peer (standard library and
Pillow only).

  vision_chat_client.py make-images DIR [--count 7] [--size 1024]
      writes DIR/chat-00.jpg ... : seeded 1024x1024 JPEGs (a colour gradient under 30%
      noise, quality 90), one per request, so that every peer reads the same bytes and no
      request can be answered from an encoder or prefix cache filled by an earlier one.
  vision_chat_client.py serve-chat --port P --images DIR --json OUT [--model NAME]
                                   [--warmup 2] [--server-log LOG] [--health-timeout 600]
                                   -- SERVER CMD...
      starts SERVER CMD, waits for GET /health, sends one chat per image (the first
      --warmup unmeasured), stops the server, writes OUT.
The chat: one user turn holding the image (an image_url data: URI) and CHAT_TEXT (64
tokens of the Qwen3 tokenizer), to /v1/chat/completions with max_tokens 1, temperature 0,
stream and include_usage. TTFT is the wall time from sending the request (body already
built) to the first chunk that carries generated text or a finish_reason (the role-only
chunk a server may send first does not count), as vLLM's bench measures it; the
connection sets TCP_NODELAY. OUT: per request ttft_ms, done_ms (to the end of the
stream), the usage and llama.cpp's own timings where given; ttft_ms_median over the
measured requests.
"""
import argparse
import base64
import http.client
import io
import json
import os
import pathlib
import random
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

# 64 tokens of the Qwen3 tokenizer (checked with `vtllm tokenize`).
CHAT_TEXT = ("Describe this picture in detail: the objects you see, their colours and shapes, where "
             "each one is placed, what the light is like, and what may have happened just before it "
             "was taken. Then say which part of the image draws the eye first and why, in two or "
             "three short, plain sentences, please.")
CHAT_TEXT_TOKENS = 64


def image_paths(folder):
    paths = sorted(pathlib.Path(folder).glob("chat-*.jpg"))
    if not paths:
        sys.exit(f"vision_chat_client: no chat-*.jpg in {folder} (run make-images first)")
    return paths


def make_images(args):
    from PIL import Image

    out = pathlib.Path(args.dir)
    out.mkdir(parents=True, exist_ok=True)
    n = args.size
    # Red rises down the image, green across it, blue from the centre out.
    vertical = Image.linear_gradient("L").resize((n, n))
    base = Image.merge("RGB", (vertical, vertical.rotate(90),
                               Image.radial_gradient("L").resize((n, n))))
    for i in range(args.count):
        noise = Image.frombytes("RGB", (n, n), random.Random(1000 + i).randbytes(n * n * 3))
        path = out / f"chat-{i:02d}.jpg"
        Image.blend(base, noise, 0.3).save(path, "JPEG", quality=90)
        print(f"{path}: {n}x{n}, {path.stat().st_size} bytes")


def chat_body(jpeg, model):
    uri = "data:image/jpeg;base64," + base64.b64encode(jpeg).decode()
    return json.dumps({
        "model": model,
        "messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": uri}},
            {"type": "text", "text": CHAT_TEXT}]}],
        "max_tokens": 1, "temperature": 0, "stream": True,
        "stream_options": {"include_usage": True}}).encode()


def one_chat(port, body):
    """Sends one streamed chat; returns its timings and what the server reported."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    t0 = time.perf_counter()
    conn.connect()
    conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
    resp = conn.getresponse()
    if resp.status != 200:
        raise RuntimeError(f"HTTP {resp.status}: {resp.read()[:500]!r}")
    rec = {"ttft_ms": None}
    while True:
        line = resp.readline()
        if not line:
            break
        line = line.strip()
        if not line.startswith(b"data:"):
            continue
        data = line[5:].strip()
        if data == b"[DONE]":
            break
        chunk = json.loads(data)
        if "error" in chunk:
            raise RuntimeError(f"stream error: {chunk['error']}")
        for c in chunk.get("choices") or []:
            d = c.get("delta") or {}
            token = d.get("content") or d.get("reasoning_content") or d.get("reasoning") or \
                c.get("token_ids") or c.get("finish_reason")
            if token and rec["ttft_ms"] is None:
                rec["ttft_ms"] = (time.perf_counter() - t0) * 1e3
        for key in ("usage", "timings"):
            if chunk.get(key):
                rec[key] = chunk[key]
    rec["done_ms"] = (time.perf_counter() - t0) * 1e3
    conn.close()
    if rec["ttft_ms"] is None:
        raise RuntimeError(f"the stream carried no token: {rec}")
    return rec


def wait_healthy(port, proc, limit):
    t0 = time.time()
    while time.time() - t0 < limit:
        if proc.poll() is not None:
            sys.exit(f"vision_chat_client: the server exited ({proc.returncode}) before it was healthy")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
                if r.status == 200:
                    return time.time() - t0
        except Exception:  # noqa: BLE001 (not up yet: refused, 503 while loading)
            pass
        time.sleep(0.5)
    sys.exit(f"vision_chat_client: no healthy server on port {port} after {limit:.0f} s")


def server_ttft_s(port):
    """The sum of the server's own time-to-first-token histogram (vLLM's metric name, which
    vtllm also exports: counted from the request's arrival at the engine, so after the body
    is parsed and its media processed), or None where the server has no such metric."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            text = r.read().decode()
    except Exception:  # noqa: BLE001 (no /metrics: llama.cpp without --metrics)
        return None
    for line in text.splitlines():
        if line.startswith("vllm:time_to_first_token_seconds_sum"):
            return float(line.split()[-1])
    return None


def stop(proc):
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(8)  # inside the 10 s that timeout -k leaves before it kills this script
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def serve_chat(args):
    paths = image_paths(args.images)
    if len(paths) <= args.warmup:
        sys.exit(f"vision_chat_client: {len(paths)} images, none left after {args.warmup} warm-ups")
    bodies = [chat_body(p.read_bytes(), args.model) for p in paths]
    log = open(args.server_log, "w") if args.server_log else subprocess.DEVNULL
    # Its own process group, so that stopping it stops what a wrapper script started.
    proc = subprocess.Popen(args.server, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    # timeout(1) ends this script with SIGTERM: the server goes with it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("vision_chat_client: terminated"))
    try:
        load_s = wait_healthy(args.port, proc, args.health_timeout)
        print(f"healthy after {load_s:.0f} s")
        requests = []
        for i, (path, body) in enumerate(zip(paths, bodies)):
            before = server_ttft_s(args.port)
            rec = dict(image=path.name, warmup=i < args.warmup, **one_chat(args.port, body))
            after = server_ttft_s(args.port)
            if before is not None and after is not None:
                # The server's share of this chat's TTFT from engine arrival; the rest is
                # the HTTP request, the JSON body and the media processing.
                rec["engine_ttft_ms"] = (after - before) * 1e3
            print(f"{path.name}{' (warm-up)' if rec['warmup'] else ''}: TTFT {rec['ttft_ms']:.1f} ms "
                  f"(engine {rec.get('engine_ttft_ms', float('nan')):.1f}), done {rec['done_ms']:.1f} ms, "
                  f"usage {rec.get('usage')}, timings {rec.get('timings')}")
            requests.append(rec)
    finally:
        stop(proc)
    measured = [r["ttft_ms"] for r in requests if not r["warmup"]]
    usage = requests[-1].get("usage") or {}
    out = {"server_command": args.server, "load_s": load_s, "text_tokens": CHAT_TEXT_TOKENS,
           "image_bytes": [p.stat().st_size for p in paths], "prompt_tokens": usage.get("prompt_tokens"),
           "ttft_ms_median": statistics.median(measured), "ttft_ms": measured, "requests": requests}
    engine = [r["engine_ttft_ms"] for r in requests if not r["warmup"] and "engine_ttft_ms" in r]
    if engine:
        out["engine_ttft_ms_median"] = statistics.median(engine)
    pathlib.Path(args.json).write_text(json.dumps(out, indent=2) + "\n")
    print(f"TTFT median {out['ttft_ms_median']:.1f} ms over {len(measured)} chats "
          f"({out['prompt_tokens']} prompt tokens) -> {args.json}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make-images")
    m.add_argument("dir")
    m.add_argument("--count", type=int, default=7)
    m.add_argument("--size", type=int, default=1024)
    s = sub.add_parser("serve-chat")
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--images", required=True)
    s.add_argument("--json", required=True)
    s.add_argument("--model", default="peer", help="the request's model (the served name)")
    s.add_argument("--warmup", type=int, default=2)
    s.add_argument("--server-log")
    s.add_argument("--health-timeout", type=float, default=600)
    s.add_argument("server", nargs="+", help="the server command, after --")
    args = p.parse_args()
    make_images(args) if args.cmd == "make-images" else serve_chat(args)


if __name__ == "__main__":
    main()
