"""Unit tests of core.panorama: a full turn's returns matched against the map."""
import math

import numpy as np
import pytest

from lost_and_found.core import panorama
from lost_and_found.core.config import ConfigError
from lost_and_found.core.panorama import (LOOK_BIN, NO_FIX_OVER, NO_FIX_SPENT, NO_FIX_STATE,
                                          Panorama, PanoramaConfig, PanoramaEpisodes,
                                          PanoramaMatch, PanoramaMatcher)
from lost_and_found.core.scan_agreement import DistanceMap
from lost_and_found.sim.gridmap import GridMap
from lost_and_found.sim.laser import cast_rays
from lost_and_found.state import State

RES = 0.05


def walls(width, height, boxes=()):
    """Occupied cells of a ``width`` x ``height`` m room (one-cell walls) with filled
    ``boxes`` ``(x0, y0, x1, y1)`` (m)."""
    occupied = np.zeros((int(round(height / RES)), int(round(width / RES))), dtype=bool)
    occupied[0, :] = occupied[-1, :] = occupied[:, 0] = occupied[:, -1] = True
    for x0, y0, x1, y1 in boxes:
        occupied[int(y0 / RES):int(y1 / RES), int(x0 / RES):int(x1 / RES)] = True
    return occupied


#: A 10 m x 6 m room with three boxes placed so that no turn of it looks like another.
ODD_ROOM = walls(10.0, 6.0, [(2.0, 4.0, 3.0, 5.5), (5.0, 0.5, 5.5, 3.0), (8.0, 4.5, 9.5, 5.0)])
#: The same room without boxes: every place looks like its half-turned twin.
BARE_ROOM = walls(10.0, 6.0)


def turn(occupied, pose, origin=(0.0, 0.0, 0.0), max_range=5.0, beams=360):
    """``(n, 2)`` returns of a full turn at ``pose`` (map frame), in the robot's frame."""
    grid = GridMap.from_occupancy(occupied, RES, origin)
    angles = pose[2] + 2.0 * math.pi * np.arange(beams) / beams
    ranges = cast_rays(grid, pose[0], pose[1], angles, max_range)
    ok = np.isfinite(ranges) & (ranges < max_range)
    local = angles[ok] - pose[2]
    return np.column_stack([ranges[ok] * np.cos(local), ranges[ok] * np.sin(local)])


def matcher(occupied, origin=(0.0, 0.0, 0.0), **config):
    return PanoramaMatcher(DistanceMap(occupied, RES, origin),
                           PanoramaConfig(**config).validate())


def assert_near(pose, truth, xy=0.15, yaw=0.1):
    assert math.hypot(pose[0] - truth[0], pose[1] - truth[1]) <= xy, (pose, truth)
    assert abs(math.remainder(pose[2] - truth[2], 2.0 * math.pi)) <= yaw, (pose, truth)


@pytest.mark.parametrize('truth', [(4.0, 3.0, 0.3), (8.2, 1.5, -2.0), (1.2, 1.0, 2.8)])
def test_a_room_unlike_itself_is_found_and_the_place_stands_alone(truth):
    match = matcher(ODD_ROOM).match(turn(ODD_ROOM, truth))
    assert_near(match.pose, truth)
    assert match.alone and match.rivals == 0
    assert match.score > 0.7
    assert match.is_fix(PanoramaConfig())


def test_a_room_like_its_half_turn_gives_rivals_and_no_fix():
    truth = (3.0, 2.0, 0.5)
    match = matcher(BARE_ROOM).match(turn(BARE_ROOM, truth))
    twin = (10.0 - truth[0], 6.0 - truth[1], truth[2] + math.pi)
    # The best place is one of the two; the other is its rival.
    assert min(math.hypot(match.pose[0] - p[0], match.pose[1] - p[1])
               for p in (truth, twin)) <= 0.15
    assert not match.alone and match.rivals >= 1
    assert not match.is_fix(PanoramaConfig())


def test_the_pose_is_in_the_map_frame_of_a_turned_and_shifted_map():
    origin = (-3.0, 5.0, 0.6)
    # the truth in the grid's own frame, then in the map's
    gx, gy, gyaw = 4.0, 3.0, 0.3
    c, s = math.cos(origin[2]), math.sin(origin[2])
    truth = (origin[0] + c * gx - s * gy, origin[1] + s * gx + c * gy, gyaw + origin[2])
    match = matcher(ODD_ROOM, origin).match(turn(ODD_ROOM, truth, origin))
    assert_near(match.pose, truth)


