"""Running the oracle: greedy decoding with the KV/state cache, the checks that the
run is what transformers' own generate() does, and the reference.json layout.

Greedy here is argmax over the float32 logits (the lowest id wins an exact tie, as
torch.argmax), for a fixed number of steps: it does not stop at EOS, so every
prompt has exactly `steps` continuation tokens.
"""
import json
import os

import torch

FORMAT = 1


def set_deterministic():
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.set_num_threads(1)  # one thread: the CPU float32 sums run in one fixed order
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.use_deterministic_algorithms(True, warn_only=True)


def _device(model):
    return next(model.parameters()).device


def _ids(model, ids):
    return torch.tensor([ids], dtype=torch.long, device=_device(model))


@torch.no_grad()
def prefill_logits(model, ids):
    """Float32 logits of the last prompt position from one no-cache forward."""
    h = model.model(input_ids=_ids(model, ids), use_cache=False).last_hidden_state
    return model.lm_head(h[:, -1:, :])[0, -1].float().cpu()


@torch.no_grad()
def greedy(model, prompt, steps):
    """Prefill `prompt` in one forward, then decode one token per forward with the cache.
    Returns tokens, per-step top-5 ids/logits, top-2 margins, logsumexp of all logits,
    the norm of the final (normed) hidden state after prefill, and the step logits."""
    out = model.model(input_ids=_ids(model, prompt), use_cache=True)
    cache = out.past_key_values
    h = out.last_hidden_state[0].double()
    res = dict(tokens=[], top_ids=[], top_logits=[], margins=[], logsumexp=[],
               hidden_norm_last=float(h[-1].norm()), hidden_norm_all=float(h.norm()))
    logits = model.lm_head(out.last_hidden_state[:, -1:, :])[0, -1].float().cpu()
    step_logits = []
    for s in range(steps):
        step_logits.append(logits)
        vals, idx = torch.topk(logits, 5)
        res["top_ids"].append([int(i) for i in idx])
        res["top_logits"].append([float(v) for v in vals])
        res["margins"].append(float(vals[0]) - float(vals[1]))
        res["logsumexp"].append(float(torch.logsumexp(logits.double(), 0)))
        nxt = int(torch.argmax(logits))
        res["tokens"].append(nxt)
        if s + 1 == steps:
            break
        out = model.model(input_ids=_ids(model, [nxt]), past_key_values=cache, use_cache=True)
        cache = out.past_key_values
        logits = model.lm_head(out.last_hidden_state[:, -1:, :])[0, -1].float().cpu()
    res["step_logits"] = torch.stack(step_logits)
    return res


@torch.no_grad()
def cache_vs_full(model, prompt, res):
    """Re-runs prompt + continuation in one no-cache forward (chunked GDN everywhere) and
    compares with the cached decode (recurrent GDN). Returns max |diff| / max |logit|."""
    seq = list(prompt) + res["tokens"][:-1]
    h = model.model(input_ids=_ids(model, seq), use_cache=False).last_hidden_state
    full = model.lm_head(h)[0, len(prompt) - 1:].float().cpu()
    ref = res["step_logits"]
    assert full.shape == ref.shape, f"cache_vs_full: shapes {full.shape} vs {ref.shape}"
    assert torch.equal(full.argmax(-1), ref.argmax(-1)), "cache_vs_full: greedy tokens differ"
    return float((full - ref).abs().max() / ref.abs().max())


@torch.no_grad()
def generate_check(model, prompt, res):
    """transformers' generate(do_sample=False) gives the same tokens (up to its EOS stop)."""
    ids = _ids(model, prompt)
    out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=False,
                         num_beams=1, max_new_tokens=len(res["tokens"]))
    got = out[0, len(prompt):].tolist()
    mine = res["tokens"][:len(got)]
    assert got == mine, f"generate() gave {got}, the cached greedy loop {mine}"
    return len(got)


def cross_checks(model, prompts, results):
    rel = max(cache_vs_full(model, p["ids"], r) for p, r in zip(prompts, results))
    try:
        n = sum(generate_check(model, prompts[i]["ids"], results[i]) for i in (0, len(prompts) - 1))
        gen = f"match ({n} tokens)"
    except AssertionError:
        raise
    except Exception as e:  # an API difference in generate() must not block the fixture
        gen = f"not run: {type(e).__name__}: {e}"[:200]
    return dict(cache_vs_full_max_rel=rel, generate=gen)


