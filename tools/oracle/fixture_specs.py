"""The tiny fixture models: their configs, where they go, and their prompts.

Each spec keeps the real structure of its family at a size where the whole
fixture (bf16 weights, config, reference) stays under 2 MB. The transformers
config classes are built in make_fixtures.py from the dicts here, so this file
imports nothing heavy.
"""

# Lengths of the random-id prompts: 1-token prefill, short, the 64-token chunk
# boundary of the oracle's chunked GDN (64 and 65), several chunks, and 300.
PROMPT_LENGTHS = [1, 2, 5, 17, 64, 65, 130, 300]

QWEN3_5_ROPE = dict(rope_type="default", partial_rotary_factor=0.25, mrope_section=[3, 3, 2],
                    mrope_interleaved=True)

# Keys that real Qwen3.5 config.json files carry but transformers does not read
# (qwen3_5.md §2.2); added to the written config.json so the C++ config parser
# sees the real layout.
QWEN3_5_EXTRA_TEXT_KEYS = dict(attn_output_gate=True, full_attention_interval=4,
                               mamba_ssm_dtype="float32")


def qwen3_5_text(vocab, theta, hk, hv, tie, extra=None):
    """A Qwen3.5 text config: 8 layers [LA, LA, LA, FA] x 2, gated full attention with
    head dim 64 (rotary 16 = 0.25 x 64), GDN heads of dim 32 with value/key ratio hv/hk."""
    cfg = dict(
        vocab_size=vocab, hidden_size=64, intermediate_size=96, num_hidden_layers=8,
        num_attention_heads=4, num_key_value_heads=2, head_dim=64, hidden_act="silu",
        max_position_embeddings=4096, rms_norm_eps=1e-6, tie_word_embeddings=tie,
        attention_bias=False, linear_conv_kernel_dim=4, linear_key_head_dim=32,
        linear_value_head_dim=32, linear_num_key_heads=hk, linear_num_value_heads=hv,
        rope_parameters=dict(QWEN3_5_ROPE, rope_theta=theta),
    )
    cfg.update(extra or {})
    return cfg


def qwen3_5_moe_text(vocab, theta, hk, hv, layers, experts, top_k, inter, shared, tie=False,
                     extra=None):
    """A Qwen3.5-MoE text config: qwen3_5_text's GDN and gated attention with `layers`
    layers ([LA, LA, LA, FA] repeated) and the sparse block in every layer: `experts`
    routed experts of width `inter`, `top_k` per token, a shared expert of width `shared`.
    No dense intermediate_size (the real MoE configs have none)."""
    cfg = qwen3_5_text(vocab, theta, hk, hv, tie=tie,
                       extra=dict(num_hidden_layers=layers, num_experts=experts,
                                  num_experts_per_tok=top_k, moe_intermediate_size=inter,
                                  shared_expert_intermediate_size=shared))
    del cfg["intermediate_size"]
    cfg.update(extra or {})
    return cfg


TINY_VISION = dict(depth=1, hidden_size=32, hidden_act="gelu_pytorch_tanh", intermediate_size=64,
                   num_heads=2, in_channels=3, patch_size=16, spatial_merge_size=2,
                   temporal_patch_size=2, out_hidden_size=64, num_position_embeddings=16)

# The bundled default's tokenizer: 4096 BPE ids + 26 added tokens (cut_tokenizer.py);
# the model's vocabulary is padded to 4128 as real Qwen vocabularies are padded.
TOKENIZER_VOCAB = 4122
TOKENIZER_MODEL_VOCAB = 4128
ENDOFTEXT, IM_START, IM_END = 4096, 4097, 4098

