"""A quantile from cumulative histogram buckets, the way Prometheus' ``histogram_quantile`` reads them.

Within the bucket holding the rank, the value is interpolated linearly between the bucket's
bounds (the first bucket starts at 0). A rank in the ``+Inf`` bucket answers the largest finite
bound: the histogram cannot say more.
"""

from __future__ import annotations

import math

Buckets = tuple[tuple[float, float], ...]  # (upper bound "le", cumulative count), ascending


def quantile(buckets: Buckets, q: float) -> float | None:
    """The ``q`` quantile (0-1) of the observations the buckets count; None when they count none."""
    if not buckets or buckets[-1][1] <= 0:
        return None
    rank = q * buckets[-1][1]
    lower_bound, lower_count = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank and count > lower_count:
            if math.isinf(bound):
                return lower_bound
            return lower_bound + (bound - lower_bound) * (rank - lower_count) / (count - lower_count)
        lower_bound, lower_count = (bound if not math.isinf(bound) else lower_bound), count
    return lower_bound
