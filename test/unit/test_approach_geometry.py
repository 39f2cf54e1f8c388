"""tools/approach_geometry.py: where a run's approaches began, and whether a straight drive
could have got there."""
import argparse
import math

import pytest

from recovery_run_files import write_run
from tool_loader import load_tool


def _tool():
    return load_tool('approach_geometry')


def post_at_x2(x, y):
    """Clearance to a post at x = 2 m (a wall across the corridor, 0.1 m thick)."""
    return abs(x - 2.0) + 0.1


def test_distance_view_angle_and_the_two_lines():
    tool = _tool()
    # A tag 4 m ahead facing the robot, approached as before 892da58 (always the standoff
    # point): the goal (2.8, 0), the line of sight to 2.5 m ends at (1.5, 0). The post at x = 2
    # is on the first line (0.1 m), 0.6 m beyond the second's end.
    distance, view, to_goal, along_sight = tool.geometry(
        (0.0, 0.0), (4.0, 0.0, math.pi), post_at_x2, (1.2, 1.2, 0.0), 2.5)
    assert distance == pytest.approx(4.0) and view == pytest.approx(0.0)
    assert to_goal == pytest.approx(0.1) and along_sight == pytest.approx(0.6)
    # With the package's limits the goal is on the line of sight 2.2 m from the tag, (1.8, 0):
    # 0.3 m from the post at its end.
    _, _, to_goal, _ = tool.geometry((0.0, 0.0), (4.0, 0.0, math.pi), post_at_x2,
                                     (1.2, 2.2, 0.75), 2.5)
    assert to_goal == pytest.approx(0.3)
    # Facing north, seen from the west: 90 degrees off its face. Already nearer than the sight
    # range: the line of sight is the robot's own spot.
    _, view, _, along_sight = tool.geometry((2.5, 0.0), (4.0, 0.0, math.pi / 2), post_at_x2,
                                            (1.2, 1.2, 0.0), 2.5)
    assert view == pytest.approx(math.pi / 2) and along_sight == pytest.approx(0.6)


def test_report_lists_each_approach_and_tallies_the_blocked_ones(tmp_path):
    tool = _tool()
    # One spiral trial put down at 100 s; the trace has the robot at (0, 0) until 20 s, then
    # at (0, 5). Tag 3 (4 m ahead, facing it) blocked by the post; tag 4 (not in the
    # fiducials) ended by a localization; tag 3 again from (0, 5), blocked too.
    trace = [[1.0, 0.0, 0.0, 0.0, 5.0, 1.0, 'LOST'], [20.0, 0.0, 5.0, 0.0, 5.0, 1.0, 'LOST'],
             [30.0, 0.0, 5.0, 0.0, 0.1, 0.0, 'LOCALIZING'], [40.0, 0.0, 5.0, 0.0, 5.0, 1.0, 'LOST'],
             [45.0, 0.0, 5.0, 0.0, 5.0, 1.0, 'LOST'], [60.0, 0.0, 5.0, 0.0, 5.0, 1.0, 'LOST']]
    write_run(tmp_path, [{'strategy': 'spiral', 'index': 2, 't_put_down_sim': 100.0,
                          'resumed': False, 'recovered': False, 'need_help': True,
                          'trace': trace}], [
        (101.0, 'tag 3 seen 4.0 m away, too far, oblique or noisy to localize from: ...'),
        (104.0, 'approach of tag 3 over: blocked; searching on'),
        (110.0, 'tag 3 seen 4.0 m away, too far, oblique or noisy to localize from: ...'),
        (125.0, 'tag 4 seen 3.0 m away, too far, oblique or noisy to localize from: ...'),
        (145.0, 'tag 3 seen 6.4 m away, too far, oblique or noisy to localize from: ...'),
        (150.0, 'approach of tag 3 over: blocked; searching on')])
    tags = {3: (4.0, 0.0, math.pi)}
    args = argparse.Namespace(standoff=1.2, approach_max_distance=1.2,
                              approach_max_view_angle=0.0, sight_range=2.5,
                              max_view_angle=1.05, half_width=0.227)
    text = '\n'.join(tool.report(str(tmp_path), tags, post_at_x2, args))
    assert '| `spiral` | 2 | 1 | 3 | blocked | 4.00 | 0.00 | 0.100 | 0.600 |' in text
    assert '| `spiral` | 2 | 25 | 4 | localized | - | - | - | - |' in text
    # 10 s after the put-down the nearest trace sample is 9 s away: no pose to measure from.
    assert '| `spiral` | 2 | 10 | 3 | localized | - | - | - | - |' in text
    # From (0, 5): 6.4 m, 0.90 rad off the face; the line to the standoff (2.8, 0) and the line
    # of sight to 2.5 m from the tag (it ends at (2.44, 1.95)) both cross the post at x = 2.
    row = next(line for line in text.splitlines() if line.startswith('| `spiral` | 2 | 45 |'))
    cells = [cell.strip() for cell in row.strip('|').split('|')]
    assert cells[3:7] == ['3', 'blocked', '6.40', '0.90']
    assert float(cells[7]) == pytest.approx(0.1, abs=3e-3)
    assert float(cells[8]) == pytest.approx(0.1, abs=3e-3)
    # Both blocked approaches had the standoff line walled; only the first had the line of
    # sight clear (and the face within 1.05 rad, from farther than 2.5 m), the second neither.
    # The two that ended in the localization have no geometry.
    assert '| blocked | 2 | 0 | 0 | 1 | 0 | 1 |' in text
    assert '| localized | 2 | 2 | 0 | 0 | 0 | 0 |' in text


