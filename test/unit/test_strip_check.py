"""Unit tests of core.strip_check: the last seconds of returns, placed by odometry, against
the map at amcl's estimate."""
import math

import numpy as np
import pytest

from lost_and_found.core.scan_agreement import DistanceMap
from lost_and_found.core.strip_check import StripCheck
from lost_and_found.sim.gridmap import GridMap
from lost_and_found.sim.laser import cast_rays

RES = 0.05


def room():
    """A 10 m x 6 m room with three boxes placed so that no part of it looks like another."""
    occupied = np.zeros((120, 200), dtype=bool)
    occupied[0, :] = occupied[-1, :] = occupied[:, 0] = occupied[:, -1] = True
    for x0, y0, x1, y1 in [(2.0, 4.0, 3.0, 5.5), (5.0, 0.5, 5.5, 3.0), (8.0, 4.5, 9.5, 5.0)]:
        occupied[int(y0 / RES):int(y1 / RES), int(x0 / RES):int(x1 / RES)] = True
    return occupied


ROOM = room()


def scan(pose, fov=math.radians(60.0), beams=60, max_range=5.0):
    """``(n, 2)`` returns in the robot's frame of a Kinect-like scan at ``pose`` (map frame)."""
    grid = GridMap.from_occupancy(ROOM, RES, (0.0, 0.0, 0.0))
    angles = pose[2] + np.linspace(-fov / 2.0, fov / 2.0, beams)
    ranges = cast_rays(grid, pose[0], pose[1], angles, max_range)
    ok = np.isfinite(ranges) & (ranges < max_range)
    local = angles[ok] - pose[2]
    return np.column_stack([ranges[ok] * np.cos(local), ranges[ok] * np.sin(local)])


def check(**changes):
    options = dict(window=10.0, min_points=40, ratio=0.6, min_distance=1.0)
    options.update(changes)
    strip = StripCheck(**options)
    strip.set_map(DistanceMap(ROOM, RES))
    return strip


def drive(strip, truths, odom_of=lambda truth: truth, period=0.5, start=0.0):
    """Add a scan at each of ``truths`` (map frame), ``period`` s apart, with odometry
    ``odom_of(truth)``; the stamp and odometry of the last."""
    for k, truth in enumerate(truths):
        stamp = start + k * period
        strip.add(stamp, odom_of(truth), scan(truth))
    return stamp, odom_of(truths[-1])


#: A turn in place at (4, 3) and a drive out of it: the strip sees most of the room.
PATH = [(4.0, 3.0, 0.5 * k) for k in range(13)] + [(4.0 + 0.2 * k, 3.0, 0.0) for k in range(6)]


def test_the_strip_fits_at_the_right_estimate_and_is_never_low():
    strip = check()
    stamp, odom = drive(strip, PATH)
    assert strip.verdict(stamp, odom, PATH[-1]) is False
    assert strip.last[0] > 0.9 and strip.last[1] is None     # no search needed


def test_odometry_in_its_own_frame_places_the_strip_alike():
    # The odometry frame is anywhere: only the motion between scans matters.
    def shifted(truth):
        c, s = math.cos(1.0), math.sin(1.0)
        return (5.0 + c * truth[0] - s * truth[1], -2.0 + s * truth[0] + c * truth[1],
                truth[2] + 1.0)
    strip = check()
    stamp, odom = drive(strip, PATH, shifted)
    assert strip.verdict(stamp, odom, PATH[-1]) is False
    assert strip.last[0] > 0.9


def test_a_wrong_estimate_scores_low_against_the_best_place():
    strip = check()
    stamp, odom = drive(strip, PATH)
    wrong = (2.0, 2.0, 2.0)
    assert strip.verdict(stamp, odom, wrong) is True
    score, best, place = strip.last
    assert score < 0.6 * best
    assert math.hypot(place[0] - PATH[-1][0], place[1] - PATH[-1][1]) < 0.3
    # The best place within min_distance of the estimate: not low, however bad the score.
    strip = check(min_distance=100.0)
    stamp, odom = drive(strip, PATH)
    assert strip.verdict(stamp, odom, wrong) is False
    assert strip.last[0] < 0.6 * strip.last[1]


def test_scans_older_than_the_window_are_dropped_and_a_short_strip_gives_no_verdict():
    short, whole = check(window=1.0), check(window=100.0)
    stamp, odom = drive(short, PATH)
    drive(whole, PATH)
    # The last three scans (1 s at 0.5 s a scan), one return per 0.1 m square.
    last = np.vstack([scan(truth) + [truth[0] - PATH[-1][0], 0.0] for truth in PATH[-3:]])
    cells = np.unique(np.floor(last / short.cell).astype(int), axis=0)
    assert len(short.strip(stamp, odom)) == pytest.approx(len(cells), abs=3)
    assert len(whole.strip(stamp, odom)) > 2 * len(cells)
    strict = check(min_points=10 ** 6)
    assert strict.verdict(*drive(strict, PATH), PATH[-1]) is None


def test_no_map_no_verdict_and_clear_and_a_clock_jump_forget_the_returns():
    strip = StripCheck(10.0, 40, 0.6, 1.0)
    stamp, odom = drive(strip, PATH)
    assert strip.verdict(stamp, odom, PATH[-1]) is None        # no map
    strip.set_map(DistanceMap(ROOM, RES))
    assert len(strip.strip(stamp, odom)) >= 40
    strip.clear()
    assert len(strip.strip(stamp, odom)) == 0
    drive(strip, PATH)
    strip.add(0.1, odom, scan(PATH[-1]))                     # back in time: starts again
    assert len(strip.strip(0.1, odom)) == len(np.unique(np.floor(
        scan(PATH[-1]) / strip.cell).astype(int), axis=0))


