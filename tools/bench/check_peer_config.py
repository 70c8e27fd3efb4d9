#!/usr/bin/env python3
"""Checks that every peer launch in the benchmark harness uses its production settings.

Reads the harness sources under ROOT (default: tools/bench; shell and Python), finds
every peer launch and checks it against DESIGN.md §10's rule that peers run as their
own docs recommend for serving:

  llama-server   -ngl 999 (or all): every layer on the GPU; -fa on: flash attention;
                 --parallel >= the workload's concurrency; -cb: continuous batching
                 (stated even where it is the default); -c >= parallel x (input + output):
                 each slot holds its request's prompt and output. Prompt caching stays
                 on (no --no-cache-prompt, --cache-ram 0 or --ctx-checkpoints 0: a hybrid
                 model reuses a prefix only through context checkpoints of its recurrent
                 state), and a launch that states --ctx-checkpoints also states
                 --checkpoint-min-step (its 8192-token default leaves multi-turn traffic of
                 short turns without checkpoints).
                 With --mmproj (image chats): --mmproj-offload stated (the projector on
                 the GPU; never --no-mmproj-offload, --no-mmproj or a CPU --mmproj-device),
                 and --image-max-tokens, when given, at least the 1024 tokens of a
                 1024x1024 image (a smaller budget downscales the image: less work, not
                 the same request).
  llama-bench, llama-batched-bench
                 -ngl 999 and -fa on.
  transformers_server.py
                 --dtype bfloat16; --attn-implementation sdpa or flash_attention_*;
                 --max-batch-size >= concurrency; --engine auto or continuous (if given).

A launch is a command whose program is llama-server / llama-bench / llama-batched-bench,
or python running transformers_server.py: in shell, a command line (with its backslash
continuations) or an array assignment `name=(...)`; in Python, a list or tuple literal.
`--version`/`--help` queries are not launches. Numeric values may be shell or Python
expressions over the workload's names (concurrency, max_concurrency, input_len,
output_len) and over the file's own assignments; they are evaluated for every workload
(the issue's, plus any `workloads=("IN:OUT:C1,C2" ...)` the harness defines). A value
that cannot be evaluated is a violation: the checker fails closed.

Prints `file:line: <what is missing>` per violation. Exit 0 clean, 1 on violations,
2 when it finds no launch at all (a broken detector must not look like a clean tree).
--json prints every launch found, its settings and its violations instead.
"""
import argparse
import ast
import json
import pathlib
import re
import shlex
import sys

# The workloads: (input_len, output_len, concurrency levels).
DEFAULT_WORKLOADS = [(512, 128, [1, 8, 32, 64]), (4096, 64, [1, 8, 32, 64])]
LLAMA_PROGRAMS = ("llama-server", "llama-bench", "llama-batched-bench")
TRANSFORMERS_SCRIPT = "transformers_server.py"
WRAPPERS = {"exec", "nohup", "env", "command", "stdbuf", "numactl", "taskset"}
INFO_FLAGS = {"--version", "--help", "-h", "--usage", "--list-devices"}

ALIASES = {
    "-ngl": "ngl", "--n-gpu-layers": "ngl", "--gpu-layers": "ngl",
    "-fa": "fa", "--flash-attn": "fa",
    "-np": "parallel", "--parallel": "parallel",
    "-cb": "cb", "--cont-batching": "cb",
    "-nocb": "nocb", "--no-cont-batching": "nocb",
    "-c": "ctx", "--ctx-size": "ctx",
    "--dtype": "dtype", "--attn-implementation": "attn", "--max-batch-size": "max_batch",
    "--engine": "engine",
    "-ctxcp": "ctx_checkpoints", "--ctx-checkpoints": "ctx_checkpoints",
    "--swa-checkpoints": "ctx_checkpoints",
    "-cms": "checkpoint_min_step", "--checkpoint-min-step": "checkpoint_min_step",
    "-cram": "cache_ram", "--cache-ram": "cache_ram",
    "--cache-prompt": "cache_prompt", "--no-cache-prompt": "no_cache_prompt",
    "-mm": "mmproj", "--mmproj": "mmproj", "--no-mmproj": "no_mmproj",
    "--mmproj-offload": "mmproj_offload", "--no-mmproj-offload": "no_mmproj_offload",
    "-mmdev": "mmproj_device", "--mmproj-device": "mmproj_device",
    "--image-max-tokens": "image_max_tokens", "--image-min-tokens": "image_min_tokens",
}
SWITCHES = ("cb", "nocb", "cache_prompt", "no_cache_prompt", "no_mmproj", "mmproj_offload",
            "no_mmproj_offload")
