"""tools/first_spin.py: what the first turn after a put-down sees, frame by frame."""
import math

import pytest

from lost_and_found.bench import oracle
from test_bench_oracle import CAMERA, box_map, tag_map
from tool_loader import load_tool


def test_each_turn_counts_in_one_row():
    tool = load_tool('first_spin')
    f, t = False, True
    assert tool.classify([f, f, f], [f, f, f]) == (tool.NOTHING, None, None)
    assert tool.classify([f, t, t], [f, t, f]) == (tool.KEPT_FIRST, 2, 1)
    assert tool.classify([f, t, f], [f, t, f]) == (tool.KEPT_FIRST, None, 1)
    assert tool.classify([t, t, t], [f, f, t]) == (tool.REFUSED_THEN_KEPT, 0, 2)
    assert tool.classify([f, t, t], [f, f, f]) == (tool.REFUSED_ONLY, 1, None)


def test_a_turn_has_as_many_frames_as_the_camera_takes():
    tool = load_tool('first_spin')
    assert tool.turn_frames(2.0 * math.pi / 5.0, 5.0) == 25
    assert tool.turn_frames(math.radians(72.0), 5.0) == 25
    assert tool.turn_frames(100.0, 5.0) == 1


def test_a_turn_sees_the_near_tag_kept_and_the_far_one_refused():
    tool = load_tool('first_spin')
    # A 10 x 4 m room: tag 1 on the west wall, tag 2 on the east wall, both facing in; the
    # robot 1.5 m from the first (kept) and 8.4 m from the second (beyond the camera's 4 m).
    grid = box_map(10.0, 4.0)
    _ids, tags = oracle._tag_arrays(tag_map({1: (0.12, 2.0, 0.3, 0.0),
                                             2: (9.88, 2.0, 0.3, math.pi)}))
    acceptance = oracle.Acceptance(3.0, 1.05, 0.05, 0.5)
    # Heading east at the start: the tag behind comes into view half a turn later.
    seen, kept = tool.spin_views(grid, CAMERA, tags, acceptance, (1.5, 2.0, 0.0), 24)
    assert seen == kept
    assert not kept[0] and kept[12]
    assert tool.classify(seen, kept)[0] == tool.KEPT_FIRST
    # 3.5 m from the west tag: the camera reports it (within 4 m), fiducial_localizer does not.
    seen, kept = tool.spin_views(grid, CAMERA, tags, acceptance, (3.5, 2.0, math.pi), 24)
    assert seen[0] and not any(kept)
    assert tool.classify(seen, kept) == (tool.REFUSED_ONLY, 0, None)


def test_the_report_gives_shares_and_medians_in_seconds():
    tool = load_tool('first_spin')
    results = [(tool.NOTHING, None, None), (tool.KEPT_FIRST, None, 3),
               (tool.REFUSED_THEN_KEPT, 2, 7), (tool.REFUSED_THEN_KEPT, 4, 14),
               (tool.REFUSED_ONLY, 5, None)]
    lines = tool.report(results, 25, 5.0, 5)
    assert lines[2] == '| no tag in the turn | 1 | 20.0 % | - | - |'
    assert lines[3] == '| a kept tag first | 1 | 20.0 % | - | - |'
    # Gaps 5 and 10 frames: median 7.5 frames, 1.5 s; left 23 and 21 frames: 4.4 s.
    assert lines[4] == '| a refused tag first, a kept one later | 2 | 40.0 % | 1.5 | 4.4 |'
    assert lines[5] == '| refused tags only | 1 | 20.0 % | - | 4.0 |'


def test_bad_arguments_are_refused(tmp_path):
    tool = load_tool('first_spin')
    with pytest.raises(SystemExit):
        tool.main(['map.yaml', '--fiducials', 'f.yaml', '--poses', '0'])
    with pytest.raises(SystemExit, match='first_spin: '):
        tool.main([str(tmp_path / 'missing.yaml'), '--fiducials', str(tmp_path / 'f.yaml')])


def test_a_hop_toward_a_tag_beyond_the_cameras_range_sees_it():
    tool = load_tool('first_spin')
    # A 10 x 4 m room with one tag on the west wall, 4.4 m from the put-down: beyond the
    # camera's 4 m, so the turn there sees nothing. A hop of 1.5 m west brings it to 2.9 m
    # (kept); the laser's longest free range is east (capped at its 5 m), where nothing is.
    grid = box_map(10.0, 4.0)
    _ids, tags = oracle._tag_arrays(tag_map({1: (0.12, 2.0, 0.3, 0.0)}))
    acceptance = oracle.Acceptance(3.0, 1.05, 0.05, 0.5)
    seen, _kept = tool.spin_views(grid, CAMERA, tags, acceptance, (4.5, 2.0, 0.0), 24)
    assert not any(seen)
    views = tool.hop_views(grid, CAMERA, tags, acceptance, (4.5, 2.0, 0.0), 24, 1.5, 0.23, 5.0)
    assert len(views) == tool.HOP_DIRECTIONS        # every hop keeps 0.23 m from the walls
    assert views[0][1:] == (False, False) and views[0][0] == pytest.approx(5.0)   # east
    assert [v[0] for v in views] == sorted((v[0] for v in views), reverse=True)
    # West, and the two directions beside it (2.9-3 m from the tag), see it kept; they rank
    # after the three eastward ones.
    kept = [v for v in views if v[1]]
    assert len(kept) == 3 and all(v[2] for v in kept)
    assert not any(v[2] for v in views[:3]) and max(v[0] for v in kept) < views[2][0]
    # Too near a wall: the hops toward it are left out.
    assert len(tool.hop_views(grid, CAMERA, tags, acceptance, (4.5, 0.5, 0.0), 24, 1.5, 0.23,
                              5.0)) < tool.HOP_DIRECTIONS
    # A second put-down without a hop that keeps clear of the walls counts as found by none.
    lines = tool.hop_report([views, []], 1.5)
    assert lines[2] == '| 16 directions | 2 | 0 / 0 / 0 | 1 | 0 / 0 / 0 | 1 |'