def chat_renderer(tok_dir):
    """Renders chat messages with transformers' apply_chat_template on the fixture's own
    tokenizer_config.json, cross-checked against a plain jinja2 render of the template."""
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    with open(os.path.join(tok_dir, "tokenizer_config.json"), encoding="utf-8") as f:
        template = json.load(f)["chat_template"]
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = lambda x, **kw: json.dumps(x, ensure_ascii=False, **kw)
    compiled = env.from_string(template)

    def by_jinja(messages, kwargs):
        return compiled.render(messages=messages, add_generation_prompt=True, **(kwargs or {}))

    try:
        import transformers

        hf_tok = transformers.AutoTokenizer.from_pretrained(tok_dir)
    except Exception as e:  # noqa: BLE001
        print(f"make_fixtures: AutoTokenizer unavailable ({type(e).__name__}: {e}); using jinja2")
        return by_jinja, "jinja2"

    mismatches = []

    def by_hf(messages, kwargs):
        text = hf_tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True,
                                          **(kwargs or {}))
        plain = by_jinja(messages, kwargs)
        if text != plain:  # the C++ jinja is held to Python jinja2; say so loudly, keep HF's
            print(f"make_fixtures: WARNING: apply_chat_template {text!r} != jinja2 {plain!r}")
            mismatches.append(dict(messages=messages, hf=text, jinja2=plain))
        return text

    by_hf.mismatches = mismatches
    return by_hf, f"transformers.apply_chat_template ({type(hf_tok).__name__}), checked against jinja2"


def _prompt_entry(p, r):
    e = {k: p[k] for k in ("name", "text", "messages", "template_kwargs", "add_generation_prompt")
         if k in p}
    e.update(ids=p["ids"], continuation=r["tokens"], top_ids=r["top_ids"], top_logits=r["top_logits"],
             margins=r["margins"], logsumexp=r["logsumexp"], hidden_norm_last=r["hidden_norm_last"],
             hidden_norm_all=r["hidden_norm_all"])
    return e


def reference_json(spec, model, prompts, results, seed, tries, checks, steps, dtype, device):
    import transformers

    where = min(((min(r["margins"]), i, r["margins"].index(min(r["margins"])))
                 for i, r in enumerate(results)))
    return dict(
        format=FORMAT,
        generator="tools/oracle/make_fixtures.py",
        fixture=spec["name"],
        architecture=spec["arch"],
        torch=torch.__version__,
        transformers=transformers.__version__,
        device=device,
        compute_dtype=dtype,
        weights_dtype="bfloat16",
        attn_implementation=str(getattr(model.config, "_attn_implementation", None)),
        seed=seed,
        seeds_tried=[dict(seed=s, min_margin=m) for s, m in tries],
        steps=steps,
        greedy="argmax of the logits (lowest id on ties), fixed step count, no stop at EOS",
        hidden_norm="L2 norm of the final-normed hidden state after prefill: of the last "
                    "position (hidden_norm_last) and of all positions (hidden_norm_all)",
        min_margin=where[0],
        min_margin_at=dict(prompt=where[1], step=where[2]),
        checks=checks,
        prompts=[_prompt_entry(p, r) for p, r in zip(prompts, results)],
    )


def bf16_reference(cls, spec, fdir, prompts, f32_results, steps):
    """The saved model loaded in bf16 (dtype= keeps the fp32 inv_freq buffer, qwen3_5.md
    §7.1) and run on CUDA: the gate of the CUDA backend, ties reported not hidden."""
    import transformers

    if not torch.cuda.is_available():
        raise SystemExit("make_fixtures: --bf16 needs CUDA")
    model = cls.from_pretrained(fdir, dtype=torch.bfloat16).to("cuda").eval()
    results = [greedy(model, p["ids"], steps) for p in prompts]
    entries = []
    for p, r, f in zip(prompts, results, f32_results):
        e = _prompt_entry(p, r)
        agree = 0
        while agree < steps and r["tokens"][agree] == f["tokens"][agree]:
            agree += 1
        e["tokens_equal_to_f32"] = agree
        entries.append(e)
    ties = [dict(prompt=i, step=s) for i, r in enumerate(results) for s, m in enumerate(r["margins"])
            if m == 0.0]
    return dict(format=FORMAT, generator="tools/oracle/make_fixtures.py --bf16", fixture=spec["name"],
                architecture=spec["arch"], torch=torch.__version__,
                transformers=transformers.__version__, device=torch.cuda.get_device_name(),
                compute_dtype="bfloat16", weights_dtype="bfloat16",
                attn_implementation=str(getattr(model.config, "_attn_implementation", None)),
                steps=steps, greedy="argmax of the bf16 logits (lowest id on ties), no stop at EOS",
                min_margin=min(min(r["margins"]) for r in results), exact_ties=ties, prompts=entries)


def _dump(obj, indent=0):
    """JSON with lists of numbers on one line: readable and about half the size."""
    pad = " " * indent
    if isinstance(obj, dict):
        if not obj:
            return "{}"
        items = [f'{pad} {json.dumps(k)}: {_dump(v, indent + 1)}' for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(obj, list) and obj and all(isinstance(x, (dict, list)) for x in obj) and \
            not all(isinstance(x, list) and all(not isinstance(y, (dict, list)) for y in x) for x in obj):
        return "[\n" + ",\n".join(f"{pad} {_dump(x, indent + 1)}" for x in obj) + "\n" + pad + "]"
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        f.write(_dump(obj))
        f.write("\n")
    with open(path, encoding="utf-8") as f:
        assert json.load(f) == json.loads(json.dumps(obj)), f"{path}: JSON does not read back"
