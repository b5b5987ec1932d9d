"""Plain words that every layer's messages share."""


def listed(names: list[str]) -> str:
    """['a', 'b', 'c'] -> 'a, b and c'"""
    return " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
