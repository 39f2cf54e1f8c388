"""Unit tests of core.search_hint: which way the particle cloud says a mapped tag is."""
import math

import numpy as np
import pytest

from lost_and_found.core.scan_agreement import DistanceMap
from lost_and_found.core.search_hint import MIN_VOTERS, TagViewField
from test_tag_check import RES, wall_tag


def corridor(tags=None, inner_wall=False):
    """A 20 m x 4 m corridor (one-cell walls) with tag 1 on its east end at (19.9, 2) facing
    west; with ``inner_wall`` a wall across x = 15 m from y = 0 to 3 m (a way round at its
    north end)."""
    occupied = np.zeros((int(4 / RES), int(20 / RES)), dtype=bool)
    occupied[0, :] = occupied[-1, :] = occupied[:, 0] = occupied[:, -1] = True
    if inner_wall:
        occupied[:int(3.0 / RES), int(15.0 / RES)] = True
    tags = {1: wall_tag(19.9, 2.0, math.pi)} if tags is None else tags
    return TagViewField(DistanceMap(occupied, RES), tags, min_distance=0.3, max_distance=3.0,
                        view_angle=1.05, clearance=0.25, lookahead=1.5)


def cloud(x, y, yaw, n=50, spread=0.2, seed=0):
    """``n`` hypotheses around ``(x, y, yaw)``."""
    rng = np.random.default_rng(seed)
    return np.column_stack([x + rng.uniform(-spread, spread, n),
                            y + rng.uniform(-spread, spread, n),
                            np.full(n, float(yaw))])


def test_the_cells_in_front_of_the_tag_see_it():
    field = corridor()
    assert len(field) > 0
    rows, cols, _ = field.distance_map.cells([18.0, 10.0, 16.5], [2.0, 2.0, 2.0])
    assert field.sees[rows[0], cols[0]]
    assert not field.sees[rows[1], cols[1]]     # 9.9 m away
    assert not field.sees[rows[2], cols[2]]     # 3.4 m: beyond max_distance


def test_a_wall_hides_the_tag():
    field = corridor(inner_wall=True)
    rows, cols, _ = field.distance_map.cells([17.5, 14.5], [1.0, 1.0])
    assert field.sees[rows[0], cols[0]]
    assert not field.sees[rows[1], cols[1]]     # behind the inner wall


@pytest.mark.parametrize('yaw, expected', [(0.0, 0.0), (math.pi, math.pi),
                                           (math.pi / 2, -math.pi / 2)])
def test_the_bearing_is_in_the_robots_frame(yaw, expected):
    hint = corridor().hint(cloud(5.0, 2.0, yaw), min_share=0.5)
    assert hint is not None
    assert abs(math.remainder(hint.bearing - expected, 2 * math.pi)) < math.radians(10)
    assert hint.share > 0.9 and hint.voters == 50
    assert 10.0 < hint.distance < 13.0      # 5 m -> the cells 3 m before the tag


def test_two_lookalike_places_that_agree_give_a_hint():
    # Half the cloud at x = 5 facing east, half at x = 8 facing east: both say "ahead".
    poses = np.vstack([cloud(5.0, 2.0, 0.0, seed=1), cloud(8.0, 2.0, 0.0, seed=2)])
    hint = corridor().hint(poses, min_share=0.6)
    assert hint is not None and abs(hint.bearing) < math.radians(10)


def test_places_that_disagree_give_none():
    # Facing east at x = 5 (tag ahead) and facing east at x = 5 but believed facing west
    # (tag behind): half and half.
    poses = np.vstack([cloud(5.0, 2.0, 0.0, seed=1), cloud(5.0, 2.0, math.pi, seed=2)])
    field = corridor()
    assert field.hint(poses, min_share=0.6) is None
    assert field.hint(poses, min_share=0.4) is not None


def test_the_way_goes_round_a_wall():
    # West of the inner wall, the path to the tag goes north first (the gap is at y 3-4).
    hint = corridor(inner_wall=True).hint(cloud(14.0, 1.0, 0.0, spread=0.1), min_share=0.5)
    assert hint is not None
    assert math.radians(20) < hint.bearing < math.radians(100)


def test_hypotheses_without_a_vote():
    field = corridor()
    assert field.hint(cloud(18.0, 2.0, 0.0), min_share=0.1) is None    # they see it already
    assert field.hint(cloud(50.0, 2.0, 0.0), min_share=0.1) is None    # off the map
    assert field.hint(cloud(5.0, 0.02, 0.0, spread=0.0), min_share=0.1) is None   # in the wall
    few = cloud(5.0, 2.0, 0.0, n=MIN_VOTERS - 1)
    assert field.hint(few, min_share=0.1) is None
    assert field.hint(np.full((20, 3), np.nan), min_share=0.1) is None
    assert field.hint(np.zeros((0, 3)), min_share=0.1) is None


def test_no_tags_no_hint():
    field = corridor(tags={})
    assert len(field) == 0
    assert field.hint(cloud(5.0, 2.0, 0.0), min_share=0.1) is None


def test_a_map_too_large_is_refused(monkeypatch):
    import lost_and_found.core.search_hint as search_hint
    monkeypatch.setattr(search_hint, 'MAX_CELLS', 100)
    with pytest.raises(ValueError, match='more than the 100 search hints are made for'):
        corridor()
