"""The texts of docs/models.md's layer-by-layer Gemma table: 200 WikiText-2 test sentences of 8 to 30 words.

Usage (``DATA_DIR`` holds ``wikitext-2/``)::

    python docs/runs/measure-model/gemma-wikitext/make_texts.py DATA_DIR wikitext_test_200.txt

Each paragraph of the test split (headings dropped) is cut into sentences after every " . "; of the
sentences of 8 to 30 words, 200 are drawn without replacement with seed 0 and written in corpus order,
one a line. The text is WikiText-2's (CC BY-SA 3.0), so it is made here, not committed.
"""

from __future__ import annotations

import sys

import numpy as np

from isotropy.datasets import load_wikitext2


def main(data_dir: str, out: str, *, n: int = 200, seed: int = 0) -> None:
    sentences = []
    for words in load_wikitext2("test", data_dir=data_dir).lines:
        sentence = []
        for word in words:
            sentence.append(word)
            if word == ".":
                sentences.append(sentence)
                sentence = []
        sentences.append(sentence)
    kept = [" ".join(s) for s in sentences if 8 <= len(s) <= 30]
    chosen = np.sort(np.random.default_rng(seed).choice(len(kept), size=n, replace=False))
    with open(out, "w", encoding="utf-8") as handle:
        handle.writelines(kept[i] + "\n" for i in chosen)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
