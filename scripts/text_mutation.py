"""Random edits of a string, for the fixture generators that label mutated examples
(gen_json_schema_fixtures.py, gen_regex_fixtures.py)."""


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
