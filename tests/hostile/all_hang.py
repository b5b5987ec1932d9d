"""Every graded function hangs."""


def _forever(*args, **kwargs):
    while True:
        pass


causal_mask = masked_attention = split_heads = merge_heads = multi_head_attention = _forever