def open_room():
    """A 5.1 m x 3.1 m map without walls round it (an odd number of 0.1 m squares each way,
    places up to its edges), two boxes in it."""
    occupied = np.zeros((62, 102), dtype=bool)
    occupied[20:40, 30:34] = True
    occupied[10:14, 60:90] = True
    return occupied


@pytest.mark.parametrize('seed', range(4))
@pytest.mark.parametrize('room', ['walled', 'open'])
def test_the_search_scores_its_best_place_as_a_pose_scored_on_its_own(seed, room):
    """The search's integer arithmetic (returns off the grid in its zero margin) scores every
    pose around a candidate as :meth:`PanoramaMatcher.scores_at` scores it alone, also for
    returns that fall off the map around many of the places it tries and for places at the
    edge of a map of an odd number of squares (returns exactly on an edge of a square aside:
    each arithmetic rounds those its own way)."""
    rng = np.random.default_rng(seed)
    if room == 'walled':
        room, size = walls(10.0, 6.0, [(2.0, 4.0, 3.0, 5.5), (5.0, 0.5, 5.5, 3.0)]), (10.0, 6.0)
    else:
        room, size = open_room(), (5.1, 3.1)
    m = matcher(room, max_range=6.0, min_points=10)     # the open room gives few returns
    if seed < 2:
        points = turn(room, (rng.uniform(1.0, size[0] - 1.0), rng.uniform(1.0, size[1] - 1.0),
                             rng.uniform(-math.pi, math.pi)), max_range=6.0)
        # off the exact edges of squares, where the two roundings may pick either square
        points += rng.normal(0.0, 1e-6, points.shape)
    else:     # returns anywhere within max_range: most land off the grid somewhere
        radius, angle = rng.uniform(0.5, 5.9, 300), rng.uniform(-math.pi, math.pi, 300)
        points = np.column_stack([radius * np.cos(angle), radius * np.sin(angle)])
    match = m.match(points)
    assert match is not None
    assert match.score == pytest.approx(m.score(match.pose, points), abs=1e-12)
    # around every candidate, the best of the poses scored one by one
    points = m.usable(points)
    candidates = m._coarse_candidates(points)
    steps = np.arange(-2, 3) * m.cell / 2.0
    step = 2.0 * math.pi / m.config.headings
    for (row, col, k), (score, x, y, yaw) in zip(candidates, m._refine(candidates, points)):
        cx, cy = (col + 0.5) * m.coarse.cell, (row + 0.5) * m.coarse.cell
        poses = np.array([(cx + dx, cy + dy, m.coarse_headings[k] + dk * step)
                          for dx in steps for dy in steps for dk in range(-2, 3)])
        scores = m.scores_at(poses, points)
        on = m.places[np.floor(poses[:, 1] / m.cell).astype(int),
                      np.floor(poses[:, 0] / m.cell).astype(int)]
        assert on.any()
        i = int(np.argmax(np.where(on, scores, -1.0)))
        assert score == pytest.approx(scores[i], abs=1e-12)
        assert (x, y, yaw) == pytest.approx(tuple(poses[i]), abs=1e-9)


def test_without_the_scipy_fft_module_numpy_fft_finds_the_same(monkeypatch):
    """Ubuntu 20.04 (Noetic's platform) ships SciPy 1.3, whose ``scipy.fft`` is numpy's fft
    function, not the module: the matcher falls back to numpy.fft and finds the same."""
    import scipy
    points = turn(ODD_ROOM, (4.0, 3.0, 0.3))
    current = matcher(ODD_ROOM)
    monkeypatch.setattr(scipy, 'fft', np.fft.fft)
    assert panorama.fft_backend() == (np.fft, panorama.smooth_length)
    old = matcher(ODD_ROOM)
    assert old._fft is np.fft and current._fft is not np.fft
    usable = current.usable(points)
    assert old._coarse_candidates(usable) == current._coarse_candidates(usable)
    mine, theirs = old.match(points), current.match(points)
    assert mine.pose == pytest.approx(theirs.pose) and mine.alone == theirs.alone
    assert mine.score == pytest.approx(theirs.score, abs=1e-6)


