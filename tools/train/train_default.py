#!/usr/bin/env python3
"""Trains the bundled default model (models/tiny-qwen3.5) on the Brown corpus.

  train_default.py DATA_DIR OUT_DIR [--budget-s 160] [--steps N] [--seed 0] [--device cuda]

DATA_DIR is what tools/train/prepare_brown.sh writes (train.txt, heldout.txt). The model
is transformers' own Qwen3_5ForCausalLM (GDN + gated attention, layers
[GDN, GDN, GDN, attention] x 2) with the tokenizer of models/tiny-qwen3.5 as it is
(tools/oracle/cut_tokenizer.py; vocabulary padded to 4128). Training: AdamW, bf16
autocast over f32 weights, warmup then cosine decay over a step count fixed after timing
the first steps so that the run fits --budget-s (or --steps), dropout on the residual
branches during training only (forward hooks; the saved model is plain Qwen3.5), the
checkpoint with the lowest validation loss (the last 2% of the training tokens) kept.
One paragraph in CHAT_EVERY is also trained on as a chat turn in the Qwen3 template
(first sentence from the user, the rest from the assistant), so `vtllm generate --chat`
gets prose back, ended by <|im_end|>.
Seeded: reruns give a similar model, not the same bytes (GPU kernels, timed step count).

Writes OUT_DIR/: config.json, model.safetensors (bf16, save_pretrained),
generation_config.json (the sampling defaults of today's models/tiny-qwen3.5),
perplexity.json (8 held-out passages of 128 tokens: ids, and the float32 CPU
transformers log-probability of every token after the first given the ones before, from
exactly the saved bf16 weights, the top-5 of each position, and their perplexity),
train_log.json (loss curve, held-out perplexity against the add-one unigram baseline
of the training counts), and reference.json / reference_bf16.json (the greedy oracle of
tools/oracle/make_fixtures.py for this model, with tokenizer.json and
tokenizer_config.json copied unchanged). Prints the same.
"""
import argparse
import copy
import json
import math
import os
import re
import sys
import time

import torch
import torch.nn.functional as F
import transformers

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
TOKENIZER = os.path.join(REPO, "models", "tiny-qwen3.5", "tokenizer.json")
sys.path.insert(0, os.path.join(REPO, "tools", "oracle"))
import fixture_specs as specs  # noqa: E402

VOCAB = specs.TOKENIZER_MODEL_VOCAB  # 4128: the tokenizer's 4122 ids, padded
ENDOFTEXT = specs.ENDOFTEXT

# The model: 8 layers [GDN, GDN, GDN, gated attention] x 2, hidden 256, tied embeddings;
# about 7.6 M parameters (15 MB in bf16).
CONFIG = dict(
    vocab_size=VOCAB, hidden_size=256, intermediate_size=704, num_hidden_layers=8,
    num_attention_heads=4, num_key_value_heads=2, head_dim=64, hidden_act="silu",
    max_position_embeddings=4096, rms_norm_eps=1e-6, tie_word_embeddings=True,
    attention_bias=False, attention_dropout=0.0, linear_conv_kernel_dim=4,
    linear_key_head_dim=64, linear_value_head_dim=64, linear_num_key_heads=2,
    linear_num_value_heads=4, initializer_range=0.02,
    rope_parameters=dict(specs.QWEN3_5_ROPE, rope_theta=1000000.0),
    bos_token_id=ENDOFTEXT, eos_token_id=specs.IM_END, pad_token_id=ENDOFTEXT,
)
GENERATION = dict(bos_token_id=ENDOFTEXT, eos_token_id=[specs.IM_END, ENDOFTEXT],
                  pad_token_id=ENDOFTEXT, do_sample=True, temperature=0.6, top_k=20, top_p=0.95)

SEQ_LEN = 512
BATCH = 64
LR = 2e-3
MIN_LR = 1e-4
WARMUP = 60
WEIGHT_DECAY = 0.1
DROPOUT = 0.15
MAX_EPOCHS = 30  # the step count never exceeds this many passes over the training tokens
CLIP = 1.0
EVAL_EVERY = 100
TIMING_STEPS = 12  # steps timed to fix the step count
PASSAGES, PASSAGE_LEN, TOP_N = 8, 128, 5
CHAT_EVERY = 10  # one paragraph in CHAT_EVERY also becomes a chat turn (about 12% more text)
MAX_WEIGHT_BYTES = 16 * 1024 * 1024