# Tokens of one 1024x1024 image at Qwen3.5's processor (patch 16, merge 2): issue 24's
# image chat.
IMAGE_TOKENS = 1024


class Launch:
    def __init__(self, path, line, peer, argv, names):
        self.path, self.line, self.peer, self.argv = path, line, peer, argv
        self.names = names  # file assignments visible at the launch: name -> expression text
        self.flags = parse_flags(argv[1:])
        self.violations = []


def parse_flags(args):
    flags = {}
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("-") and not re.fullmatch(r"-\d+", a):
            if "=" in a and a.startswith("--"):
                name, value = a.split("=", 1)
                flags[ALIASES.get(name, name)] = value
            else:
                nxt = args[i + 1] if i + 1 < len(args) else None
                takes_value = nxt is not None and (not nxt.startswith("-") or re.fullmatch(r"-\d+", nxt))
                if ALIASES.get(a) in SWITCHES:
                    takes_value = False  # boolean switches
                flags[ALIASES.get(a, a)] = nxt if takes_value else True
                i += 1 if takes_value else 0
        i += 1
    return flags


# ---- evaluating values -------------------------------------------------------------------------

class Unresolved(Exception):
    pass


def eval_expr(text, names, bound, depth=0):
    """Evaluates a shell word or arithmetic text ("$x", "$(( a * (b + 1) ))", "64")."""
    if depth > 20:
        raise Unresolved(text)
    t = text.strip().strip('"').strip("'")
    m = re.fullmatch(r"\$\(\((.*)\)\)", t, re.S)
    if m:
        t = m.group(1)
    t = re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda mm: mm.group(1) or mm.group(2), t)
    try:
        tree = ast.parse(t.strip(), mode="eval")
    except SyntaxError:
        raise Unresolved(text)

    def ev(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in bound:
                return bound[node.id]
            if node.id in names:
                return eval_expr(names[node.id], names, bound, depth + 1)
            raise Unresolved(node.id)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "args":
            return ev(ast.Name(id=node.attr))  # Python harness: args.concurrency and the like
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        if isinstance(node, ast.BinOp):
            a, b = ev(node.left), ev(node.right)
            ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
                   ast.FloorDiv: lambda: a // b, ast.Div: lambda: a // b}
            if type(node.op) in ops:
                return ops[type(node.op)]()
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("int", "str"):
            return ev(node.args[0])
        raise Unresolved(ast.dump(node))

    return ev(tree.body)


def bindings(workloads):
    for inp, out, levels in workloads:
        for c in levels:
            yield {"concurrency": c, "max_concurrency": max(levels), "input_len": inp, "output_len": out}


# ---- finding launches in shell -----------------------------------------------------------------

SHELL_ASSIGN = re.compile(r"(?:^|\s)(\w+)=(\$\(\(.*?\)\)|\"[^\"]*\"|'[^']*'|[^\s;()]+)")


def shell_logical_lines(text):
    """(first line number, text) per logical command: joins backslash continuations and
    multi-line array assignments `name=( ... )`."""
    out, buf, start, depth = [], "", 0, 0
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw
        if not buf:
            start = n
            if line.lstrip().startswith("#"):
                continue
        stripped = strip_shell_comment(line)
        if buf == "" and re.match(r"\s*\w+=\(", stripped):
            depth = stripped.count("(") - stripped.count(")")
        elif depth > 0:
            depth += stripped.count("(") - stripped.count(")")
        if stripped.rstrip().endswith("\\"):
            buf += stripped.rstrip()[:-1] + " "
            continue
        buf += stripped
        if depth > 0:
            buf += " "
            continue
        out.append((start, buf))
        buf = ""
    if buf:
        out.append((start, buf))
    return out


def strip_shell_comment(line):
    """Drops a trailing # comment outside quotes (a # inside a word, as in $#, stays)."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i]
    return line


def shell_words(text):
    try:
        return shlex.split(text, comments=False)
    except ValueError:
        return text.split()


def classify(words):
    """(peer, argv) when `words` launch a peer, else None."""
    while words and (words[0] in WRAPPERS or re.fullmatch(r"\w+=.*", words[0]) and not words[0].endswith("=(")):
        if re.fullmatch(r"\w+=\(.+", words[0]):
            break
        words = words[1:]
    if not words:
        return None
    m = re.fullmatch(r"\w+=\((.*)", words[0])
    if m:  # array assignment: name=(prog args...)
        words = ([m.group(1)] if m.group(1) else []) + words[1:]
        if words and words[-1].endswith(")"):
            words[-1] = words[-1][:-1]
            if not words[-1]:
                words.pop()
    if not words:
        return None
    prog = words[0].rsplit("/", 1)[-1]
    if prog in LLAMA_PROGRAMS:
        if set(words[1:]) and set(words[1:]) <= INFO_FLAGS:
            return None
        return prog, words
    if re.fullmatch(r"python3?(\.\d+)?|sys\.executable", prog) and len(words) > 1 \
            and words[1].endswith(TRANSFORMERS_SCRIPT):
        if set(words[2:]) and set(words[2:]) <= INFO_FLAGS:
            return None
        return "transformers", [words[1]] + words[2:]
    return None


SEPARATORS = {"|", "||", "&&", ";", "&", "|&"}
REDIRECT = re.compile(r"\d*(>>?|<)(&\d+)?.*|&>.*")


def shell_segments(words):
    """Splits a command's words at | || && ; & and drops redirections (2>&1, > log)."""
    segs, cur, skip = [], [], False
    for w in words:
        if skip:
            skip = False
            continue
        if w in SEPARATORS:
            segs.append(cur)
            cur = []
        elif REDIRECT.fullmatch(w):
            skip = w in (">", ">>", "<", "2>", "1>", "&>")  # the target is the next word
        else:
            cur.append(w)
    segs.append(cur)
    return [s for s in segs if s]


def shell_launches(path, text):
    names, launches = {}, []
    for line, cmd in shell_logical_lines(text):
        hits = [h for h in map(classify, shell_segments(shell_words(cmd))) if h]
        for hit in hits:
            launches.append(Launch(path, line, hit[0], hit[1], dict(names)))
        if hits:
            continue
        for m in SHELL_ASSIGN.finditer(cmd):
            names[m.group(1)] = m.group(2)
    return launches


# ---- finding launches in Python ----------------------------------------------------------------

def python_launches(path, text):
    try:
        tree = ast.parse(text)
    except SyntaxError as e:
        return [], [f"{path}:{e.lineno}: cannot parse: {e.msg}"]
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            names[node.targets[0].id] = ast.unparse(node.value)
    launches = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.List, ast.Tuple)) or not node.elts:
            continue
        words = []
        for e in node.elts:
            if isinstance(e, ast.Constant) and isinstance(e.value, (str, int)):
                words.append(str(e.value))
            elif isinstance(e, ast.JoinedStr):
                words.append("".join(v.value if isinstance(v, ast.Constant) else "$" + ast.unparse(v.value)
                                     for v in e.values))
            else:
                words.append(ast.unparse(e))
        hit = classify(words)
        if hit:
            launches.append(Launch(path, node.lineno, hit[0], hit[1], names))
    return launches, []