@pytest.mark.parametrize('n, length', [(0, 1), (1, 1), (7, 8), (11, 12), (97, 100),
                                       (121, 125), (250, 250)])
def test_smooth_length_is_the_next_length_of_factors_2_3_5(n, length):
    assert panorama.smooth_length(n) == length


def a_match(score=0.9, alone=True):
    return PanoramaMatch(pose=(1.0, 2.0, 0.5), score=score, alone=alone,
                         rivals=0 if alone else 3, points=200)


def test_a_fix_stands_alone_and_scores_min_score():
    config = PanoramaConfig()
    assert a_match().is_fix(config)
    assert not a_match(alone=False).is_fix(config)
    assert not a_match(score=config.min_score - 0.01).is_fix(config)
    assert a_match(score=config.min_score).is_fix(config)


def test_too_few_returns_and_bad_points_give_no_match():
    points = turn(ODD_ROOM, (4.0, 3.0, 0.3))
    m = matcher(ODD_ROOM, min_points=len(points))
    assert m.match(points[:-1]) is None
    with_nan = np.vstack([points, [[math.nan, 1.0], [math.inf, 0.0]]])
    assert m.match(with_nan) is not None        # the bad ones are dropped, the rest matched
    # returns beyond max_range do not count
    far = matcher(ODD_ROOM, min_points=10, max_range=0.5)
    assert far.match(points) is None


def test_a_panorama_far_from_every_wall_gives_no_match():
    points = np.column_stack([np.full(200, 100.0), np.linspace(-50.0, 50.0, 200)])
    assert matcher(ODD_ROOM, min_points=100, max_range=30.0).match(points) is None


def test_maps_it_cannot_match_on_are_refused():
    with pytest.raises(ValueError, match='no occupied cell'):
        matcher(np.zeros((40, 40), dtype=bool))
    with pytest.raises(ValueError, match='from every obstacle'):
        matcher(walls(0.3, 0.3))                # no place the robot fits in


def test_more_scores_than_the_budget_holds_is_refused_naming_the_headings(monkeypatch):
    from lost_and_found.core import panorama
    places = len(np.nonzero(matcher(ODD_ROOM).coarse.places)[0])
    monkeypatch.setattr(panorama, 'MAX_SCORE_BYTES', 4 * places * 36)
    assert matcher(ODD_ROOM, headings=72) is not None           # just fits
    with pytest.raises(ValueError, match='74 headings'):
        matcher(ODD_ROOM, headings=74)


def test_the_panorama_keeps_one_return_per_cell_and_gives_them_in_the_robot_frame():
    panorama = Panorama(0.1)
    panorama.add([1.01, 1.04, 2.0, 9.0, math.nan], [0.0, 0.02, 0.0, 0.0, 1.0])
    assert len(panorama) == 3                   # the first two share a cell; NaN is dropped
    points = panorama.around((1.0, 0.0, math.pi / 2), max_range=5.0)
    expected = {(0.0, -0.01), (0.0, -1.0)}      # ahead is +y: a point at +x is to the right
    assert {tuple(np.round(p, 2)) for p in points} == expected
    panorama.clear()
    assert len(panorama) == 0
    assert panorama.around((0.0, 0.0, 0.0), 5.0).shape == (0, 2)


def test_a_full_turn_of_scans_is_looked_round_and_clear_waits_for_another():
    panorama = Panorama(0.1)
    yaw = 0.0
    while not panorama.looked_round():
        panorama.look(yaw - 0.5, yaw + 0.5)     # a Kinect's 1 rad scan, turning 0.3 rad
        yaw += 0.3
        assert yaw < 2.0 * math.pi + 0.3
    assert yaw >= 2.0 * math.pi - 1.0 - 2 * LOOK_BIN
    panorama.clear()
    assert not panorama.looked_round()
    panorama.look(0.0, 7.0)                     # a span of a full turn marks all
    assert panorama.looked_round()
    panorama.clear()
    panorama.look(math.nan, 1.0)                # ignored
    assert not panorama.looked_round()