def test_an_approach_sent_elsewhere_by_approach_clear_way_is_listed_without_geometry(tmp_path):
    tool = _tool()
    trace = [[1.0, 0.0, 0.0, 0.0, 5.0, 1.0, 'LOST'], [11.0, 0.0, 0.0, 0.0, 5.0, 1.0, 'LOST'],
             [20.0, 0.0, 0.0, 0.0, 5.0, 1.0, 'LOST']]
    write_run(tmp_path, [{'strategy': 'spiral', 'index': 0, 't_put_down_sim': 100.0,
                          'resumed': False, 'recovered': False, 'need_help': True,
                          'trace': trace}], [
        (101.0, 'the laser shows the way to (1.80, 0.00), the nearest place to see tag 3 from, '
                'blocked: going to (1.50, 1.00) instead, 1.80 m away, whose way it shows '
                'clear'),
        (101.0, 'tag 3 seen 4.0 m away, too far, oblique or noisy to localize from: ...'),
        (104.0, 'approach of tag 3 over: blocked; searching on'),
        (111.0, 'tag 3 seen 4.0 m away, too far, oblique or noisy to localize from: ...'),
        (114.0, 'approach of tag 3 over: blocked; searching on')])
    args = argparse.Namespace(standoff=1.2, approach_max_distance=2.2,
                              approach_max_view_angle=0.75, sight_range=2.5,
                              max_view_angle=1.05, half_width=0.227)
    text = '\n'.join(tool.report(str(tmp_path), {3: (4.0, 0.0, math.pi)}, post_at_x2, args))
    # The first went elsewhere than the nearest place the lines lead to: no geometry. The
    # second, from the same spot, went to the nearest place (1.8, 0): 0.3 m from the post.
    assert '| `spiral` | 0 | 1 | 3 | blocked, gone elsewhere | - | - | - | - |' in text
    assert '| `spiral` | 0 | 11 | 3 | blocked | 4.00 | 0.00 | 0.300 | 0.600 |' in text
    assert '| blocked | 2 | 1 | 1 | 0 | 0 | 0 |' in text      # 0.3 m: the line clear


def test_kind_sorts_every_approach_into_one_column():
    tool = _tool()
    args = argparse.Namespace(sight_range=2.5, max_view_angle=1.05, half_width=0.227)
    assert tool.kind(4.0, 1.3, 0.3, 0.0, args) == 1          # the straight line is clear
    assert tool.kind(4.0, 0.5, 0.1, 0.3, args) == 2          # the line of sight serves
    assert tool.kind(4.0, 1.3, 0.1, 0.3, args) == 3          # seen too far off its face
    assert tool.kind(2.0, 0.5, 0.1, 0.3, args) == 3          # already within the sight range
    assert tool.kind(4.0, None, 0.1, 0.3, args) == 3         # a flat tag
    assert tool.kind(4.0, 0.5, 0.1, 0.1, args) == 4          # both walled


def test_the_least_clearance_along_a_segment_samples_it_at_most_a_step_apart():
    tool = _tool()
    samples = []

    def clearance(x, y):
        samples.append((round(x, 9), round(y, 9)))
        return abs(y - 0.3) + x

    # 1 m in steps of 0.25 m: the five points from (0, 0) to (0, 1), the least at y = 0.25.
    assert tool.least_clearance(clearance, (0.0, 0.0), (0.0, 1.0), 0.25) == pytest.approx(0.05)
    assert samples == [(0.0, 0.0), (0.0, 0.25), (0.0, 0.5), (0.0, 0.75), (0.0, 1.0)]
    # The default step (0.02 m) reaches the least itself; a point is sampled at both ends.
    assert tool.least_clearance(clearance, (0.0, 0.0), (0.0, 1.0)) == pytest.approx(0.0)
    samples.clear()
    assert tool.least_clearance(clearance, (0.5, 0.3), (0.5, 0.3), 0.25) == pytest.approx(0.5)
    assert samples == [(0.5, 0.3), (0.5, 0.3)]