# ---- the checks --------------------------------------------------------------------------------

def value_for(launch, key, workloads):
    """[(binding, value or None)] of a numeric flag over every workload binding."""
    out = []
    for b in bindings(workloads):
        try:
            out.append((b, eval_expr(str(launch.flags[key]), launch.names, b)))
        except (Unresolved, ZeroDivisionError):
            out.append((b, None))
    return out


def describe(b):
    return f"input {b['input_len']}, output {b['output_len']}, concurrency {b['concurrency']}"


def check_numeric(launch, key, flag, workloads, need, what):
    """Adds one violation when `flag` is missing, unevaluable, or below need(binding, values)."""
    if key not in launch.flags or launch.flags[key] is True:
        launch.violations.append(f"{launch.peer} launch lacks {flag} ({what})")
        return
    for b, v in value_for(launch, key, workloads):
        if v is None:
            launch.violations.append(f"{launch.peer} launch: cannot evaluate {flag} '{launch.flags[key]}' "
                                     f"for {describe(b)} ({what})")
            return
        required = need(b)
        if required is None:
            continue
        if v < required:
            launch.violations.append(f"{launch.peer} launch: {flag} evaluates to {v} < {required} for "
                                     f"{describe(b)} ({what})")
            return


def check_llama(launch, workloads):
    f = launch.flags
    ngl = f.get("ngl")
    if ngl is None or ngl is True:
        launch.violations.append(f"{launch.peer} launch lacks -ngl 999 (every layer on the GPU)")
    elif not (str(ngl) == "all" or (str(ngl).isdigit() and int(ngl) >= 999)):
        launch.violations.append(f"{launch.peer} launch: -ngl {ngl} may leave layers on the CPU (use 999 or all)")
    fa = f.get("fa")
    if fa is None or fa is True:
        launch.violations.append(f"{launch.peer} launch lacks flash attention on (-fa on)")
    elif str(fa).lower() not in ("on", "1", "true", "enabled"):
        launch.violations.append(f"{launch.peer} launch: flash attention is '{fa}', not on (-fa on)")
    if launch.peer != "llama-server":
        return
    check_numeric(launch, "parallel", "--parallel", workloads, lambda b: b["concurrency"],
                  "one slot per concurrent request")
    if "cb" not in f:
        launch.violations.append("llama-server launch lacks -cb (continuous batching, stated explicitly)")
    if "nocb" in f:
        launch.violations.append("llama-server launch turns continuous batching off (-nocb)")
    if "parallel" in f and f["parallel"] is not True:
        par = {tuple(sorted(b.items())): v for b, v in value_for(launch, "parallel", workloads)}

        def need_ctx(b):
            p = par.get(tuple(sorted(b.items())))
            return None if p is None else p * (b["input_len"] + b["output_len"])
        check_numeric(launch, "ctx", "-c", workloads, need_ctx,
                      "a context of parallel x (input + output) so every slot fits its request")
    else:
        check_numeric(launch, "ctx", "-c", workloads, lambda b: None, "a context that fits the workload")
    check_prompt_cache(launch, workloads)
    if "mmproj" in f:
        check_mmproj(launch, workloads)


