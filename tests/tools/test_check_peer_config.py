#!/usr/bin/env python3
"""Tests of tools/bench/check_peer_config.py on the real harness and on mutated copies.

Each mutation removes or weakens one production setting in a copy of tools/bench and
requires exactly one violation, at the right file:line; a copy without launches must
exit 2. Run: python3 tests/tools/test_check_peer_config.py
"""
import json
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

REPO = pathlib.Path(__file__).resolve().parents[2]
HARNESS = REPO / "tools" / "bench"
CHECKER = HARNESS / "check_peer_config.py"
LLAMA = "peers/llama_cpp.sh"
RUN = "run_peers.sh"


def run_checker(root, *extra):
    r = subprocess.run([sys.executable, str(CHECKER), "--root", str(root), *extra],
                       capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout, r.stderr


def violations(stdout):
    return [l for l in stdout.splitlines() if l.strip()]


def line_of(path, pattern):
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if re.search(pattern, line):
            return n
    raise AssertionError(f"{pattern} not in {path}")


class RealHarness(unittest.TestCase):
    def test_clean_and_lists_every_peer(self):
        code, out, err = run_checker(HARNESS)
        self.assertEqual(code, 0, out + err)
        code, out, _ = run_checker(HARNESS, "--json")
        self.assertEqual(code, 0)
        found = json.loads(out)
        peers = sorted(l["peer"] for l in found["launches"])
        self.assertEqual(peers, ["llama-server", "llama-server", "transformers"])
        server, mm = [l for l in found["launches"] if l["peer"] == "llama-server"]
        self.assertEqual(server["file"].split("tools/bench/")[-1], LLAMA)
        self.assertEqual(server["line"], line_of(HARNESS / LLAMA, r'exec .*llama-server'))
        self.assertEqual(server["settings"]["fa"], "on")
        self.assertNotIn("mmproj", server["settings"])
        # serve-mm: the same settings in their long spellings, plus the projector's.
        self.assertEqual(mm["line"], line_of(HARNESS / LLAMA, r'exec .*llama-server.*--mmproj'))
        self.assertEqual(mm["settings"]["mmproj"], '$mmproj')
        self.assertEqual(mm["settings"]["fa"], "on")
        self.assertEqual(mm["settings"]["ngl"], "all")
        self.assertIs(mm["settings"]["mmproj_offload"], True)
        self.assertEqual(mm["settings"]["image_max_tokens"], "4096")
        self.assertEqual(found["violations"], [])

    def test_version_query_is_not_a_launch(self):
        # llama_cpp.sh build prints `llama-server --version`; it must not count.
        self.assertIn("llama-server\" --version", (HARNESS / LLAMA).read_text())
        _, out, _ = run_checker(HARNESS, "--json")
        self.assertEqual(sum(l["peer"] == "llama-server" for l in json.loads(out)["launches"]), 2)


class Mutations(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = pathlib.Path(self.tmp.name) / "bench"
        shutil.copytree(HARNESS, self.root, ignore=shutil.ignore_patterns("__pycache__"))
        (self.root / CHECKER.name).unlink()

    def tearDown(self):
        self.tmp.cleanup()

    def mutate(self, rel, old, new):
        path = self.root / rel
        text = path.read_text()
        self.assertEqual(text.count(old), 1, f"{old!r} should occur once in {rel}")
        path.write_text(text.replace(old, new))
        return path

    def expect_one(self, rel, old, new, launch_pattern, words):
        path = self.mutate(rel, old, new)
        code, out, err = run_checker(self.root)
        v = violations(out)
        self.assertEqual(code, 1, out + err)
        self.assertEqual(len(v), 1, v)
        self.assertTrue(v[0].endswith(tuple(words)) or all(w in v[0] for w in words), v[0])
        want_line = line_of(path, launch_pattern)
        self.assertIn(f"{rel}:{want_line}: ", v[0])
        return v[0]

    # llama-server: removing any one production flag is exactly one violation.
    def test_removing_flash_attention(self):
        self.expect_one(LLAMA, "      -fa on \\\n", "", r"exec .*llama-server", ["flash attention", "-fa on"])

    def test_removing_all_layers_on_gpu(self):
        self.expect_one(LLAMA, "      -ngl 999 \\\n", "", r"exec .*llama-server", ["-ngl 999"])

    def test_removing_continuous_batching(self):
        self.expect_one(LLAMA, "      -cb \\\n", "", r"exec .*llama-server", ["-cb"])

    def test_removing_parallel(self):
        self.expect_one(LLAMA, '      --parallel "$max_concurrency" \\\n', "", r"exec .*llama-server",
                        ["--parallel"])

    def test_removing_context(self):
        self.expect_one(LLAMA, ' \\\n      -c "$ctx"\n', "\n", r"exec .*llama-server", ["lacks -c"])

    # llama-server: weakened values.
    def test_partial_offload(self):
        self.expect_one(LLAMA, "-ngl 999", "-ngl 20", r"exec .*llama-server", ["-ngl 20"])

    def test_flash_attention_auto(self):
        self.expect_one(LLAMA, "-fa on", "-fa auto", r"exec .*llama-server", ["'auto'"])

    def test_too_few_slots(self):
        v = self.expect_one(LLAMA, '--parallel "$max_concurrency"', "--parallel 8", r"exec .*llama-server",
                            ["--parallel evaluates to 8 < 32"])
        self.assertIn("concurrency 32", v)

    def test_context_not_scaled_by_slots(self):
        v = self.expect_one(LLAMA, "ctx=$(( max_concurrency * (input_len + output_len + 256) ))",
                            "ctx=$(( input_len + output_len + 256 ))", r"exec .*llama-server", ["-c evaluates to"])
        # The server has max_concurrency (64) slots at every level, so even level 1 fails.
        self.assertIn("-c evaluates to 896 < 40960 for input 512, output 128, concurrency 1", v)

    def test_context_without_output(self):
        self.expect_one(LLAMA, "ctx=$(( max_concurrency * (input_len + output_len + 256) ))",
                        "ctx=$(( max_concurrency * input_len ))", r"exec .*llama-server", ["-c evaluates to"])

    def test_context_that_cannot_be_evaluated_fails_closed(self):
        self.expect_one(LLAMA, "ctx=$(( max_concurrency * (input_len + output_len + 256) ))",
                        "ctx=$(compute_ctx)", r"exec .*llama-server", ["cannot evaluate -c"])

    def test_continuous_batching_turned_off(self):
        self.expect_one(LLAMA, "      -cb \\\n", "      -cb -nocb \\\n", r"exec .*llama-server", ["-nocb"])

    # llama-server: prompt caching for hybrid models.
    def test_prompt_cache_turned_off(self):
        self.expect_one(LLAMA, "      --cache-prompt \\\n", "      --no-cache-prompt \\\n",
                        r"exec .*llama-server", ["--no-cache-prompt"])

    def test_no_context_checkpoints(self):
        self.expect_one(LLAMA, "--ctx-checkpoints 32", "--ctx-checkpoints 0", r"exec .*llama-server",
                        ["--ctx-checkpoints 0"])

    def test_no_host_prompt_cache(self):
        self.expect_one(LLAMA, "--cache-ram 32768", "--cache-ram 0", r"exec .*llama-server",
                        ["--cache-ram 0"])

    def test_checkpoints_without_their_spacing(self):
        self.expect_one(LLAMA, '      --checkpoint-min-step "$checkpoint_min_step" \\\n', "",
                        r"exec .*llama-server", ["--checkpoint-min-step"])

    # llama-server --mmproj (serve-mm): the projector's settings.
    MM = r"exec .*llama-server.*--mmproj"

    def test_mm_removing_projector_offload(self):
        self.expect_one(LLAMA, "      --mmproj-offload --image-max-tokens 4096 \\\n",
                        "      --image-max-tokens 4096 \\\n", self.MM, ["lacks --mmproj-offload"])

    def test_mm_projector_on_cpu(self):
        self.expect_one(LLAMA, "--mmproj-offload --image-max", "--no-mmproj-offload --image-max", self.MM,
                        ["--no-mmproj-offload"])

    def test_mm_projector_device_none(self):
        self.expect_one(LLAMA, "--image-max-tokens 4096", "--image-max-tokens 4096 -mmdev none", self.MM,
                        ["--mmproj-device none"])

    def test_mm_image_budget_that_downscales(self):
        self.expect_one(LLAMA, "--image-max-tokens 4096", "--image-max-tokens 256", self.MM,
                        ["--image-max-tokens 256 < 1024"])

    def test_mm_image_budget_that_cannot_be_evaluated_fails_closed(self):
        self.expect_one(LLAMA, "--image-max-tokens 4096", '--image-max-tokens "$(budget)"', self.MM,
                        ["cannot evaluate --image-max-tokens"])

    def test_mm_projector_turned_off(self):
        self.expect_one(LLAMA, '--mmproj "$mmproj"', '--mmproj "$mmproj" --no-mmproj', self.MM,
                        ["--no-mmproj turns"])

    def test_mm_launch_keeps_the_serving_rules(self):
        # The long spellings are the same rules: weakening one is one violation there.
        self.expect_one(LLAMA, "--flash-attn on", "--flash-attn auto", self.MM, ["'auto'"])
        self.tearDown()
        self.setUp()
        self.expect_one(LLAMA, "--n-gpu-layers all", "--n-gpu-layers 20", self.MM, ["-ngl 20"])
        self.tearDown()
        self.setUp()
        self.expect_one(LLAMA, "mm_ctx=$(( (input_len + output_len + 256) * max_concurrency ))",
                        "mm_ctx=$(( input_len + output_len ))", self.MM, ["-c evaluates to"])
        self.tearDown()
        self.setUp()
        self.expect_one(LLAMA, "-ctxcp 32", "-ctxcp 0", self.MM, ["--ctx-checkpoints 0"])

    # transformers.
    def test_removing_bf16(self):
        self.expect_one(RUN, "        --dtype bfloat16\n", "", r"python3 .*transformers_server\.py",
                        ["--dtype bfloat16"])

    def test_removing_attention_implementation(self):
        self.expect_one(RUN, "        --attn-implementation sdpa\n", "", r"python3 .*transformers_server\.py",
                        ["--attn-implementation"])

    def test_eager_attention(self):
        self.expect_one(RUN, "--attn-implementation sdpa", "--attn-implementation eager",
                        r"python3 .*transformers_server\.py", ["eager"])

    def test_float32(self):
        self.expect_one(RUN, "--dtype bfloat16", "--dtype float32", r"python3 .*transformers_server\.py",
                        ["float32"])

    def test_removing_batch_size(self):
        self.expect_one(RUN, '        --max-batch-size "$max_concurrency"\n', "",
                        r"python3 .*transformers_server\.py", ["--max-batch-size"])

    def test_forcing_static_batches(self):
        self.expect_one(RUN, "--engine auto", "--engine generate", r"python3 .*transformers_server\.py",
                        ["--engine generate"])

    # Where the launches are.
    def test_line_numbers_follow_the_file(self):
        path = self.root / LLAMA
        path.write_text("# one\n# two\n# three\n" + path.read_text())
        self.expect_one(LLAMA, "      -fa on \\\n", "", r"exec .*llama-server", ["-fa on"])

    def test_a_new_launch_is_found_and_checked(self):
        (self.root / "extra.sh").write_text(
            "#!/usr/bin/env bash\n# llama-server -ngl 1 in a comment is not a launch\n"
            "echo 'llama-server'\n"
            "cd /tmp && /opt/llama/bin/llama-server -m x.gguf -ngl 999 --parallel 64 -cb -c 1000000 > log 2>&1 &\n")
        code, out, _ = run_checker(self.root)
        v = violations(out)
        self.assertEqual(code, 1)
        self.assertEqual(len(v), 1, v)
        self.assertIn("extra.sh:4: ", v[0])
        self.assertIn("-fa on", v[0])

    def test_python_launch_list(self):
        (self.root / "extra.py").write_text(
            "import subprocess\n\n"
            "def serve(args):\n"
            "    ctx = args.concurrency * (args.input_len + args.output_len)\n"
            "    return subprocess.Popen([\n"
            "        f'{args.bin}/llama-server', '-m', args.model, '-ngl', '999', '-fa', 'on',\n"
            "        '--parallel', str(args.concurrency), '-cb', '-c', str(ctx)])\n")
        code, out, err = run_checker(self.root)
        self.assertEqual(code, 0, out + err)
        self.mutate("extra.py", "'-fa', 'on',", "")
        code, out, _ = run_checker(self.root)
        v = violations(out)
        self.assertEqual(len(v), 1, v)
        self.assertIn("extra.py:5: ", v[0])

    def test_no_launch_exits_2(self):
        for rel in (LLAMA, RUN):
            (self.root / rel).unlink()
        code, out, err = run_checker(self.root)
        self.assertEqual(code, 2, out + err)
        self.assertIn("no peer launch found", err)
        empty = pathlib.Path(self.tmp.name) / "empty"
        empty.mkdir()
        self.assertEqual(run_checker(empty)[0], 2)


if __name__ == "__main__":
    unittest.main()
