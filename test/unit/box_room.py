"""Analytic geometry of a rectangular room, shared by the laser and scan-agreement tests."""
import math


def distance_to_walls(x, y, heading, lo_x, hi_x, lo_y, hi_y):
    """Distance from (x, y) inside the box [lo_x, hi_x] x [lo_y, hi_y] to its wall along
    ``heading`` (rad)."""
    c, s = math.cos(heading), math.sin(heading)
    candidates = []
    if c > 1e-12:
        candidates.append((hi_x - x) / c)
    if c < -1e-12:
        candidates.append((lo_x - x) / c)
    if s > 1e-12:
        candidates.append((hi_y - y) / s)
    if s < -1e-12:
        candidates.append((lo_y - y) / s)
    return min(candidates)