def check_mmproj(launch, workloads):
    f = launch.flags
    if f["mmproj"] is True:
        launch.violations.append("llama-server launch: --mmproj names no projector file")
    if "no_mmproj" in f:
        launch.violations.append("llama-server launch: --no-mmproj turns the projector off")
    if "no_mmproj_offload" in f:
        launch.violations.append("llama-server launch keeps the projector on the CPU (--no-mmproj-offload)")
    elif "mmproj_offload" not in f:
        launch.violations.append("llama-server --mmproj launch lacks --mmproj-offload (the projector on "
                                 "the GPU, stated explicitly)")
    dev = f.get("mmproj_device")
    if dev is not None and str(dev).lower() in ("none", "cpu", "true"):
        launch.violations.append(f"llama-server launch: --mmproj-device {dev} keeps the projector off the GPU")
    if "image_max_tokens" in f:
        for b, v in value_for(launch, "image_max_tokens", workloads):
            if v is None:
                launch.violations.append(f"llama-server launch: cannot evaluate --image-max-tokens "
                                         f"'{f['image_max_tokens']}'")
                break
            if v < IMAGE_TOKENS:
                launch.violations.append(f"llama-server launch: --image-max-tokens {v} < {IMAGE_TOKENS} "
                                         f"downscales a 1024x1024 image")
                break


