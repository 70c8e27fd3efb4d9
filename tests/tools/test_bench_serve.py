#!/usr/bin/env python3
"""`vtllm bench serve` measures a fake streaming server whose timing is known.

usage: test_bench_serve.py PATH/TO/vtllm   (CTest passes it; loopback only, bounded)
"""
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import unittest
import urllib.request

HERE = pathlib.Path(__file__).resolve().parent
VTLLM = None
TTFT_MS, ITL_MS = 60.0, 15.0


class FakeServer:
    def __init__(self, *extra):
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "fake_openai_server.py"), "--ttft-ms", str(TTFT_MS),
             "--itl-ms", str(ITL_MS), *extra], stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("port "), line
        self.url = f"http://127.0.0.1:{int(line.split()[1])}"

    def stats(self):
        with urllib.request.urlopen(self.url + "/stats", timeout=10) as r:
            return json.load(r)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()
        self.proc.stdout.close()


def load(path):
    with open(path) as f:
        return json.load(f)


def bench(url, out_json, *extra):
    cmd = [VTLLM, "bench", "serve", "--base-url", url, "--input-len", "16", "--output-len", "6",
           "--json", out_json, "--seed", "5", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=90)


class BenchServeAgainstFakeServer(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.json = os.path.join(self.tmp.name, "out.json")

    def tearDown(self):
        self.tmp.cleanup()

    def test_measures_known_timing_and_sends_the_workload(self):
        with FakeServer() as s:
            r = bench(s.url, self.json, "--concurrency", "1,4", "--num-prompts", "8")
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            stats = s.stats()
        result = load(self.json)
        self.assertEqual([l["concurrency"] for l in result["levels"]], [1, 4])
        for level in result["levels"]:
            self.assertEqual(level["completed"], 8)
            self.assertEqual(level["failed"], 0)
            self.assertEqual(level["short_outputs"], 0)
            self.assertEqual(level["total_output_tokens"], 8 * 6)
            self.assertEqual(level["total_prompt_tokens"], 8 * 16)
            ttft, tpot, itl, e2e = (level[k] for k in ("ttft_ms", "tpot_ms", "itl_ms", "e2el_ms"))
            # Sleeps only overshoot; the upper bounds leave room for a loaded 2-core machine
            # but not for a 40 ms Nagle/delayed-ACK stall (the client sets TCP_NODELAY).
            self.assertGreaterEqual(ttft["median"], TTFT_MS * 0.95)
            self.assertLess(ttft["median"], TTFT_MS + 25)
            self.assertGreaterEqual(itl["median"], ITL_MS * 0.8)
            self.assertLess(itl["median"], ITL_MS + 20)
            self.assertEqual(itl["count"], 8 * 5)  # 6 token events: 5 gaps; the finish chunk is no token
            self.assertGreaterEqual(tpot["mean"], ITL_MS * 0.95)
            self.assertLess(tpot["mean"], ITL_MS + 20)
            self.assertGreaterEqual(e2e["min"], TTFT_MS + 5 * ITL_MS * 0.95)
            # Closed loop: 8 requests of >= e2e.min each over C clients take >= 8/C of it.
            c = level["concurrency"]
            self.assertGreaterEqual(level["duration_s"] * 1000, (8 // c) * e2e["min"] * 0.99)
            self.assertAlmostEqual(level["request_throughput"], 8 / level["duration_s"], places=6)
            self.assertAlmostEqual(level["output_throughput"], 48 / level["duration_s"], places=6)
        # Level 4 really ran 4 requests at once, never more; warm-up + 2 x 8 requests were sent.
        self.assertEqual(stats["max_in_flight"], 4)
        bodies = stats["bodies"]
        self.assertEqual(len(bodies), 1 + 16)
        for b in bodies:
            self.assertTrue(b["stream"])
            self.assertTrue(b["ignore_eos"])
            self.assertEqual(b["max_tokens"], 6)
            self.assertEqual(b["temperature"], 0)
            self.assertTrue(b["stream_options"]["include_usage"])
            self.assertEqual(len(b["prompt"]), 16)
            self.assertTrue(all(isinstance(t, int) and 1000 <= t < 100000 for t in b["prompt"]))
        # The warm-up is prompt 0 and each level starts again at prompt 0: same seed, same prompts.
        self.assertEqual(bodies[0]["prompt"], bodies[1]["prompt"])
        self.assertEqual(len({json.dumps(b["prompt"]) for b in bodies}), 8)
        self.assertIn("TTFT", r.stdout)

    def test_multi_turn_appends_the_answer_ids_each_server_returns(self):
        # vLLM's return_token_ids (choice.token_ids) and llama.cpp's return_tokens + verbose
        # (__verbose.tokens): either way turn 2's prompt is turn 1's prompt + the answer ids.
        for extra in ('{"return_token_ids": true}', '{"return_tokens": true, "verbose": true}'):
            with FakeServer() as s:
                r = subprocess.run(
                    [VTLLM, "bench", "serve", "--base-url", s.url, "--multi-turn",
                     "--conversations", "1", "--turns", "2", "--user-len", "8", "--output-len",
                     "5", "--extra-body", extra, "--json", self.json],
                    capture_output=True, text=True, timeout=90)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                bodies = s.stats()["bodies"]
            turns = [b["prompt"] for b in bodies if len(b["prompt"]) > 1]
            self.assertEqual(len(turns[-2]), 8, extra)
            self.assertEqual(turns[-1][:13], turns[-2] + list(range(7000, 7005)), extra)
            self.assertEqual(load(self.json)["turns"][1]["reusable_tokens"], 13, extra)

    def test_counts_token_events_when_the_server_sends_no_usage(self):
        with FakeServer("--no-usage") as s:
            r = bench(s.url, self.json, "--concurrency", "2", "--num-prompts", "4",
                      "--prompt-kind", "text")
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            bodies = s.stats()["bodies"]
        level = load(self.json)["levels"][0]
        self.assertEqual(level["total_output_tokens"], 4 * 6)
        self.assertEqual(level["total_prompt_tokens"], 4 * 16)  # nominal: no usage to correct it
        self.assertTrue(all(isinstance(b["prompt"], str) and len(b["prompt"].split()) == 16 for b in bodies))

    def test_reports_failed_requests_and_exits_1(self):
        with FakeServer("--fail-every", "3") as s:
            # POSTs 1 (warm-up) .. 7: numbers 3 and 6 fail, so 2 of the 6 measured requests.
            r = bench(s.url, self.json, "--concurrency", "1", "--num-prompts", "6")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        level = load(self.json)["levels"][0]
        self.assertEqual((level["completed"], level["failed"]), (4, 2))
        self.assertIn("HTTP 500", level["errors"][0])
        self.assertIn("injected failure", r.stdout)

    def test_unreachable_server_fails_at_warmup_naming_it(self):
        r = bench("http://127.0.0.1:1", self.json)
        self.assertEqual(r.returncode, 1)
        self.assertIn("warm-up request failed", r.stderr)
        self.assertFalse(os.path.exists(self.json))

    def test_rejects_bad_arguments(self):
        for bad in (["--concurrency", "1,x"], ["--base-url", "127.0.0.1:8000"],
                    ["--base-url", "http://h:1/v1"], ["--prompt-kind", "words"], ["--bogus", "1"]):
            r = subprocess.run([VTLLM, "bench", "serve", *bad], capture_output=True, text=True, timeout=30)
            self.assertNotEqual(r.returncode, 0, bad)
            self.assertIn("error", r.stderr, bad)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    VTLLM = sys.argv.pop(1)
    unittest.main()