def test_a_scan_looking_back_and_forth_marks_only_what_it_saw():
    panorama = Panorama(0.1)
    for _ in range(20):
        panorama.look(-0.5, 0.5)
    assert not panorama.looked_round()


@pytest.mark.parametrize('field, value', [
    ('cell', 0.0), ('headings', 0), ('sigma', -1.0), ('keep', 1.0), ('keep', 0.0),
    ('alone_xy', math.nan), ('alone_yaw', 4.0), ('min_score', 1.5), ('min_points', 0),
    ('max_range', 0.0), ('max_range', 31.0), ('headings', 73), ('headings', 722),
    ('clearance', -0.1), ('tf_timeout', 2.0), ('fixes', 0), ('sigma_xy', 0.0),
    ('sigma_yaw', math.inf), ('beam_step', 0), ('odom_frame', '/odom'), ('map_frame', ''),
    ('base_frame', 'base footprint'), ('tf_timeout', -1.0), ('state_namespace', ''),
    ('partial_share', 1.0), ('partial_share', -0.1), ('partial_step', 0.0),
    ('partial_step', 1.5), ('sigma_xy', 1e200), ('sigma_yaw', 4.0),
])
def test_bad_values_are_named(field, value):
    with pytest.raises(ConfigError, match=field):
        PanoramaConfig(**{field: value}).validate()


def test_the_shipped_file_is_valid():
    import os
    import yaml
    from lost_and_found.core.config import config_from_params
    path = os.path.join(os.path.dirname(__file__), '..', '..', 'config',
                        'panorama_localizer.yaml')
    with open(path) as stream:
        config = config_from_params(PanoramaConfig, yaml.safe_load(stream))
    assert config == PanoramaConfig()


# ---------------------------------------------------------------- the episode rules

#: A Kinect's beams, every 8th of 640 over 1 rad, all returning at 2 m.
ANGLES = np.linspace(-0.5, 0.5, 80)
RANGES = np.full(80, 2.0)


def turn_until_a_job(episodes, episode=None, steps=40):
    """Scans turning 0.3 rad each; the job of the first that starts a match, and the scans."""
    for k in range(steps):
        yaw = 0.3 * k
        job = episodes.add_scan(episodes.episode if episode is None else episode,
                                (0.1 * math.cos(yaw), 0.1 * math.sin(yaw), yaw, 1.0),
                                (0.0, 0.0, yaw), ANGLES, RANGES, 0.45, 5.0)
        if job is not None:
            return job, k + 1
    return None, steps


def lost(**config):
    config.setdefault('partial_share', 0.0)     # full turns only, unless a test asks
    episodes = PanoramaEpisodes(PanoramaConfig(**config).validate())
    episodes.on_state(State.IDLE)
    episodes.on_state(State.LOST)
    return episodes


def test_returns_are_gathered_only_while_lost():
    episodes = PanoramaEpisodes(PanoramaConfig())
    for state in (State.IDLE, State.NAVIGATING, State.FLYING, State.LOCALIZING,
                  State.NEED_HELP):
        episodes.on_state(state)
        assert not episodes.gathering()
        assert turn_until_a_job(episodes) == (None, 40)
        assert len(episodes.panorama) == 0
    episodes.on_state(State.LOST)
    assert episodes.gathering()


def test_a_full_turn_starts_one_match_at_a_time():
    episodes = lost()
    job, scans = turn_until_a_job(episodes)
    assert job is not None and episodes.busy
    assert 2.0 * math.pi - 1.0 <= 0.3 * scans <= 2.0 * math.pi + 0.6
    episode, points, base, share = job
    assert episode == episodes.episode and share == 1.0
    # every return 2 m from a laser 0.1 m ahead of the robot: 1.9-2.1 m from the robot
    assert np.all(np.abs(np.hypot(points[:, 0], points[:, 1]) - 2.05) <= 0.06)
    assert len(episodes.panorama) == 0          # the next match is of the next turn
    assert turn_until_a_job(episodes)[0] is None    # not while one runs
    assert episodes.finished(episode, a_match()) == (True, None)
    assert not episodes.busy and episodes.fixes == 1
    assert turn_until_a_job(episodes)[0] is not None


