#!/usr/bin/env python3
"""A fake OpenAI /v1/completions streaming server on 127.0.0.1 with known timing.

Each request waits --ttft-ms, then streams max_tokens token chunks --itl-ms apart
(every 4th with empty text, as a server holding back incomplete UTF-8 sends it), a
closing chunk with only finish_reason "length", a usage chunk when
stream_options.include_usage is set (unless --no-usage), and data: [DONE]. Events are
written in pieces that split lines, so the client must reassemble them.

GET /stats returns the request bodies seen and the most requests ever in flight.
Prints "port N" on stdout once listening (port 0 picks a free one). Loopback only.
"""
import argparse
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.bodies = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.count = 0


# The id of a response's i-th token, where the request asks for ids (llama.cpp or vLLM style).
ANSWER_ID0 = 7000


def make_handler(args, state):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def _chunk(self, data: bytes):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        def _event(self, obj):
            payload = ("data: " + (obj if isinstance(obj, str) else json.dumps(obj)) + "\n\n").encode()
            half = len(payload) // 2  # two writes: the client sees a line split across reads
            self._chunk(payload[:half])
            self._chunk(payload[half:])

        def do_GET(self):
            if self.path != "/stats":
                self.send_error(404)
                return
            with state.lock:
                body = json.dumps({"bodies": state.bodies, "max_in_flight": state.max_in_flight}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with state.lock:
                state.bodies.append(body)
                state.count += 1
                n = state.count
            if self.path != "/v1/completions" or (args.fail_every and n % args.fail_every == 0):
                msg = json.dumps({"error": {"message": "injected failure", "code": 500}}).encode()
                self.send_response(500)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(msg)))
                self.end_headers()
                self.wfile.write(msg)
                return
            with state.lock:
                state.in_flight += 1
                state.max_in_flight = max(state.max_in_flight, state.in_flight)
            try:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                n_out = int(body["max_tokens"])
                time.sleep(args.ttft_ms / 1000)
                for i in range(n_out):
                    if i:
                        time.sleep(args.itl_ms / 1000)
                    text = "" if i % 4 == 3 else f" t{i}"
                    chunk = {"id": "x", "object": "text_completion",
                             "choices": [{"index": 0, "text": text, "finish_reason": None}]}
                    if body.get("return_tokens") and body.get("verbose"):
                        # llama-server's OpenAI endpoints: the chunk's ids under __verbose.
                        chunk["__verbose"] = {"tokens": [ANSWER_ID0 + i]}
                    elif body.get("return_token_ids"):
                        chunk["choices"][0]["token_ids"] = [ANSWER_ID0 + i]  # vLLM's field
                    self._event(chunk)
                self._event({"id": "x", "object": "text_completion",
                             "choices": [{"index": 0, "text": "", "finish_reason": "length"}]})
                if body.get("stream_options", {}).get("include_usage") and not args.no_usage:
                    prompt = body["prompt"]
                    n_prompt = len(prompt) if isinstance(prompt, list) else len(prompt.split())
                    self._event({"id": "x", "object": "text_completion", "choices": [],
                                 "usage": {"prompt_tokens": n_prompt, "completion_tokens": n_out,
                                           "total_tokens": n_prompt + n_out}})
                self._event("[DONE]")
                self._chunk(b"")
            finally:
                with state.lock:
                    state.in_flight -= 1

    return Handler


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--ttft-ms", type=float, default=60)
    p.add_argument("--itl-ms", type=float, default=15)
    p.add_argument("--no-usage", action="store_true")
    p.add_argument("--fail-every", type=int, default=0, help="answer every Nth POST with HTTP 500")
    args = p.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(args, State()))
    server.daemon_threads = True
    print(f"port {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
