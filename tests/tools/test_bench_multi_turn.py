#!/usr/bin/env python3
"""`vtllm bench serve --multi-turn` against `vtllm serve` on the bundled tiny Qwen3.5 (CPU).

A smoke test of the multi-turn client and of hybrid prefix caching through the server:
every turn of every conversation completes, the server reports cached tokens, and from
turn 2 on the cached tokens cover at least 90% of what a prefix cache can reuse (rewrite
mode: the previous prompt; append mode with the generated ids: prompt and answer) or most
of it (append mode whose answer ids come back through /tokenize of the answer text, so a
re-tokenization may break the chain early). Turn 1
of the conversations that start after another one reuses the shared system prefix.

usage: test_bench_multi_turn.py PATH/TO/vtllm REPO_ROOT   (CTest passes both; loopback only)
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import unittest

VTLLM = None
TINY = None


class Server:
    def __init__(self):
        self.proc = subprocess.Popen(
            [VTLLM, "serve", TINY, "--port", "0", "--served-model-name", "tiny", "--device", "cpu",
             "--max-num-seqs", "4", "--max-model-len", "2048",
             # Half the (small) CPU cache: a few snapshots per conversation stay resident.
             "--state-snapshot-budget", "0.5"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        assert m, f"serve line: {line!r}"
        assert "GDN state snapshots" in line, f"hybrid prefix caching is not on: {line!r}"
        self.url = f"http://127.0.0.1:{m.group(1)}"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()


CONVERSATIONS, TURNS, USER, OUTPUT, SYSTEM = 4, 3, 120, 8, 96


def run_bench(url, out, mode, seed, *extra):
    cmd = [VTLLM, "bench", "serve", "--base-url", url, "--model", "tiny", "--multi-turn",
           "--conversations", str(CONVERSATIONS), "--turns", str(TURNS), "--user-len", str(USER),
           "--output-len", str(OUTPUT), "--system-len", str(SYSTEM), "--concurrency", "2",
           "--token-range", "100,4000", "--multi-turn-mode", mode, "--seed", str(seed), "--json", out,
           *extra]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    print(r.stdout, flush=True)
    with open(out) as f:
        return json.load(f), r.stdout


class MultiTurnOnTinyModel(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.server = Server()

    @classmethod
    def tearDownClass(cls):
        cls.server.__exit__()
        cls.tmp.cleanup()

    def check_common(self, j):
        self.assertEqual(j["kind"], "serve_multi_turn")
        self.assertEqual(len(j["turns"]), TURNS)
        for t in j["turns"]:
            self.assertEqual((t["completed"], t["failed"]), (CONVERSATIONS, 0), t)
            self.assertEqual(t["cached_reported"], CONVERSATIONS, t)
            self.assertGreater(t["ttft_ms"]["mean"], 0)
        first = j["turns"][0]  # each test has its own seed: nothing cached from the other
        # Conversations 1..3 may reuse the system prefix; the two that start after
        # another worker's first turn find its snapshot (16-token blocks: 96 tokens).
        self.assertEqual(first["reusable_tokens"], (CONVERSATIONS - 1) * SYSTEM)
        self.assertGreaterEqual(first["cached_tokens"], 2 * SYSTEM, first)
        self.assertLessEqual(first["cached_tokens"], first["reusable_tokens"], first)

    def test_rewrite_reuses_the_previous_prompt(self):
        j, out = run_bench(self.server.url, os.path.join(self.tmp.name, "rewrite.json"), "rewrite", 4)
        self.check_common(j)
        for t in j["turns"][1:]:
            prompt = SYSTEM + t["turn"] * USER + (t["turn"] - 1) * OUTPUT
            self.assertEqual(t["prompt_tokens"], CONVERSATIONS * prompt, t)
            self.assertEqual(t["reusable_tokens"], CONVERSATIONS * (prompt - USER - OUTPUT), t)
            self.assertGreaterEqual(t["cached_fraction_of_reusable"], 0.9, (t, out))
            self.assertLessEqual(t["cached_tokens"], t["reusable_tokens"], t)

    def test_append_of_the_generated_ids_reuses_prompt_and_answer(self):
        # The answer as generated (return_token_ids): the snapshot at the response's end
        # serves the next turn, so everything but the last block is reused.
        j, out = run_bench(self.server.url, os.path.join(self.tmp.name, "ids.json"), "append", 5,
                           "--extra-body", '{"return_token_ids": true}')
        self.check_common(j)
        for t in j["turns"][1:]:
            prompt = SYSTEM + t["turn"] * USER + (t["turn"] - 1) * OUTPUT
            self.assertEqual(t["reusable_tokens"], CONVERSATIONS * (prompt - USER), t)
            self.assertGreaterEqual(t["cached_fraction_of_reusable"], 0.9, (t, out))

    def test_append_reuses_prompt_and_answer(self):
        j, out = run_bench(self.server.url, os.path.join(self.tmp.name, "append.json"), "append", 3)
        self.check_common(j)
        for t in j["turns"][1:]:
            self.assertGreaterEqual(t["cached_fraction_of_reusable"], 0.8, (t, out))


if __name__ == "__main__":
    VTLLM, root = sys.argv[1], sys.argv[2]
    TINY = os.path.join(root, "models", "tiny-qwen3.5")
    unittest.main(argv=sys.argv[:1], verbosity=2)