def test_returns_at_range_max_or_not_finite_are_no_returns():
    episodes = lost(cell=0.01)                  # every return in a cell of its own
    ranges = RANGES.copy()
    ranges[:10], ranges[10:20], ranges[20:30] = 5.0, math.nan, 0.2
    episodes.add_scan(episodes.episode, (0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0), ANGLES,
                      ranges, 0.45, 5.0)
    assert len(episodes.panorama) == 50


def test_a_negative_range_min_lets_no_negative_range_through():
    episodes = lost(cell=0.01)
    ranges = RANGES.copy()
    ranges[:30], ranges[30:40] = -2.0, 0.0
    episodes.add_scan(episodes.episode, (0.0, 0.0, 0.0, 1.0), (0.0, 0.0, 0.0), ANGLES,
                      ranges, -5.0, 5.0)
    assert len(episodes.panorama) == 40


def test_an_upside_down_laser_turns_the_other_way():
    episodes = lost()
    episodes.add_scan(episodes.episode, (0.0, 0.0, 0.0, -1.0), (0.0, 0.0, 0.0),
                      np.array([0.4]), np.array([2.0]), 0.45, 5.0)
    (x, y), = episodes.panorama.around((0.0, 0.0, 0.0), 5.0)
    assert (x, y) == pytest.approx((2.0 * math.cos(0.4), -2.0 * math.sin(0.4)))


def test_why_a_match_is_no_fix():
    episodes = lost(fixes=1)
    job, _ = turn_until_a_job(episodes)
    assert episodes.finished(job[0], None) == (False, None)
    fix, why = episodes.finished(job[0], a_match(alone=False))
    assert not fix and '3 rival candidates' in why
    fix, why = episodes.finished(job[0], a_match(score=0.3))
    assert not fix and 'min_score' in why
    episodes.on_state(State.LOCALIZING)         # a tag's fix came first
    assert episodes.finished(job[0], a_match()) == (False, NO_FIX_STATE)
    episodes.on_state(State.LOST)               # amcl did not settle it: the same episode
    assert episodes.finished(job[0], a_match()) == (True, None)
    assert episodes.finished(job[0], a_match()) == (False, NO_FIX_SPENT)
    assert not episodes.gathering()             # the one fix is spent
    episodes.on_state(State.IDLE)
    assert episodes.finished(job[0], a_match()) == (False, NO_FIX_OVER)


@pytest.mark.parametrize('end', [State.FLYING, State.IDLE, State.NAVIGATING])
def test_an_episode_ends_with_a_lift_or_a_localization(end):
    episodes = lost(fixes=1)
    job, _ = turn_until_a_job(episodes)
    assert episodes.finished(job[0], a_match())[0]
    turn_until_a_job(episodes, steps=3)
    old = episodes.episode
    episodes.on_state(end)
    assert len(episodes.panorama) == 0
    episodes.on_state(State.LOST)
    assert episodes.episode > old and episodes.fixes == 0 and episodes.gathering()
    # a scan whose handling began in the old episode is dropped
    assert turn_until_a_job(episodes, episode=old) == (None, 40)
    assert len(episodes.panorama) == 0


def test_a_clock_that_jumps_back_forgets_and_drops_the_running_match():
    episodes = lost()
    assert episodes.on_stamp(100.0) is None
    job, _ = turn_until_a_job(episodes)
    assert episodes.on_stamp(100.5) is None
    assert episodes.on_stamp(100.2) is None     # within clock_jump: scans out of order
    assert episodes.on_stamp(10.0) == pytest.approx(90.2)
    assert episodes.finished(job[0], a_match()) == (False, NO_FIX_OVER)
    assert episodes.gathering()                 # still LOST: a new episode goes on


@pytest.mark.parametrize('stray', [1100.0, 0.0])
def test_one_stray_stamp_off_the_clock_ends_nothing(stray):
    episodes = lost()
    assert episodes.on_stamp(100.0, 100.0) is None
    turn_until_a_job(episodes, steps=5)
    kept, episode = len(episodes.panorama), episodes.episode
    assert kept > 0
    assert episodes.on_stamp(stray, 100.1) is None      # a driver's stray, ahead or behind
    assert episodes.on_stamp(100.2, 100.2) is None
    assert episodes.strays == 1 and episodes.episode == episode
    assert len(episodes.panorama) == kept
    assert episodes.on_stamp(50.0, 50.0) == pytest.approx(50.2)     # a real jump back
    assert episodes.episode == episode + 1 and len(episodes.panorama) == 0