def log(msg):
    print(f"train_default: {msg}", flush=True)


def hf_class(name):
    cls = getattr(transformers, name, None)
    if cls is None:
        import importlib

        cls = getattr(importlib.import_module("transformers.models.qwen3_5"), name, None)
    if cls is None:
        sys.exit(f"train_default: transformers {transformers.__version__} has no class {name}")
    return cls


def read_docs(path):
    """The files of a prepare_brown.sh text, one string each (they are separated by a
    blank line; paragraphs are single lines)."""
    with open(path, encoding="utf-8") as f:
        return [d.strip("\n") for d in f.read().split("\n\n") if d.strip()]


SENTENCE_END = re.compile(r'(?<=[.?!])["\']?\s+(?=["\']?[A-Z])')


def chat_samples(doc):
    """Chat turns cut from a document, as the Qwen3 chat template renders them: from
    every CHAT_EVERY-th paragraph of two sentences or more, the first sentence as the
    user's message and the rest as the assistant's reply, so that `--chat` prompts are
    answered with prose that ends with <|im_end|>."""
    out = []
    for i, para in enumerate(doc.split("\n")):
        if i % CHAT_EVERY:
            continue
        m = SENTENCE_END.search(para)
        if not m or m.end() >= len(para):
            continue
        user, reply = para[:m.start()].rstrip() + para[m.start():m.end()].strip(), para[m.end():]
        out.append(f"<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n{reply}"
                   "<|im_end|>\n")
    return out


def with_chats(docs):
    """Each document followed by its chat samples (one string each)."""
    out = []
    for d in docs:
        out.append(d)
        out.extend(chat_samples(d))
    return out


def encode_docs(tok, docs):
    """Token ids of each document (paragraphs joined by their newline)."""
    # The chat markers (<|im_start|>, <|im_end|>) are added tokens: matched in the text.
    return [e.ids for e in tok.encode_batch(docs, add_special_tokens=False)]


def stream(docs_ids):
    """All documents in one stream, each followed by <|endoftext|>."""
    out = []
    for ids in docs_ids:
        out.extend(ids)
        out.append(ENDOFTEXT)
    return torch.tensor(out, dtype=torch.long)


def add_dropout_hooks(model, p):
    """Dropout on the output of every attention, GDN and MLP block, and on the token
    embeddings, active in train() mode only. The hooks are removed before saving."""
    handles = []

    def hook(module, args, output):
        if not module.training:
            return output
        if isinstance(output, tuple):
            return (F.dropout(output[0], p, True),) + tuple(output[1:])
        return F.dropout(output, p, True)

    for name, module in model.named_modules():
        leaf = name.rsplit(".", 1)[-1]
        if leaf in ("self_attn", "linear_attn", "mlp", "embed_tokens"):
            handles.append(module.register_forward_hook(hook))
    return handles


def lr_at(step, total):
    if step < WARMUP:
        return LR * (step + 1) / WARMUP
    t = min(1.0, (step - WARMUP) / max(1, total - WARMUP))
    return MIN_LR + 0.5 * (LR - MIN_LR) * (1 + math.cos(math.pi * t))


def batch_at(data, gen, device):
    starts = torch.randint(0, data.numel() - SEQ_LEN - 1, (BATCH,), generator=gen)
    x = torch.stack([data[s:s + SEQ_LEN + 1] for s in starts.tolist()])
    return x.to(device, non_blocking=True)


def loss_of(model, x, device):
    with torch.autocast(device_type=device.type, dtype=torch.bfloat16,
                        enabled=device.type == "cuda"):
        logits = model(input_ids=x[:, :-1], use_cache=False).logits
    return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), x[:, 1:].reshape(-1))


@torch.no_grad()
def eval_nll(model, data, device, windows=None):
    """Mean next-token NLL over non-overlapping SEQ_LEN windows of `data` (every token
    of a window after its first is predicted from the window's earlier tokens)."""
    model.eval()
    n = (data.numel() - 1) // SEQ_LEN
    if windows is not None:
        n = min(n, windows)
    x = data[:n * SEQ_LEN + 1]
    total, count = 0.0, 0
    for i in range(0, n, BATCH):
        rows = [x[j * SEQ_LEN:(j + 1) * SEQ_LEN + 1] for j in range(i, min(n, i + BATCH))]
        xb = torch.stack(rows).to(device)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16,
                            enabled=device.type == "cuda"):
            logits = model(input_ids=xb[:, :-1], use_cache=False).logits
        nll = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]),
                              xb[:, 1:].reshape(-1), reduction="sum")
        total += float(nll)
        count += xb[:, 1:].numel()
    model.train()
    return total / count