def check_prompt_cache(launch, workloads):
    f = launch.flags
    if "no_cache_prompt" in f:
        launch.violations.append("llama-server launch turns prompt caching off (--no-cache-prompt)")
    for key, flag, what in (("cache_ram", "--cache-ram", "the host prompt cache"),
                            ("ctx_checkpoints", "--ctx-checkpoints", "recurrent-state checkpoints")):
        if key not in f:
            continue
        for b, v in value_for(launch, key, workloads):
            if v is None:
                launch.violations.append(f"llama-server launch: cannot evaluate {flag} '{f[key]}' ({what})")
                break
            if v == 0:
                launch.violations.append(f"llama-server launch: {flag} 0 turns {what} off")
                break
    if "ctx_checkpoints" in f and "checkpoint_min_step" not in f:
        launch.violations.append("llama-server launch states --ctx-checkpoints without --checkpoint-min-step "
                                 "(the 8192-token default spacing leaves short turns without checkpoints)")


def check_transformers(launch, workloads):
    f = launch.flags
    dtype = f.get("dtype")
    if dtype is None or dtype is True:
        launch.violations.append("transformers launch lacks --dtype bfloat16")
    elif dtype != "bfloat16":
        launch.violations.append(f"transformers launch: --dtype {dtype}, not bfloat16")
    attn = f.get("attn")
    if attn is None or attn is True:
        launch.violations.append("transformers launch lacks --attn-implementation (sdpa or flash_attention_*)")
    elif not re.search(r"sdpa|flash_attention_[23]", str(attn)):
        launch.violations.append(f"transformers launch: --attn-implementation {attn} is not the fastest "
                                 f"available (sdpa, or flash_attention_* where installed)")
    check_numeric(launch, "max_batch", "--max-batch-size", workloads, lambda b: b["concurrency"],
                  "a batch that holds every concurrent request")
    engine = f.get("engine")
    if engine is not None and engine not in ("auto", "continuous"):
        launch.violations.append(f"transformers launch: --engine {engine} skips continuous batching")


def harness_workloads(files):
    found = []
    for path, text in files:
        if path.suffix != ".sh":
            continue
        for m in re.finditer(r"^\s*workloads=\((.*?)\)", text, re.M | re.S):
            for w in re.findall(r"(\d+):(\d+):([\d,]+)", m.group(1)):
                found.append((int(w[0]), int(w[1]), [int(c) for c in w[2].split(",") if c]))
    return found


def main():
    here = pathlib.Path(__file__).resolve().parent
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", default=str(here), help="harness folder to scan (default: tools/bench)")
    p.add_argument("--json", action="store_true", help="list every launch found, with its settings")
    args = p.parse_args()
    root = pathlib.Path(args.root).resolve()
    me = pathlib.Path(__file__).resolve()
    files = [(f, f.read_text(errors="replace")) for f in sorted(root.rglob("*"))
             if f.is_file() and f.suffix in (".sh", ".py") and f.resolve() != me]
    workloads = DEFAULT_WORKLOADS + [w for w in harness_workloads(files) if w not in DEFAULT_WORKLOADS]
    launches, errors = [], []
    for path, text in files:
        if path.suffix == ".sh":
            launches += shell_launches(path, text)
        else:
            found, errs = python_launches(path, text)
            launches += found
            errors += errs
    for launch in launches:
        (check_transformers if launch.peer == "transformers" else check_llama)(launch, workloads)

    def rel(p):
        try:
            return str(p.relative_to(pathlib.Path.cwd()))
        except ValueError:
            return str(p)

    violations = [f"{rel(l.path)}:{l.line}: {v}" for l in launches for v in l.violations] + errors
    if args.json:
        print(json.dumps({
            "root": str(root), "files": len(files),
            "workloads": [{"input_len": i, "output_len": o, "concurrency": c} for i, o, c in workloads],
            "launches": [{"file": rel(l.path), "line": l.line, "peer": l.peer, "argv": l.argv,
                          "settings": {k: v for k, v in l.flags.items()}, "violations": l.violations}
                         for l in launches],
            "violations": violations}, indent=2))
    else:
        for v in violations:
            print(v)
    if not launches:
        print(f"check_peer_config: no peer launch found under {root} ({len(files)} files)", file=sys.stderr)
        return 2
    print(f"check_peer_config: {len(launches)} launches in {len(files)} files, {len(violations)} violations",
          file=sys.stderr)
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