def test_a_clock_reset_with_scans_of_the_old_clock_still_queued_ends_the_episode():
    # A simulator reset (or a looped bag) while scans stamped on the old clock wait in the
    # queue: the first handled after the reset looks like a scan ahead of the clock, and the
    # first of the new clock then like a stray. The clock itself says it went back.
    episodes = lost()
    for k in range(5):
        assert episodes.on_stamp(100.0 + 0.1 * k, 100.0 + 0.1 * k) is None
    job, _ = turn_until_a_job(episodes)
    episode = episodes.episode
    strays = episodes.strays
    assert episodes.on_stamp(100.5, 0.3) == pytest.approx(100.1)
    assert episodes.episode == episode + 1 and len(episodes.panorama) == 0
    assert episodes.skip and episodes.strays == strays + 1     # of the old clock: not gathered
    assert episodes.on_stamp(100.6, 0.35) is None and episodes.skip
    assert episodes.on_stamp(0.4, 0.4) is None and not episodes.skip
    assert episodes.episode == episode + 1 and episodes.strays == strays + 2
    assert episodes.finished(job[0], a_match(), 0.5) == (False, NO_FIX_OVER)


def test_a_match_that_ends_after_the_clock_went_back_gives_no_fix():
    # no scan came since the reset (the laser restarts with the simulator): the clock read
    # when the match ends is enough
    episodes = lost()
    assert episodes.on_stamp(100.0, 100.0) is None
    job, _ = turn_until_a_job(episodes)
    assert episodes.finished(job[0], a_match(), 2.0) == (False, NO_FIX_OVER)
    assert episodes.gathering()                 # still LOST: a new episode goes on


def test_a_match_that_ends_on_the_same_clock_gives_its_fix():
    episodes = lost()
    assert episodes.on_stamp(100.0, 100.0) is None
    job, _ = turn_until_a_job(episodes)
    assert episodes.finished(job[0], a_match(), 100.3) == (True, None)


def test_a_clock_that_lags_the_scans_without_going_back_loses_none():
    # a busy node under a fast simulator: its clock behind the stamps by more than clock_jump
    episodes = lost()
    for k in range(20):
        assert episodes.on_stamp(100.0 + 0.1 * k, 98.0 + 0.1 * k) is None
        assert not episodes.skip
    assert episodes.strays == 0


def test_a_stamp_far_behind_the_clock_is_a_stray_not_gathered():
    episodes = lost()
    assert episodes.on_stamp(100.0, 100.0) is None and not episodes.skip
    assert episodes.on_stamp(95.0, 100.1) is None and episodes.skip
    assert episodes.on_stamp(100.2, 100.2) is None and not episodes.skip
    assert episodes.strays == 1


def test_a_clock_read_late_or_a_gap_in_scans_is_judged_as_before():
    episodes = lost()
    # stamps a little ahead of a clock read late: no jump, no stray
    for k in range(10):
        assert episodes.on_stamp(100.0 + 0.1 * k, 99.0 + 0.1 * k) is None
    # a jump back after a gap in the scans, the clock jumped with them
    assert episodes.on_stamp(200.0, 200.0) is None
    assert episodes.on_stamp(150.0, 150.0) == pytest.approx(50.0)
    # just over clock_jump at 10 Hz
    assert episodes.on_stamp(150.1, 150.1) is None
    assert episodes.on_stamp(149.05, 149.05) == pytest.approx(1.05)
    assert episodes.strays == 0


def turn_matching(episodes, fix=False, steps=40):
    """Scans turning 0.3 rad each, each match finished at once (a fix when ``fix``): the
    share of the headings of every match started, and the returns kept after each."""
    shares, kept = [], []
    for k in range(steps):
        yaw = 0.3 * k
        job = episodes.add_scan(episodes.episode, (0.0, 0.0, yaw, 1.0), (0.0, 0.0, yaw),
                                ANGLES, RANGES, 0.45, 5.0)
        if job is not None:
            shares.append(job[3])
            episodes.finished(job[0], a_match() if fix else None)
            kept.append(len(episodes.panorama))
    return shares, kept


