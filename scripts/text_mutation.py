"""Random edits of a string, for the fixture generators that label mutated examples
(gen_json_schema_fixtures.py, gen_regex_fixtures.py, gen_pythonic_fixtures.py,
gen_qwen3_coder_fixtures.py, gen_granite_fixtures.py)."""


def mutate(rng, text, alphabet):
    """`text` with one character dropped, replaced or inserted (from `alphabet`), at random."""
    i = rng.randint(0, len(text))
    change = rng.randrange(3)
    if change == 0 and text:
        i = min(i, len(text) - 1)
        return text[:i] + text[i + 1:]
    if change == 1 and text:
        i = min(i, len(text) - 1)
        return text[:i] + rng.choice(alphabet) + text[i + 1:]
    return text[:i] + rng.choice(alphabet) + text[i:]


def with_mutations(rng, texts, alphabet, per_text=12):
    """`texts` then `per_text` mutations of each, without repeats, in a stable order."""
    out = []
    seen = set()
    for text in list(texts) + [mutate(rng, t, alphabet) for t in texts for _ in range(per_text)]:
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out
