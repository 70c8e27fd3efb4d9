#!/usr/bin/env python3
"""CLI tests of `vtllm generate` (and `--load-format dummy` through generate and serve).

usage: test_generate.py VTLLM_BINARY SOURCE_DIR

The oracle check is issue 7's "done when": for every prompt of the four tiny
fixtures, `vtllm generate DIR --prompt-ids IDS --max-tokens 32 --print-ids` prints
exactly the oracle's greedy continuation (cut after an eos token, where the oracle,
which never stops at eos, would run on).
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.request

VTLLM, SRC = sys.argv[1], sys.argv[2]
FIXTURES = ["tests/fixtures/qwen3-tiny", "tests/fixtures/qwen3_5-tiny-r2",
            "tests/fixtures/qwen3_5-tiny-r3-vl", "models/tiny-qwen3.5"]
TINY = os.path.join(SRC, "models/tiny-qwen3.5")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)


def generate(*args, expect_rc=0):
    # The references are the f32 oracle's: pin the CPU (the default, auto, takes a GPU).
    if "--device" not in args:
        args = (*args, "--device", "cpu")
    p = subprocess.run([VTLLM, "generate", *args], capture_output=True, timeout=120)
    if p.returncode != expect_rc:
        check(False, f"generate {args}: exit {p.returncode}, expected {expect_rc}; stderr: "
                     f"{p.stderr.decode(errors='replace')}")
    return p.stdout.decode("utf-8"), p.stderr.decode("utf-8", errors="replace")


def ids_of(stdout):
    return [int(t) for t in stdout.split()]


def eos_ids(d):
    ids = set()
    for name in ("config.json", "generation_config.json"):
        path = os.path.join(d, name)
        if not os.path.exists(path):
            continue
        c = json.load(open(path))
        for v in (c.get("eos_token_id"), c.get("text_config", {}).get("eos_token_id")):
            if isinstance(v, int):
                ids.add(v)
            elif isinstance(v, list):
                ids.update(v)
    return ids


def test_oracle_greedy():
    for rel in FIXTURES:
        d = os.path.join(SRC, rel)
        ref = json.load(open(os.path.join(d, "reference.json")))
        eos = eos_ids(d)
        for k, prompt in enumerate(ref["prompts"]):
            want = prompt["continuation"][:32]
            for i, t in enumerate(want):
                if t in eos:
                    want = want[:i + 1]
                    break
            out, err = generate(d, "--prompt-ids", " ".join(map(str, prompt["ids"])),
                                "--max-tokens", "32", "--print-ids")
            check(out.endswith("\n") and ids_of(out) == want,
                  f"{rel} prompt {k} ({prompt['name']}): got {out.strip()!r}, oracle {want}")
            m = re.search(r"(\d+) prompt tokens, (\d+) generated .* finish reason (\w+)", err)
            check(m is not None and int(m.group(1)) == len(prompt["ids"]) and
                  int(m.group(2)) == len(want) and
                  m.group(3) == ("length" if len(want) == 32 and want[-1] not in eos else "stop"),
                  f"{rel} prompt {k}: summary line {err.strip()!r}")
        print(f"ok: {rel}: {len(ref['prompts'])} prompts equal the oracle", flush=True)


def test_chat_prints_the_decoded_ids():
    text, err = generate(TINY, "--prompt", "Hello", "--chat", "--max-tokens", "24",
                         "--ignore-eos")
    check(len(text.strip()) > 0, f"--chat printed no text: {text!r} / {err!r}")
    ids, err_ids = generate(TINY, "--prompt", "Hello", "--chat", "--max-tokens", "24",
                            "--ignore-eos", "--print-ids")
    check(len(ids_of(ids)) == 24, f"--chat --print-ids: {ids!r}")
    # The streamed text equals a one-shot decode of the same ids (special tokens skipped).
    decoded = subprocess.run([VTLLM, "tokenize", TINY, "--decode", "--skip-special"],
                             input=ids.encode(), capture_output=True, timeout=60)
    check(decoded.returncode == 0 and text.rstrip("\n") == decoded.stdout.decode().rstrip("\n"),
          f"streamed text {text!r} != decode of its ids {decoded.stdout!r}")
    # The chat template wrapped the prompt: more tokens than "Hello" alone.
    plain = subprocess.run([VTLLM, "tokenize", TINY], input=b"Hello", capture_output=True,
                           timeout=60).stdout.split()
    n_chat = int(re.search(r"(\d+) prompt tokens", err).group(1))
    check(n_chat > len(plain) + 4, f"--chat prompt has {n_chat} tokens, plain {len(plain)}")
    # Without --chat the same text is a different, shorter prompt.
    _, err_plain = generate(TINY, "--prompt", "Hello", "--max-tokens", "1")
    check(int(re.search(r"(\d+) prompt tokens", err_plain).group(1)) == len(plain),
          f"plain prompt summary {err_plain!r}")
    print("ok: --chat", flush=True)


def test_seeded_sampling_is_reproducible():
    base = [TINY, "--prompt", "The capital of", "--max-tokens", "32", "--ignore-eos",
            "--temperature", "1.5", "--print-ids"]
    a, _ = generate(*base, "--seed", "7")
    b, _ = generate(*base, "--seed", "7")
    c, _ = generate(*base, "--seed", "8")
    g, _ = generate(*base[:-3], "--print-ids")  # greedy
    check(len(ids_of(a)) == 32 and a == b, f"seed 7 twice: {a!r} vs {b!r}")
    check(a != c, f"seeds 7 and 8 gave the same tokens {a!r}")
    check(a != g, f"temperature 1.5 equals greedy {a!r}")
    k1, _ = generate(*base, "--seed", "7", "--top-k", "1")
    check(k1 == g, f"top-k 1 is not greedy: {k1!r} vs {g!r}")
    print("ok: seeded sampling", flush=True)


def test_errors_name_the_problem():
    _, err = generate(TINY, expect_rc=2)
    check("usage" in err, f"no prompt: {err!r}")
    _, err = generate(TINY, "--prompt-ids", "1 x 2", expect_rc=1)
    check("--prompt-ids" in err, f"bad ids: {err!r}")
    _, err = generate(TINY, "--prompt-ids", "1 999999", expect_rc=1)
    check("999999" in err and "vocabulary" in err, f"id outside vocab: {err!r}")
    fixture = os.path.join(SRC, FIXTURES[0])
    _, err = generate(fixture, "--prompt", "hi", expect_rc=1)
    check("tokenizer" in err, f"fixture without tokenizer: {err!r}")
    _, err = generate(TINY, "--prompt-ids", "1", "--load-format", "npz", expect_rc=1)
    check("--load-format" in err, f"bad load format: {err!r}")
    _, err = generate(TINY, "--prompt-ids", "1", "--chat", expect_rc=1)
    check("--chat" in err, f"--chat with ids: {err!r}")
    print("ok: errors", flush=True)


def test_dummy_weights_need_only_the_config():
    with tempfile.TemporaryDirectory() as tmp:
        for rel in ("tests/fixtures/qwen3_5-tiny-r3-vl", "models/tiny-qwen3.5"):
            d = os.path.join(tmp, os.path.basename(rel))
            os.mkdir(d)
            shutil.copy(os.path.join(SRC, rel, "config.json"), d)
            args = ["--prompt-ids", "1 2 3 4 5", "--max-tokens", "8", "--print-ids",
                    "--ignore-eos"]
            out1, _ = generate(d, *args, "--load-format", "dummy")
            out2, _ = generate(d, *args, "--load-format", "dummy")
            check(len(ids_of(out1)) == 8 and out1 == out2, f"dummy {rel}: {out1!r} / {out2!r}")
            _, err = generate(d, *args, expect_rc=1)  # auto needs the weights
            check("safetensors" in err, f"{rel} without weights: {err!r}")
        # The multimodal class builds its vision tower (dummy weights too) and generates
        # text with or without it.
        for extra in ([], ["--language-model-only"]):
            out, err = generate(os.path.join(tmp, "qwen3_5-tiny-r3-vl"), "--prompt-ids", "1",
                                "--max-tokens", "1", "--load-format", "dummy", "--print-ids",
                                *extra)
            check(len(ids_of(out)) == 1 and "no vision tower" not in err,
                  f"multimodal dummy {extra}: {out!r} / {err!r}")
    print("ok: dummy weights", flush=True)


def test_serve_with_dummy_weights():
    p = subprocess.Popen([VTLLM, "serve", TINY, "--port", "0", "--load-format", "dummy",
                          "--served-model-name", "tiny", "--max-num-seqs", "4", "--device", "cpu"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        line = p.stdout.readline().decode()
        m = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        check(m is not None and "dummy weights" in line, f"serve line: {line!r}")
        if m:
            body = json.dumps({"model": "tiny", "prompt": [1, 2, 3], "max_tokens": 5,
                               "temperature": 0, "ignore_eos": True}).encode()
            req = urllib.request.Request(f"http://127.0.0.1:{m.group(1)}/v1/completions", body,
                                         {"Content-Type": "application/json"})
            r = json.load(urllib.request.urlopen(req, timeout=60))
            check(r["usage"]["completion_tokens"] == 5, f"serve dummy reply {r}")
    finally:
        p.send_signal(signal.SIGINT)
        rc = p.wait(timeout=60)
        check(rc == 0, f"serve exit {rc}: {p.stderr.read().decode(errors='replace')}")
    print("ok: serve --load-format dummy", flush=True)


for t in (test_oracle_greedy, test_chat_prints_the_decoded_ids,
          test_seeded_sampling_is_reproducible, test_errors_name_the_problem,
          test_dummy_weights_need_only_the_config, test_serve_with_dummy_weights):
    try:
        t()
    except Exception as e:  # a crash in one test is a failure, the others still run
        check(False, f"{t.__name__}: {type(e).__name__}: {e}")
print(f"{len(failures)} failures")
sys.exit(1 if failures else 0)