def test_parts_of_a_turn_are_matched_from_partial_share_every_partial_step():
    shares, kept = turn_matching(lost(partial_share=0.5, partial_step=0.2), steps=20)
    assert len(shares) >= 3 and shares[-1] == 1.0
    assert 0.5 <= shares[0] < 0.6
    assert all(b >= a + 0.2 - 1e-9 for a, b in zip(shares[:-2], shares[1:-1]))
    # a part that gave no fix is kept and grows; the full turn starts the panorama again
    assert all(n > 0 for n in kept[:-1]) and kept[-1] == 0
    # off: only full turns
    assert turn_matching(lost(), steps=20)[0] == [1.0]


def test_a_part_that_gives_a_fix_starts_the_panorama_again():
    episodes = lost(partial_share=0.5, fixes=2)
    shares, kept = turn_matching(episodes, fix=True, steps=60)
    # each fix's part is forgotten: the next match waits for half the headings again
    assert len(shares) == 2 and all(0.5 <= share < 0.6 for share in shares)
    assert kept == [0, 0] and episodes.fixes == 2 and not episodes.gathering()


def test_mark_and_forget_marked_keep_only_what_came_since():
    panorama = Panorama(0.1)
    panorama.add([1.0, 2.0], [0.0, 0.0])
    panorama.look(0.0, 1.0)
    panorama.mark()
    panorama.add([2.0, 3.0], [0.0, 0.0])       # 2.0 falls in a square already kept
    panorama.look(2.0, 3.0)
    panorama.forget_marked()
    assert panorama.around((0.0, 0.0, 0.0), 10.0).tolist() == [[3.0, 0.0]]
    assert panorama.looked_share() == pytest.approx(7 / 36)    # 2.0-3.0 rad only


def scan_at(episodes, yaw):
    return episodes.add_scan(episodes.episode, (0.0, 0.0, yaw, 1.0), (0.0, 0.0, yaw),
                             ANGLES, RANGES, 0.45, 5.0)


def test_the_first_part_waits_for_partial_share_only():
    shares, _ = turn_matching(lost(partial_share=0.2, partial_step=0.4), steps=20)
    assert 0.2 <= shares[0] < 0.3 and shares[1] >= shares[0] + 0.4 - 1e-9


@pytest.mark.parametrize('fix', [False, True])
def test_a_turn_that_becomes_full_while_a_part_is_matched(fix):
    episodes = lost(partial_share=0.5)
    yaw, job = 0.0, None
    while job is None:
        yaw += 0.3
        job = scan_at(episodes, yaw)
    assert job[3] < 1.0
    before = len(episodes.panorama)
    for _ in range(12):                         # the turn goes on while the part is matched
        yaw += 0.3
        assert scan_at(episodes, yaw) is None
    assert episodes.panorama.looked_round()
    assert episodes.finished(job[0], a_match() if fix else None)[0] == fix
    if fix:
        # the part is forgotten, what came while it was matched is kept
        assert 0 < len(episodes.panorama) < before + 12 * len(ANGLES)
        assert not episodes.panorama.looked_round()
    else:
        full = scan_at(episodes, yaw + 0.3)     # the full turn, at the next scan
        assert full[3] == 1.0 and len(full[1]) > before and len(episodes.panorama) == 0


def test_a_part_refused_for_the_state_is_kept_and_a_new_episode_starts_over():
    episodes = lost(partial_share=0.5)
    yaw, job = 0.0, None
    while job is None:
        yaw += 0.3
        job = scan_at(episodes, yaw)
    episodes.on_state(State.LOCALIZING)         # a tag's fix came first
    assert episodes.finished(job[0], a_match()) == (False, NO_FIX_STATE)
    assert len(episodes.panorama) > 0           # amcl may not settle the tag's fix
    episodes.on_state(State.LOST)
    assert len(episodes.panorama) > 0 and episodes.fixes == 0
    assert episodes.on_stamp(100.0) is None
    assert episodes.on_stamp(10.0) is not None  # the clock jumps back: a new episode
    assert len(episodes.panorama) == 0
    assert 0.5 <= turn_matching(episodes, steps=20)[0][0] < 0.6