def unigram_nll(train, heldout):
    """Add-one unigram over the model vocabulary from the training counts, scored on the
    tokens eval_nll scores (every held-out window position after the first)."""
    counts = torch.bincount(train, minlength=VOCAB).double() + 1.0
    logp = (counts / counts.sum()).log()
    n = (heldout.numel() - 1) // SEQ_LEN
    x = heldout[:n * SEQ_LEN + 1]
    targets = torch.cat([x[j * SEQ_LEN + 1:(j + 1) * SEQ_LEN + 1] for j in range(n)])
    return float(-logp[targets].mean())


def patch_config_json(path):
    with open(path) as f:
        cfg = json.load(f)
    for k, v in specs.QWEN3_5_EXTRA_TEXT_KEYS.items():
        cfg.setdefault(k, v)
    cfg["dtype"] = "bfloat16"
    cfg.pop("torch_dtype", None)
    with open(path, "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")


def save(model, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    to_save = copy.deepcopy(model).to("cpu", torch.bfloat16)
    to_save.generation_config = transformers.GenerationConfig(**GENERATION)
    to_save.save_pretrained(out_dir)
    patch_config_json(os.path.join(out_dir, "config.json"))
    size = os.path.getsize(os.path.join(out_dir, "model.safetensors"))
    assert size <= MAX_WEIGHT_BYTES, f"model.safetensors is {size} bytes, over 16 MiB"
    return size


@torch.no_grad()
def perplexity_json(out_dir, heldout_docs, tok):
    """The float32 CPU oracle over the saved bf16 weights: passage p is the first
    PASSAGE_LEN tokens of held-out document p * (docs / PASSAGES)."""
    torch.set_num_threads(max(1, min(8, os.cpu_count() or 1)))
    model = hf_class("Qwen3_5ForCausalLM").from_pretrained(out_dir, dtype=torch.float32).eval()
    step = max(1, len(heldout_docs) // PASSAGES)
    passages, total, count = [], 0.0, 0
    for p in range(PASSAGES):
        ids = heldout_docs[p * step][:PASSAGE_LEN]
        assert len(ids) == PASSAGE_LEN, f"held-out document {p * step} is too short"
        logits = model(input_ids=torch.tensor([ids]), use_cache=False).logits[0].float()
        logp = torch.log_softmax(logits.double(), dim=-1)  # [T, vocab], float64 of f32
        lps, tops = [None], [None]
        for t in range(1, PASSAGE_LEN):
            row = logp[t - 1]
            lps.append(float(row[ids[t]]))
            v, i = torch.topk(row, TOP_N)
            tops.append([[int(a), float(b)] for a, b in zip(i.tolist(), v.tolist())])
        total -= sum(lps[1:])
        count += PASSAGE_LEN - 1
        passages.append(dict(doc=p * step, ids=ids, text=tok.decode(ids, skip_special_tokens=False),
                             prompt_logprobs=lps, top_logprobs=tops,
                             perplexity=math.exp(-sum(lps[1:]) / (PASSAGE_LEN - 1))))
    ppl = math.exp(total / count)
    out = dict(
        description=("Prompt log-probabilities of held-out Brown passages under this model: "
                     "transformers Qwen3_5ForCausalLM, float32 on the CPU in eval mode over the "
                     "bf16 weights of model.safetensors, one no-cache forward per passage, "
                     "log_softmax in float64 of the float32 logits. prompt_logprobs[t] is "
                     "log p(ids[t] | ids[:t]) (null for t = 0, as vLLM); top_logprobs[t] the "
                     f"top {TOP_N} [id, logprob] of that distribution. perplexity = exp(-mean) "
                     "over every non-null entry of every passage."),
        transformers_version=transformers.__version__, torch_version=torch.__version__,
        passage_len=PASSAGE_LEN, top_n=TOP_N, perplexity=ppl, passages=passages)
    # The header indented, each passage on one compact line (about 150 kB in all).
    head = json.dumps({k: v for k, v in out.items() if k != "passages"}, indent=1)
    text = (head[:-2] + ',\n "passages": [\n' +
            ",\n".join(json.dumps(p, separators=(",", ":")) for p in passages) + "\n ]\n}\n")
    assert json.loads(text) == json.loads(json.dumps(out)), "perplexity.json does not read back"
    with open(os.path.join(out_dir, "perplexity.json"), "w", encoding="utf-8") as f:
        f.write(text)
    return ppl


def write_references(out_dir, seed):
    """reference.json (and, on CUDA, reference_bf16.json) for the trained model, as
    tools/oracle/make_fixtures.py writes them for models/tiny-qwen3.5: the float32 CPU
    greedy continuations of the tokenizer fixture's prompts, which tests/models and
    tests/apps check vtllm against. Returns the smallest top-2 logit margin (a trained
    model may have near-ties, which those token-exact tests cannot take)."""
    import shutil

    import make_fixtures as mf
    import oracle_run

    spec = next(s for s in specs.FIXTURES if s["name"] == "tiny-qwen3.5")
    src = os.path.join(REPO, "models", "tiny-qwen3.5")
    for fn in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(os.path.join(src, fn), os.path.join(out_dir, fn))
    oracle_run.set_deterministic()
    model = hf_class(spec["arch"]).from_pretrained(out_dir, dtype=torch.float32).eval()
    prompts, tok, renderer = mf.text_prompts(out_dir)
    results = [oracle_run.greedy(model, p["ids"], mf.STEPS) for p in prompts]
    margin = min(min(r["margins"]) for r in results)
    checks = oracle_run.cross_checks(model, prompts, results)
    ref = oracle_run.reference_json(spec, model, prompts, results, seed, [(seed, margin)], checks,
                                    mf.STEPS, dtype="float32", device="cpu")
    ref["generator"] = "tools/train/train_default.py"
    ref["safetensors"] = mf.safetensors_layout(os.path.join(out_dir, "model.safetensors"), spec)
    ref["template_renderer"] = renderer["renderer"]
    ref["template_mismatches"] = renderer["mismatches"]
    for p, r in zip(ref["prompts"], results):
        p["continuation_text"] = tok.decode(r["tokens"], skip_special_tokens=False)
    oracle_run.write_json(os.path.join(out_dir, "reference.json"), ref)
    for p in ref["prompts"]:
        log(f"  {p['name']}: {p['continuation_text'][:100]!r}")
    if torch.cuda.is_available():
        bref = oracle_run.bf16_reference(hf_class(spec["arch"]), spec, out_dir, prompts, results,
                                         mf.STEPS)
        oracle_run.write_json(os.path.join(out_dir, "reference_bf16.json"), bref)
    return margin


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--budget-s", type=float, default=160.0,
                    help="wall seconds for the training steps (the step count is fixed from "
                         "the first steps' timing)")
    ap.add_argument("--steps", type=int, default=0, help="a fixed step count instead")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = ap.parse_args()
    t0 = time.time()
    torch.manual_seed(args.seed)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    device = torch.device(args.device)

    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(TOKENIZER)
    train_docs = encode_docs(tok, with_chats(read_docs(os.path.join(args.data_dir, "train.txt"))))
    heldout_docs = encode_docs(tok, read_docs(os.path.join(args.data_dir, "heldout.txt")))
    train_all = stream(train_docs)
    cut = int(train_all.numel() * 0.98)
    train, valid = train_all[:cut], train_all[cut:]
    heldout = stream(heldout_docs)
    assert int(train_all.max()) < VOCAB
    log(f"tokens: train {train.numel()}, valid {valid.numel()}, held-out {heldout.numel()} "
        f"({len(train_docs)} + {len(heldout_docs)} documents; {time.time() - t0:.1f} s)")
    uni = unigram_nll(train, heldout)
    log(f"unigram baseline (add-one, train counts): held-out ppl {math.exp(uni):.2f}")

    config = hf_class("Qwen3_5TextConfig")(**CONFIG)
    model = hf_class("Qwen3_5ForCausalLM")(config).to(device, torch.float32)
    expected = ["full_attention" if (i + 1) % 4 == 0 else "linear_attention"
                for i in range(config.num_hidden_layers)]
    assert list(config.layer_types) == expected, f"layer_types {config.layer_types}"
    assert model.lm_head.weight.data_ptr() == model.get_input_embeddings().weight.data_ptr()
    n_params = sum(p.numel() for p in model.parameters())
    log(f"model: {n_params} parameters ({2 * n_params / 2**20:.1f} MiB in bf16), "
        f"layers {config.layer_types}")
    hooks = add_dropout_hooks(model, DROPOUT)
    decay = [p for n, p in model.named_parameters() if p.dim() == 2]
    other = [p for n, p in model.named_parameters() if p.dim() != 2]
    opt = torch.optim.AdamW([dict(params=decay, weight_decay=WEIGHT_DECAY),
                             dict(params=other, weight_decay=0.0)],
                            lr=LR, betas=(0.9, 0.95), eps=1e-8,
                            fused=device.type == "cuda")
    gen = torch.Generator().manual_seed(args.seed + 1)
    model.train()
    total = args.steps if args.steps > 0 else None
    curve, best, best_state, best_step = [], float("inf"), None, -1
    t_train = time.time()
    t_mark = None
    step = 0
    while total is None or step < total:
        lr = lr_at(step, total or 10**9)
        for g in opt.param_groups:
            g["lr"] = lr
        x = batch_at(train, gen, device)
        loss = loss_of(model, x, device)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        opt.step()
        step += 1
        if total is None and step == 2:
            if device.type == "cuda":
                torch.cuda.synchronize()
            t_mark = time.time()
        if total is None and step == TIMING_STEPS:
            if device.type == "cuda":
                torch.cuda.synchronize()
            per_step = (time.time() - t_mark) / (TIMING_STEPS - 2)
            left = args.budget_s - (time.time() - t_train)
            # Evaluations take about 3% of the steps' time.
            total = max(TIMING_STEPS + 1, TIMING_STEPS + int(left / per_step * 0.95))
            total = min(total, int(MAX_EPOCHS * train.numel() / (BATCH * SEQ_LEN)))
            log(f"{per_step * 1000:.0f} ms a step: {total} steps "
                f"({total * BATCH * SEQ_LEN / train.numel():.1f} epochs)")
        if step % 10 == 0 or step == total:
            curve.append(dict(step=step, lr=lr, loss=float(loss)))
        if step % EVAL_EVERY == 0 or step == total:
            v = eval_nll(model, valid, device)
            curve[-1]["valid_loss"] = v
            mark = ""
            if v < best:
                best, best_step = v, step
                best_state = {k: t.detach().clone() for k, t in model.state_dict().items()}
                mark = " *"
            log(f"step {step}/{total}: loss {float(loss):.4f} valid {v:.4f} "
                f"(ppl {math.exp(v):.2f}) lr {lr:.2e} [{time.time() - t0:.0f} s]{mark}")
    for h in hooks:
        h.remove()
    model.load_state_dict(best_state)
    model.eval()
    held = eval_nll(model, heldout, device)
    log(f"best valid at step {best_step}; held-out ppl {math.exp(held):.2f} "
        f"(unigram {math.exp(uni):.2f}) [{time.time() - t0:.0f} s]")
    size = save(model, args.out_dir)
    ppl = perplexity_json(args.out_dir, heldout_docs, tok)
    try:
        margin = write_references(args.out_dir, args.seed)
        log(f"reference.json written: min top-2 margin {margin:.4g} over the greedy prompts")
    except Exception as e:  # the model is saved already; report and go on
        margin = None
        log(f"reference.json NOT written: {type(e).__name__}: {e}")
    summary = dict(params=n_params, reference_min_margin=margin, weight_bytes=size, steps=total, best_step=best_step,
                   batch=BATCH, seq_len=SEQ_LEN, train_tokens=int(train.numel()),
                   heldout_tokens=int(heldout.numel()), heldout_ppl=math.exp(held),
                   heldout_ppl_unigram=math.exp(uni), passages_ppl_cpu_f32=ppl,
                   wall_s=time.time() - t0, curve=curve, config=CONFIG,
                   torch_version=torch.__version__, transformers_version=transformers.__version__)
    with open(os.path.join(args.out_dir, "train_log.json"), "w") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")
    log(f"wrote {args.out_dir}: model.safetensors {size} bytes (bf16); perplexity.json: "
        f"{PASSAGES} passages x {PASSAGE_LEN} tokens, ppl {ppl:.3f} (CPU f32); "
        f"held-out ppl {math.exp(held):.2f} vs unigram {math.exp(uni):.2f}; "
        f"{time.time() - t0:.0f} s in all")


if __name__ == "__main__":
    main()