def test_scans_without_returns_give_an_empty_strip_and_no_verdict(monkeypatch):
    unique = np.unique

    def old_unique(values, *args, **kwargs):    # numpy before 1.19 (Noetic's 1.17)
        if np.asarray(values).size == 0:
            raise ValueError('cannot reshape array of size 0 into shape (0,newaxis)')
        return unique(values, *args, **kwargs)
    monkeypatch.setattr(np, 'unique', old_unique)
    strip = check()
    for k in range(5):
        strip.add(0.5 * k, PATH[0], np.empty((0, 2)))
        strip.add(0.5 * k + 0.1, PATH[0], [(math.nan, 1.0)])
    assert strip.strip(2.1, PATH[0]).shape == (0, 2)
    assert strip.verdict(2.1, PATH[0], PATH[0]) is None


@pytest.mark.parametrize('stamp, odom', [(float('nan'), (0, 0, 0)), (1.0, (0, math.inf, 0))])
def test_a_stamp_or_odometry_that_is_not_finite_is_refused(stamp, odom):
    strip = check()
    with pytest.raises(ValueError, match='not finite'):
        strip.add(stamp, odom, scan(PATH[0]))
    assert len(strip.strip(1.0, (0, 0, 0))) == 0


def test_a_map_the_search_cannot_use_is_refused_and_the_old_one_stays():
    strip = check()
    before = strip.matcher
    with pytest.raises(ValueError):
        strip.set_map(DistanceMap(np.zeros((50, 50), dtype=bool), RES))
    assert strip.matcher is before


def test_slack_scores_the_best_pose_near_an_estimate_a_little_off():
    off = (PATH[-1][0] + 0.2, PATH[-1][1] - 0.2, PATH[-1][2] + 0.15)
    strict, slack = check(), check(slack_xy=0.3, slack_yaw=0.2)
    stamp, odom = drive(strict, PATH)
    drive(slack, PATH)
    tight = strict.measure(stamp, odom, off, 1.0)[0]
    loose = slack.measure(stamp, odom, off, 1.0)[0]
    right = strict.measure(stamp, odom, PATH[-1], 1.0)[0]
    assert tight < loose and loose == pytest.approx(right, abs=0.05)
    # A wrong place 2.8 m off stays low with the slack.
    assert slack.verdict(stamp, odom, (2.0, 2.0, 2.0)) is True


def test_the_estimate_and_the_best_place_are_scored_over_the_same_returns():
    # Scans seeing up to 12 m (the search keeps returns within its max_range, 6 m): at the
    # best place the search found, the estimate's score is the best score, to the last bit.
    strip = check()
    turn = [(1.2, 3.0, 0.5 * k) for k in range(13)]       # near a short wall: far returns
    for k, truth in enumerate(turn):
        strip.add(0.5 * k, truth, scan(truth, max_range=12.0))
    stamp, odom = 0.5 * (len(turn) - 1), turn[-1]
    points = strip.strip(stamp, odom)
    far = np.hypot(points[:, 0], points[:, 1]) > strip.matcher.config.max_range
    assert far.sum() > 20
    score, best, place = strip.measure(stamp, odom, (2.0, 2.0, 2.0), 1.0)
    assert best is not None and score < best
    assert strip.measure(stamp, odom, place, 2.0)[0] == best
    assert best == strip.matcher.score(place, points[~far])
    # An estimate at the best place is never low, even against a ratio of 1.
    strict = check(ratio=1.0, min_distance=0.0)
    for k, truth in enumerate(turn):
        strict.add(0.5 * k, truth, scan(truth, max_range=12.0))
    assert strict.verdict(stamp, odom, place) is False


def test_a_strip_with_too_few_returns_within_max_range_gives_no_verdict():
    # Facing the west wall 1 m away: 20 returns on it, and 40 on the east wall 9 m behind
    # (beyond the search's 6 m), one per square; all fit the map at the right estimate.
    pose = (1.0, 3.0, math.pi)
    near = np.column_stack([np.full(20, 0.97), -0.95 + 0.1 * np.arange(20)])
    far = np.column_stack([np.full(40, -8.97), 1.97 - 0.1 * np.arange(40)])
    strip = check(min_points=30)
    strip.add(0.0, pose, np.vstack([near, far]))
    assert len(strip.strip(0.0, pose)) == 60
    assert strip.matcher.score(pose, strip.strip(0.0, pose)) > 0.9
    # Fewer than min_points (30) within reach: no verdict, not a verdict of all 60.
    assert strip.verdict(0.0, pose, pose) is None
    assert strip.measure(0.0, pose, pose, 2.0) is None


def test_the_best_place_scores_alike_with_returns_on_the_edges_of_squares():
    # Scans at multiples of 90 deg from a place on the grid of half squares: there the
    # strip's returns (the centres of squares) lie on the edges of the map's squares, which
    # the search's refinement and scores_at round each their own way.
    truth = (1.25, 3.05)
    strip = check()
    turn = [(truth[0], truth[1], k * math.pi / 2.0) for k in range(4)] + [truth + (0.0,)]
    for k, pose in enumerate(turn):
        strip.add(0.5 * k, pose, scan(pose))
    stamp, odom = 0.5 * (len(turn) - 1), turn[-1]
    _, best, place = strip.measure(stamp, odom, (2.0, 2.0, 2.0), 1.0)
    assert best is not None
    assert math.hypot(place[0] - truth[0], place[1] - truth[1]) <= 0.1
    assert abs(math.remainder(place[2], math.pi / 2.0)) < 1e-9
    assert strip.measure(stamp, odom, place, 2.0)[0] == best