FIXTURES = [
    dict(
        name="qwen3-tiny",
        dest="tests/fixtures/qwen3-tiny",
        arch="Qwen3ForCausalLM",
        family="qwen3",
        # Dense Qwen3 with q/k-norm, GQA 2, heads*head_dim (256) != hidden (64) as in
        # Qwen3-0.6B, full rotary over head dim 64, tied embeddings.
        config=dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
                    num_attention_heads=4, num_key_value_heads=2, head_dim=64, hidden_act="silu",
                    max_position_embeddings=4096, rms_norm_eps=1e-6, tie_word_embeddings=True,
                    attention_bias=False,
                    rope_parameters=dict(rope_type="default", rope_theta=1000000.0)),
        seed=1000,
    ),
    dict(
        name="qwen3_5-tiny-r2",
        dest="tests/fixtures/qwen3_5-tiny-r2",
        arch="Qwen3_5ForCausalLM",
        family="qwen3_5",
        config=qwen3_5_text(vocab=512, theta=10000.0, hk=2, hv=4, tie=False),
        seed=2000,
    ),
    dict(
        name="qwen3_5-tiny-r3-vl",
        dest="tests/fixtures/qwen3_5-tiny-r3-vl",
        arch="Qwen3_5ForConditionalGeneration",
        family="qwen3_5",
        # Saved as the multimodal class (text weights under model.language_model.*, a
        # one-block vision tower under model.visual.*); rope theta 1e7 as the real models.
        config=qwen3_5_text(vocab=512, theta=10000000.0, hk=2, hv=6, tie=False),
        vision=TINY_VISION,
        top=dict(image_token_id=508, video_token_id=509, vision_start_token_id=506,
                 vision_end_token_id=507, tie_word_embeddings=False),
        seed=3000,
    ),
    dict(
        name="qwen3_5-tiny-hd48",
        dest="tests/fixtures/qwen3_5-tiny-hd48",
        arch="Qwen3_5ForCausalLM",
        family="qwen3_5",
        # Optional fields left out as configs in the wild do: head_dim 48 (rotary 12) with
        # no mrope_section, so transformers' default [11, 11, 10] applies clipped to 6
        # frequencies; no layer_types (full_attention_interval's default pattern).
        config=qwen3_5_text(vocab=512, theta=10000.0, hk=2, hv=4, tie=False,
                            extra=dict(head_dim=48,
                                       rope_parameters=dict(rope_type="default",
                                                            partial_rotary_factor=0.25,
                                                            rope_theta=10000.0))),
        drop_keys=["layer_types", "mrope_section", "mrope_interleaved"],
        seed=5000,
    ),
    dict(
        name="qwen3_5_moe-tiny",
        dest="tests/fixtures/qwen3_5_moe-tiny",
        arch="Qwen3_5MoeForCausalLM",
        family="qwen3_5",
        # Sparse MoE in all 8 layers: 16 experts of width 16, top-4, shared expert 32.
        # Stored with the fused experts (mlp.experts.gate_up_proj [E, 2I, H], down_proj).
        config=qwen3_5_moe_text(vocab=512, theta=10000.0, hk=2, hv=4, layers=8, experts=16,
                                top_k=4, inter=16, shared=32),
        seed=6000,
    ),
    dict(
        name="qwen3_5_moe-tiny-vl",
        dest="tests/fixtures/qwen3_5_moe-tiny-vl",
        arch="Qwen3_5MoeForConditionalGeneration",
        family="qwen3_5",
        # The multimodal MoE class (text under model.language_model.*, a one-block vision
        # tower): 4 layers [LA, LA, LA, FA], 32 experts of width 16, top-8, shared 16,
        # theta 1e7 as the real models.
        config=qwen3_5_moe_text(vocab=512, theta=10000000.0, hk=2, hv=4, layers=4,
                                experts=32, top_k=8, inter=16, shared=16),
        vision=TINY_VISION,
        top=dict(image_token_id=508, video_token_id=509, vision_start_token_id=506,
                 vision_end_token_id=507, tie_word_embeddings=False),
        seed=7000,
    ),
    dict(
        name="tiny-qwen3.5",
        dest="models/tiny-qwen3.5",
        arch="Qwen3_5ForCausalLM",
        family="qwen3_5",
        # The bundled default: the cut real Qwen3 tokenizer and chat template.
        config=qwen3_5_text(vocab=TOKENIZER_MODEL_VOCAB, theta=1000000.0, hk=2, hv=4, tie=True,
                            extra=dict(bos_token_id=ENDOFTEXT, eos_token_id=IM_END,
                                       pad_token_id=ENDOFTEXT)),
        tokenizer=True,
        generation=dict(bos_token_id=ENDOFTEXT, eos_token_id=[IM_END, ENDOFTEXT],
                        pad_token_id=ENDOFTEXT, do_sample=True, temperature=0.6, top_k=20,
                        top_p=0.95),
        seed=4000,
    ),
]

LONG_TEXT = (
    "A paged KV cache stores the keys and values of every attention layer in fixed-size "
    "blocks, so that memory is handed out as requests grow instead of being reserved for "
    "the longest possible sequence. The scheduler decides how many tokens each request may "
    "process in the next step, running requests first and waiting ones after them, and it "
    "preempts the newest request when no free block is left. Hybrid models such as Qwen3.5 "
    "add a second kind of state: every Gated DeltaNet layer keeps a small convolution window "
    "and a recurrent matrix per sequence, which do not grow with the sequence but cannot be "
    "rolled back either. Prefix caching therefore has to keep snapshots of that state at "
    "block boundaries, or it never hits. In 2024 and 2025 this was the most repeated "
    "complaint about serving engines; the numbers 1, 2, 3, 64, 128 and 4096 appear in many "
    "of those reports. The engine described here keeps the recurrent state in float32, "
    "rounds nothing it does not have to, and checks every greedy token against the oracle "
    "before it claims any speed at all. Every benchmark names its model shape, its batch "
    "size, its input and output lengths, and the exact command of the peer it is compared "
    "with, and every number is a ratio measured in one run on one machine."
)

# Prompts of the tokenizer fixture: (name, kind, payload, template kwargs).
TEXT_PROMPTS = [
    ("one_byte", "text", "a", None),
    ("chat_capital", "chat", [{"role": "user", "content": "What is the capital of France?"}],
     dict(enable_thinking=False)),
    ("chat_system", "chat", [{"role": "system", "content": "You are a helpful assistant."},
                             {"role": "user", "content": "Write a haiku about caches."}], {}),
    ("chat_multi_turn", "chat", [
        {"role": "user", "content": "Hi!"},
        {"role": "assistant", "content": "<think>\nGreet back.\n</think>\n\nHello! How can I help?"},
        {"role": "user", "content": "Count to five, please."}], {}),
    ("plain_english", "text", "The quick brown fox jumps over the lazy dog.", None),
    ("code", "text", "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n", None),
    ("mixed_scripts", "text", "你好，世界！今天天气很好。Grüße aus Köln 🙂", None),
    ("long_paragraph", "long", LONG_TEXT, None),
]
