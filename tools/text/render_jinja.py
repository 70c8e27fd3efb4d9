#!/usr/bin/env python3
"""The reference chat-template renderer: Python Jinja2 3.1 set up exactly as
transformers' apply_chat_template sets it up (chat_template_utils.py,
_compile_jinja_template and render_jinja_template).

  ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                extensions=[AssistantTracker, loopcontrols])
  filters["tojson"]  = json.dumps(x, ensure_ascii=False, indent=, separators=, sort_keys=)
  globals["raise_exception"], globals["strftime_now"]
  render(messages=, tools=, documents=, add_generation_prompt=, **special_tokens, **kwargs)

AssistantTracker only adds the {% generation %} tag, which renders its body
as is; a tiny extension here does the same.

Usage:
  render_jinja.py DIR [--chat-template FILE] < request.json     # like `vtllm template DIR`
  render_jinja.py --raw TEMPLATE_FILE [--context CONTEXT_JSON]  # a bare template, a context dict

The request is an OpenAI chat-completions body: messages, optional tools and
documents, add_generation_prompt (true when absent or null), chat_template_kwargs. The
rendered prompt goes to stdout with nothing added; a template error exits 1
with "ErrorType: message" on stderr.
"""
import argparse
import datetime
import json
import os
import sys

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

# The special tokens transformers passes into every render (its special_tokens_map).
SPECIAL_TOKENS = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")
RESERVED = ("messages", "tools", "documents", "add_generation_prompt")


class GenerationTag(Extension):
    """{% generation %}...{% endgeneration %}: transformers' AssistantTracker, minus the tracking."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def environment():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.datetime.now().strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[GenerationTag, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def load_template_dir(directory, override=None):
    """(template source, special tokens) as transformers reads them from a model folder."""
    config = {}
    config_path = os.path.join(directory, "tokenizer_config.json")
    if os.path.exists(config_path):
        with open(config_path, encoding="utf-8") as f:
            config = json.load(f)
    source = None
    if override:
        with open(override, encoding="utf-8") as f:
            source = f.read()
    elif os.path.exists(os.path.join(directory, "chat_template.jinja")):
        with open(os.path.join(directory, "chat_template.jinja"), encoding="utf-8") as f:
            source = f.read()
    else:
        source = config.get("chat_template")
    specials = {}
    for name in SPECIAL_TOKENS:
        value = config.get(name)
        if isinstance(value, dict):
            value = value.get("content")
        if value is not None:
            specials[name] = value
    return source, specials


def pick_template(source, tools):
    """The list-of-named-templates form: 'tool_use' when tools are given and it exists, else 'default'."""
    if isinstance(source, list):
        named = {t["name"]: t["template"] for t in source}
        if tools is not None and "tool_use" in named:
            return named["tool_use"]
        if "default" in named:
            return named["default"]
        raise ValueError("the tokenizer has several chat templates and none is named 'default'")
    if not isinstance(source, str):
        raise ValueError("no chat template (tokenizer_config.json has no chat_template and there is no chat_template.jinja)")
    return source


def render_request(source, specials, request):
    tools = request.get("tools")
    template = pick_template(source, tools)
    kwargs = dict(specials)
    extra = request.get("chat_template_kwargs") or {}
    for key in extra:
        if key in RESERVED:
            raise ValueError(f"chat_template_kwargs may not set '{key}'")
    kwargs.update(extra)
    add_generation_prompt = request.get("add_generation_prompt")
    return environment().from_string(template).render(
        messages=request["messages"],
        tools=tools,
        documents=request.get("documents"),
        add_generation_prompt=True if add_generation_prompt is None else add_generation_prompt,
        **kwargs,
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", nargs="?")
    ap.add_argument("--chat-template")
    ap.add_argument("--raw", help="render this template file with --context as its variables")
    ap.add_argument("--context", help="JSON file of variables for --raw (default: none)")
    args = ap.parse_args()
    try:
        if args.raw:
            with open(args.raw, encoding="utf-8") as f:
                source = f.read()
            context = {}
            if args.context:
                with open(args.context, encoding="utf-8") as f:
                    context = json.load(f)
            out = environment().from_string(source).render(**context)
        else:
            if not args.dir:
                ap.error("give a model folder or --raw")
            source, specials = load_template_dir(args.dir, args.chat_template)
            out = render_request(source, specials, json.load(sys.stdin))
    except Exception as e:  # noqa: BLE001 - every template failure is reported the same way
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        return 1
    sys.stdout.buffer.write(out.encode("utf-8", "surrogateescape"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
