"""tools/tag_check_coverage.py: from how many free poses a spin lets the tag check speak."""
import math

import numpy as np

from lost_and_found.core import geometry
from lost_and_found.core.fiducial import facing_yaw_rotation
from lost_and_found.sim.gridmap import GridMap
from tool_loader import load_tool


def _tool():
    return load_tool('tag_check_coverage')


def corridor():
    """A 20 m x 2 m corridor (0.1 m cells) with walls on its border."""
    occupied = np.zeros((20, 200), dtype=bool)
    occupied[0, :] = occupied[-1, :] = occupied[:, 0] = occupied[:, -1] = True
    return GridMap.from_occupancy(occupied, 0.1)


def test_a_tag_at_the_corridor_end_is_expected_only_from_its_near_end():
    tool = _tool()
    tag = geometry.make_transform(facing_yaw_rotation(math.pi), (19.85, 1.0, 0.3))
    share, count = tool.coverage(corridor(), tool.shipped_check({3: tag}), 400, 0)
    assert count == 400
    # Expected from 0.6-2.5 m before the end wall, within 40 deg of its face: about a tenth
    # of the corridor's usable length (0.4-19.6 m).
    assert 0.03 < share < 0.15


def test_no_tags_no_coverage():
    tool = _tool()
    assert tool.coverage(corridor(), tool.shipped_check({}), 100, 0) == (0.0, 100)


def test_reach_finds_a_viewpoint_only_within_its_path_budget():
    tool = _tool()
    tag = geometry.make_transform(facing_yaw_rotation(math.pi), (19.85, 1.0, 0.3))
    grid = corridor()
    costs = tool.reach(grid, tool.shipped_check({3: tag}), 300, 0, 8.0)
    assert costs.size == 300
    xs, _ = tool.sample_poses(grid, tool.shipped_check({3: tag}), 300, 0)
    # The check's range ends 2.5 m before the tag; with 8 m of path (and under a metre of
    # turning) a viewpoint is found from about x > 9.4 m, and from nowhere nearer than 8.5 m.
    assert np.all(np.isinf(costs[xs < 19.85 - 2.5 - 8.0 - 0.1]))
    assert np.all(np.isfinite(costs[xs > 19.85 - 2.5 - 8.0 + 1.2]))
    assert np.all(costs[np.isfinite(costs)] <= 8.0 + tool.TURN_COST * math.pi)
