"""Going closer to a tag seen too far away: core/approach.py, RecoveryCore's APPROACH phase,
the recovery adapter's placing of the tag, and the wander's clearance ahead."""
import logging
import math

import numpy as np
import pytest
from fiducial_msgs.msg import FiducialTransform, FiducialTransformArray

from lost_and_found.core import geometry
from lost_and_found.core.approach import (ARRIVED, Approach, ApproachLimits, approach_point,
                                          region_points, standoff_point, way_seen)
from lost_and_found.core.config import ConfigError
from lost_and_found.core.reactive import ReactiveConfig, ReactiveWander, Scan
from lost_and_found.core.recovery import PREEMPTED, Phase, RecoveryConfig
from lost_and_found.nodes import lost_and_found as nodes
from lost_and_found.state import State
from test_recovery import (DT, ODOM, SCAN, Runner, first_leg_standing, make_core,
                           queue_a_leg_at_once, user_goal_then_lost)
from tool_loader import load_tool

TAG = (ODOM[0] + 4.0, ODOM[1] + 1.0)      # a tag 4.1 m from the put-down, facing -x
FACING = math.pi


def drive(approach, pose, clearance=5.0, seconds=60.0, t=0.0):
    """Integrate the approach's twists from ``pose`` (unicycle, DT steps) until it ends;
    return (outcome, final pose, time)."""
    x, y, yaw = pose
    while t < seconds:
        v, w, outcome = approach.step((x, y, yaw), clearance, t)
        if outcome is not None:
            return outcome, (x, y, yaw), t
        yaw += w * DT
        x += v * DT * math.cos(yaw)
        y += v * DT * math.sin(yaw)
        t = round(t + DT, 6)
    raise AssertionError('the approach did not end within %.0f s' % seconds)


# ----------------------------------------------------------------------- core/approach.py

def test_standoff_point_is_in_front_of_the_tag_or_towards_the_robot():
    assert standoff_point((4.0, 1.0), math.pi, (0.0, 0.0), 1.2) == pytest.approx((2.8, 1.0))
    assert standoff_point((4.0, 1.0), math.pi / 2, (0.0, 0.0), 1.2) == \
        pytest.approx((4.0, 2.2))
    # A tag lying flat: straight towards the robot.
    assert standoff_point((3.0, 4.0), None, (0.0, 0.0), 1.0) == pytest.approx((2.4, 3.2))
    assert standoff_point((3.0, 4.0), None, (3.0, 4.0), 1.0) == pytest.approx((4.0, 4.0))


def polar(point, tag, facing):
    """(distance, angle off the face) of ``point`` seen from a tag at ``tag`` facing ``facing``."""
    dx, dy = point[0] - tag[0], point[1] - tag[1]
    return math.hypot(dx, dy), geometry.wrap_angle(math.atan2(dy, dx) - facing)


def test_a_tag_a_little_too_far_is_approached_along_the_line_of_sight():
    # A tag at the origin facing +x, the robot 4 m away 0.3 rad off its face.
    robot = (4.0 * math.cos(0.3), 4.0 * math.sin(0.3))
    goal = approach_point((0.0, 0.0), 0.0, robot, 1.2, 2.2, 0.75)
    assert polar(goal, (0.0, 0.0), 0.0) == pytest.approx((2.2, 0.3))
    # The same from a tag elsewhere, facing elsewhere.
    tag, facing = (3.0, -2.0), 2.0
    robot = (tag[0] + 4.0 * math.cos(facing - 0.3), tag[1] + 4.0 * math.sin(facing - 0.3))
    assert polar(approach_point(tag, facing, robot, 1.2, 2.2, 0.75), tag, facing) == \
        pytest.approx((2.2, -0.3))


def test_a_tag_seen_obliquely_is_approached_round_towards_its_face():
    # 2 m away, 1.3 rad off the face: the nearest place within 0.75 rad is on that ray, where
    # the robot projects onto it.
    robot = (2.0 * math.cos(1.3), 2.0 * math.sin(1.3))
    goal = approach_point((0.0, 0.0), 0.0, robot, 1.2, 2.2, 0.75)
    assert polar(goal, (0.0, 0.0), 0.0) == pytest.approx((2.0 * math.cos(0.55), 0.75))
    # Far and oblique: the sector's outer corner.
    robot = (5.0 * math.cos(-1.2), 5.0 * math.sin(-1.2))
    goal = approach_point((0.0, 0.0), 0.0, robot, 1.2, 2.2, 0.75)
    assert polar(goal, (0.0, 0.0), 0.0) == pytest.approx((2.2, -0.75))
    # Near and oblique: no nearer than the standoff.
    robot = (0.9 * math.cos(1.4), 0.9 * math.sin(1.4))
    goal = approach_point((0.0, 0.0), 0.0, robot, 1.2, 2.2, 0.75)
    assert polar(goal, (0.0, 0.0), 0.0) == pytest.approx((1.2, 0.75))
    # Behind the tag's wall: round to its face.
    goal = approach_point((0.0, 0.0), 0.0, (-3.0, 0.5), 1.2, 2.2, 0.75)
    distance, angle = polar(goal, (0.0, 0.0), 0.0)
    assert 1.2 - 1e-9 <= distance <= 2.2 + 1e-9 and angle == pytest.approx(0.75)


def test_the_approach_point_is_the_nearest_place_within_the_limits():
    tag, facing, limits = (1.0, 2.0), -0.7, (1.2, 2.2, 0.75)
    rng = np.random.default_rng(3)
    # The region, densely sampled.
    r = rng.uniform(limits[0], limits[1], 20000)
    a = facing + rng.uniform(-limits[2], limits[2], 20000)
    region = np.column_stack([tag[0] + r * np.cos(a), tag[1] + r * np.sin(a)])
    for _ in range(200):
        robot = (tag[0] + rng.uniform(-6.0, 6.0), tag[1] + rng.uniform(-6.0, 6.0))
        distance, angle = polar(robot, tag, facing)
        goal = approach_point(tag, facing, robot, *limits)
        if limits[0] <= distance <= limits[1] and abs(angle) <= limits[2]:
            assert goal == pytest.approx(standoff_point(tag, facing, robot, limits[0]))
            continue
        d, g = polar(goal, tag, facing)
        assert limits[0] - 1e-9 <= d <= limits[1] + 1e-9 and abs(g) <= limits[2] + 1e-9
        best = np.min(np.hypot(region[:, 0] - robot[0], region[:, 1] - robot[1]))
        assert math.hypot(goal[0] - robot[0], goal[1] - robot[1]) <= best + 1e-9


def test_within_the_limits_or_with_them_closed_the_approach_point_is_the_standoff_point():
    tag, facing = (4.0, 1.0), math.pi
    # Already 2 m in front, 0.5 rad off the face (a tag refused for its noise): head-on.
    robot = (tag[0] + 2.0 * math.cos(facing + 0.5), tag[1] + 2.0 * math.sin(facing + 0.5))
    assert approach_point(tag, facing, robot, 1.2, 2.2, 0.75) == pytest.approx((2.8, 1.0))
    # max_distance = standoff and no view angle: always the standoff point.
    for robot in [(0.0, 0.0), (4.0, 6.0), (9.0, 1.0), (3.5, 0.9)]:
        assert approach_point(tag, facing, robot, 1.2, 1.2, 0.0) == \
            pytest.approx(standoff_point(tag, facing, robot, 1.2))


def test_a_flat_tag_is_approached_straight_to_the_farthest_distance():
    assert approach_point((3.0, 4.0), None, (0.0, 0.0), 1.0, 2.0, 0.75) == \
        pytest.approx((1.8, 2.4))
    # Within the limits: the standoff towards the robot; too near: out to the standoff.
    assert approach_point((3.0, 4.0), None, (1.8, 2.4), 1.0, 2.0, 0.75) == \
        pytest.approx((2.4, 3.2))
    assert approach_point((3.0, 4.0), None, (3.0, 4.5), 1.0, 2.0, 0.75) == \
        pytest.approx((3.0, 5.0))


def test_an_approach_turns_drives_and_ends_facing_the_tag():
    approach = Approach(7, (4.0, 1.0), (2.8, 1.0), 0.0, ApproachLimits())
    # Facing away: turn in place first.
    v, w, outcome = approach.step((0.0, 0.0, math.pi), 5.0, 0.0)
    assert v == 0.0 and w != 0.0 and outcome is None
    outcome, (x, y, yaw), _ = drive(approach, (0.0, 0.0, math.pi))
    assert outcome == 'arrived'
    assert math.hypot(x - 2.8, y - 1.0) <= ARRIVED
    assert abs(geometry.wrap_angle(math.atan2(1.0 - y, 4.0 - x) - yaw)) <= 0.1 + 1e-9


def test_an_approach_never_drives_faster_than_its_limits():
    limits = ApproachLimits(max_speed=0.15, turn_speed=0.8)
    approach = Approach(7, (9.0, 0.0), (8.0, 0.0), 0.0, limits)
    for k in range(50):
        v, w, _ = approach.step((0.0, 0.0, 0.3 * (-1) ** k), 5.0, k * DT)
        assert 0.0 <= v <= 0.15 and abs(w) <= 0.8 + 1e-12


def test_an_obstacle_ahead_stops_the_approach_and_ends_it_when_it_stays():
    approach = Approach(7, (4.0, 0.0), (2.8, 0.0), 0.0, ApproachLimits(blocked_time=2.0))
    assert approach.step((0.0, 0.0, 0.0), 5.0, 0.0)[0] > 0.0
    assert approach.step((0.0, 0.0, 0.0), 0.3, 0.1) == (0.0, 0.0, None)
    assert approach.step((0.0, 0.0, 0.0), 5.0, 0.2)[0] > 0.0     # cleared: drives again
    assert approach.step((0.0, 0.0, 0.0), 0.0, 0.3) == (0.0, 0.0, None)  # 0: unknown, blocks
    assert approach.step((0.0, 0.0, 0.0), 0.3, 2.2) == (0.0, 0.0, None)
    assert approach.step((0.0, 0.0, 0.0), 0.3, 2.4) == (0.0, 0.0, 'blocked')


def test_an_approach_times_out_and_a_clock_jump_keeps_what_remains():
    approach = Approach(7, (40.0, 0.0), (38.8, 0.0), 0.0, ApproachLimits(timeout=30.0))
    assert approach.step((0.0, 0.0, 0.0), 5.0, 29.9)[2] is None
    approach.shift(-100.0)          # the clock jumped back 100 s at 29.9
    assert approach.step((0.0, 0.0, 0.0), 5.0, -70.2)[2] is None
    assert approach.step((0.0, 0.0, 0.0), 5.0, -70.0)[2] == 'timed out'


def kinect(ranges_of, beams=65):
    """A scan over the Kinect's +-0.5 rad whose beam at bearing ``a`` reads ``ranges_of(a)``."""
    inc = 1.0 / (beams - 1)
    return Scan(ranges=[ranges_of(-0.5 + k * inc) for k in range(beams)], angle_min=-0.5,
                angle_increment=inc, range_min=0.45, range_max=5.0)


def test_the_laser_shows_a_way_clear_blocked_or_cannot_tell():
    wall = kinect(lambda a: 2.0 / math.cos(a))         # a wall across, 2 m ahead
    assert way_seen((1.5, 0.0), wall, None, 0.23) == 'clear'
    assert way_seen((1.5, 0.3), wall, None, 0.23) == 'clear'
    assert way_seen((2.5, 0.0), wall, None, 0.23) == 'blocked'
    # Its end within half a width of the wall: the robot would not fit there.
    assert way_seen((1.85, 0.0), wall, None, 0.23) == 'blocked'
    # Out of the laser's view (1 rad to the right): it cannot tell.
    assert way_seen((0.8, -1.3), wall, None, 0.23) == 'unknown'
    # An obstacle remembered from an earlier scan, beside the view, on the way.
    assert way_seen((0.8, -1.3), wall, np.array([[0.4, -0.6]]), 0.23) == 'blocked'
    assert way_seen((1.5, 0.0), wall, np.array([[0.8, 0.1], [np.nan, 0.0]]), 0.23) == \
        'blocked'
    # Open space (no return within range_max) is clear up to range_max.
    far = kinect(lambda a: math.inf)
    assert way_seen((4.0, 0.0), far, None, 0.23) == 'clear'
    assert way_seen((5.5, 0.0), far, None, 0.23) == 'unknown'
    # A depth camera's NaN tells nothing; REP 117's -inf is something nearer than range_min.
    assert way_seen((1.5, 0.0), kinect(lambda a: math.nan), None, 0.23) == 'unknown'
    assert way_seen((1.5, 0.0), kinect(lambda a: -math.inf), None, 0.23) == 'blocked'
    assert way_seen((0.0, 0.0), wall, None, 0.23) == 'clear'         # already there


def test_a_scan_whose_limits_say_nothing_is_refused_with_the_value():
    """The recovery node catches the error, warns and goes to the nearest place."""
    bad = Scan(ranges=[2.0] * 5, angle_min=-0.5, angle_increment=0.25, range_min=0.45,
               range_max=math.nan)
    with pytest.raises(ValueError, match='range_max=nan'):
        way_seen((1.5, 0.0), bad, None, 0.23)
    # A negative range_min is 0: a negative range is no return, not a mirrored point.
    below = Scan(ranges=[-1.0] * 5, angle_min=-0.5, angle_increment=0.25, range_min=-2.0,
                 range_max=5.0)
    assert way_seen((1.5, 0.0), below, None, 0.23) == 'unknown'


def test_the_region_points_lie_within_the_approach_limits():
    tag, facing = (1.0, 2.0), -0.7
    points = region_points(tag, facing, 1.2, 2.2, 0.75)
    assert len(points) == 45
    polars = [polar(p, tag, facing) for p in points]
    assert all(1.2 - 1e-9 <= d <= 2.2 + 1e-9 and abs(a) <= 0.75 + 1e-9 for d, a in polars)
    # Its corners and its centre line are among them.
    for d, a in [(1.2, -0.75), (2.2, 0.75), (1.7, 0.0)]:
        assert any(abs(pd - d) < 1e-9 and abs(pa - a) < 1e-9 for pd, pa in polars)
    # A tag lying flat: every direction.
    flat = [polar(p, tag, 0.0)[1] for p in region_points(tag, None, 1.2, 2.2, 0.75)]
    assert min(flat) == pytest.approx(-math.pi) and max(flat) > 2.4


# ----------------------------------------------------------------------- RecoveryCore

def lost_on_a_leg(**overrides):
    """A spiral episode with its first leg in flight: (core, runner, the leg's command)."""
    core = make_core(**overrides)
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    core.on_odom(*ODOM, runner.t, 'odom', 0.0)
    leg = runner.until(lambda c: c.send_goal is not None)
    feed(core, runner)
    return core, runner, leg


def feed(core, runner, pose=(ODOM[0], ODOM[1], 0.0)):
    """Fresh odometry and a scan at ``pose`` now."""
    core.on_odom(pose[0], pose[1], runner.t, 'odom', pose[2])
    core.on_scan(SCAN, runner.t)


def follow(core, runner, pose, seconds):
    """Step the core, moving the odometry by its twists; return (pose, commands)."""
    x, y, yaw = pose
    commands = []
    for _ in range(int(round(seconds / DT))):
        command = runner.step()
        commands.append(command)
        if command.twist is not None:
            v, w = command.twist
            yaw += w * DT
            x += v * DT * math.cos(yaw)
            y += v * DT * math.sin(yaw)
        feed(core, runner, (x, y, yaw))
    return (x, y, yaw), commands


def test_a_distant_tag_cancels_the_leg_and_the_robot_drives_to_it_then_searches_on():
    # Nothing here drives the legs, so the stall check would end them and the search would
    # fall back to the wander before the 30 s are over: off, to follow one approach.
    core, runner, leg = lost_on_a_leg(leg_stall_time=0.0)
    core.on_distant_tags([(5, TAG[0], TAG[1], FACING)], runner.t)
    command = runner.step()
    assert command.cancel and core.phase == Phase.APPROACH
    core.on_goal_done(PREEMPTED, True, runner.t, leg.goal_tag)    # the cancelled leg: ignored
    assert core.phase == Phase.APPROACH
    pose, commands = follow(core, runner, (ODOM[0], ODOM[1], 0.0), 30.0)
    # It reached the line of sight 2.2 m from the tag (seen 0.24 rad off its face), faced
    # it, stood, then spun.
    bearing = math.atan2(ODOM[1] - TAG[1], ODOM[0] - TAG[0])
    goal = (TAG[0] + 2.2 * math.cos(bearing), TAG[1] + 2.2 * math.sin(bearing))
    assert math.hypot(pose[0] - goal[0], pose[1] - goal[1]) <= ARRIVED + 0.05
    spin_at = next(k for k, c in enumerate(commands) if c.twist is not None
                   and c.twist[0] == 0.0 and c.twist[1] == pytest.approx(1.2566, abs=1e-4)
                   and core.phase in (Phase.SPIN, Phase.LEG))
    stood = [c.twist for c in commands[spin_at - int(round(1.0 / DT)):spin_at]]
    assert stood and all(t == (0.0, 0.0) for t in stood)
    # The spin's end sends the next spiral leg: the search goes on.
    assert any(c.send_goal is not None for c in commands[spin_at:])
    assert core.legs_sent >= 2


#: A corridor along x, 1.4 m wide, the robot in its middle at ODOM facing down it, and a tag
#: on its left wall 1.7 m ahead, facing across it: seen 1.18 rad off its face, a grazing angle.
CORRIDOR_TAG = (ODOM[0] + 1.7, ODOM[1] + 0.7)


def corridor_scan(bearing):
    """The Kinect's range at ``bearing`` (robot frame) in the corridor: its side walls 0.7 m
    either side, nothing ahead within range."""
    side = abs(math.sin(bearing))
    return 0.7 / side if side > 0.7 / 5.0 else math.inf


@pytest.mark.parametrize('clear_way', [False, True])
def test_a_tag_at_a_grazing_angle_is_approached_where_the_laser_shows_the_way_clear(
        clear_way, caplog):
    caplog.set_level(logging.INFO, logger='rosout')
    core = make_core(strategy='reactive', approach_clear_way=clear_way)
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    core.on_odom(ODOM[0], ODOM[1], runner.t, 'odom', 0.0)
    # The spin so far has shown the right-hand wall (remembered); the laser now faces the tag.
    core.on_scan(kinect(corridor_scan), runner.t)
    for turned in (-0.5, -1.0):
        core.on_odom(ODOM[0], ODOM[1], runner.t, 'odom', turned)
        core.on_scan(kinect(corridor_scan if turned == -0.5 else
                            lambda a: corridor_scan(a + turned)), runner.t)
    core.on_odom(ODOM[0], ODOM[1], runner.t, 'odom', 0.4)
    core.on_scan(kinect(lambda a: corridor_scan(a + 0.4)), runner.t)
    core.on_distant_tags([(5, CORRIDOR_TAG[0], CORRIDOR_TAG[1], -math.pi / 2)], runner.t)
    runner.step()
    assert core.phase == Phase.APPROACH
    nearest = approach_point(CORRIDOR_TAG, -math.pi / 2, ODOM, 1.2, 2.2, 0.75)
    # The nearest place is 0.18 m from the right-hand wall: the robot does not fit there.
    assert nearest[1] < ODOM[1] - 0.7 + 0.23
    goal = core._approach.goal
    if not clear_way:
        assert goal == pytest.approx(nearest)
        return
    # Instead: a place of the same region the robot fits in, nearest of those seen clear.
    distance, angle = polar(goal, CORRIDOR_TAG, -math.pi / 2)
    assert 1.2 - 1e-9 <= distance <= 2.2 + 1e-9 and abs(angle) <= 0.75 + 1e-9
    assert ODOM[1] - 0.7 + 0.23 <= goal[1] <= ODOM[1] + 0.7 - 0.23
    assert math.hypot(goal[0] - ODOM[0], goal[1] - ODOM[1]) < 2.0
    assert 'the laser shows the way to (%.2f, %.2f), the nearest place to see tag 5 from, ' \
        'blocked: going to (%.2f, %.2f) instead' % (nearest + goal) in caplog.text


def test_an_approach_keeps_the_nearest_place_when_the_laser_shows_nothing_clear(caplog):
    caplog.set_level(logging.INFO, logger='rosout')
    core = make_core(strategy='reactive', approach_clear_way=True)
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    core.on_odom(ODOM[0], ODOM[1], runner.t, 'odom', 0.0)
    core.on_scan(kinect(lambda a: math.nan), runner.t)        # a depth camera seeing nothing
    core.on_distant_tags([(5, CORRIDOR_TAG[0], CORRIDOR_TAG[1], -math.pi / 2)], runner.t)
    runner.step()
    assert core._approach.goal == pytest.approx(
        approach_point(CORRIDOR_TAG, -math.pi / 2, ODOM, 1.2, 2.2, 0.75))
    assert 'the laser does not see the way to' in caplog.text
    assert 'nor any other place of it clear: going there all the same' in caplog.text


def test_an_approach_whose_places_cannot_be_weighed_goes_to_the_nearest_place(
        monkeypatch, caplog):
    from lost_and_found.core import recovery

    def broken(*_args):
        raise ValueError('a broken region')
    monkeypatch.setattr(recovery, 'region_points', broken)
    core = make_core(strategy='reactive', approach_clear_way=True)
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    core.on_odom(ODOM[0], ODOM[1], runner.t, 'odom', 0.0)
    core.on_scan(kinect(lambda a: 1.0), runner.t)
    core.on_distant_tags([(5, CORRIDOR_TAG[0], CORRIDOR_TAG[1], -math.pi / 2)], runner.t)
    runner.step()
    assert core._approach.goal == pytest.approx(
        approach_point(CORRIDOR_TAG, -math.pi / 2, ODOM, 1.2, 2.2, 0.75))
    assert 'cannot read the scan for the approach\'s way (a broken region)' in caplog.text


def test_a_distant_tag_seen_during_a_spin_is_approached_after_the_spin_without_at_once():
    core = make_core(strategy='reactive', approach_at_once=False)
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    feed(core, runner)
    runner.step()
    spin_end = core._phase_end
    core.on_distant_tags([(5, TAG[0], TAG[1], FACING)], runner.t)
    runner.until(lambda c: core.phase != Phase.SPIN, limit=6.0)
    # The whole turn first (5 s at the default spin_speed), then the approach.
    assert core.phase == Phase.APPROACH
    assert runner.t == pytest.approx(spin_end, abs=1.5 * DT)


@pytest.mark.parametrize('strategy', ['reactive', 'spiral'])
def test_a_distant_tag_seen_during_a_spin_cuts_the_spin_short(strategy):
    core = make_core(strategy=strategy, approach_at_once=True)
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    feed(core, runner)
    runner.run(1.0)
    assert core.phase == Phase.SPIN
    core.on_distant_tags([(5, TAG[0], TAG[1], FACING)], runner.t)
    command = runner.step()
    # The very next step stops the turn and starts the approach; nothing was sent to
    # move_base (the spin comes before the first spiral leg).
    assert core.phase == Phase.APPROACH and command.twist == (0.0, 0.0)
    assert command.send_goal is None and not command.cancel
    assert core.legs_sent == 0


def test_the_log_line_of_an_approach_says_whether_it_cut_a_spin_short(caplog):
    # tools/recovery_failures.py reads these lines back from rosout.log.
    caplog.set_level(logging.INFO, logger='rosout')
    failures = load_tool('recovery_failures')
    head = '12.500000000 INFO /lost_and_found [recovery.py:1(f)] [topics: /rosout] '
    core = make_core(strategy='spiral', approach_at_once=True)
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    feed(core, runner)
    runner.run(1.0)
    left = core._phase_end - runner.t - DT
    caplog.clear()
    core.on_distant_tags([(5, TAG[0], TAG[1], FACING)], runner.t)
    runner.step()
    [line] = [r.getMessage() for r in caplog.records if 'seen' in r.getMessage()]
    match = failures.SPIN_CUT.match(head + line)
    assert match and match.group(2) == '5'
    assert float(match.group(3)) == pytest.approx(left, abs=0.06)
    # Leaving a leg: an approach, no spin cut.
    core, runner, _ = lost_on_a_leg()
    caplog.clear()
    core.on_distant_tags([(5, TAG[0], TAG[1], FACING)], runner.t)
    runner.step()
    [line] = [r.getMessage() for r in caplog.records if 'seen' in r.getMessage()]
    assert failures.APPROACH.match(head + line) and not failures.SPIN_CUT.match(head + line)


def test_a_look_around_spin_is_cut_short_too():
    core = make_core(strategy='reactive', look_around_every=1.0, approach_at_once=True)
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    feed(core, runner)
    runner.until(lambda c: core.phase == Phase.WANDER, limit=10.0)
    pose = (ODOM[0], ODOM[1], 0.0)
    for _ in range(int(round(20.0 / DT))):
        if core.phase != Phase.WANDER:
            break
        pose, _ = follow(core, runner, pose, DT)
    assert core.phase == Phase.SPIN     # the look-around after 1 m of wander
    core.on_distant_tags([(5, TAG[0], TAG[1], FACING)], runner.t)
    runner.step()
    assert core.phase == Phase.APPROACH


def phases(core, runner, seconds):
    """The phases of ``seconds`` of control steps, the robot standing still at ODOM."""
    seen = []
    for _ in range(int(round(seconds / DT))):
        runner.step()
        feed(core, runner)
        seen.append(core.phase)
    return seen


def test_a_tag_is_approached_at_most_approach_tries_times_per_episode():
    core, runner, _ = lost_on_a_leg(approach_tries=1)
    core.wander.clearance = 0.1     # blocked straight away: each approach ends after 2 s
    core.on_distant_tags([(5, TAG[0], TAG[1], FACING)], runner.t)
    assert Phase.APPROACH in phases(core, runner, 1.0)
    assert phases(core, runner, 3.0)[-1] == Phase.SPIN      # blocked: spin, search on
    core.on_distant_tags([(5, TAG[0], TAG[1], FACING)], runner.t)
    assert Phase.APPROACH not in phases(core, runner, 10.0)
    core.on_distant_tags([(6, TAG[0], TAG[1], FACING)], runner.t)      # another tag: yes
    assert Phase.APPROACH in phases(core, runner, 6.0)
    # A new episode forgets the count.
    core.on_state(State.IDLE, runner.t)
    core.on_state(State.LOST, runner.t)
    runner.step()
    core.on_distant_tags([(5, TAG[0], TAG[1], FACING)], runner.t)
    assert Phase.APPROACH in phases(core, runner, 6.0)


def test_the_nearest_tag_with_tries_left_is_approached():
    core, runner, _ = lost_on_a_leg(approach_tries=1)
    core.wander.clearance = 0.1     # blocked straight away: each approach ends after 2 s
    near, far = (5, TAG[0], TAG[1], FACING), (6, TAG[0] + 3.0, TAG[1], FACING)
    core.on_distant_tags([far, near], runner.t)
    runner.step()
    assert core.phase == Phase.APPROACH and core._approach.fiducial_id == 5
    phases(core, runner, 3.0)
    # Tag 5 has used its try: a frame with both tags sends the robot to tag 6.
    core.on_distant_tags([near, far], runner.t)
    seen = phases(core, runner, 6.0)
    assert Phase.APPROACH in seen
    assert core._approached == {5: 1, 6: 1}


def test_an_approach_times_out_even_without_odometry_or_scan():
    core, runner, _ = lost_on_a_leg(approach_timeout=5.0)
    core.on_distant_tags([(5, TAG[0], TAG[1], FACING)], runner.t)
    runner.step()
    assert core.phase == Phase.APPROACH
    # The base driver and the laser fall silent: the robot stands, and the approach still ends
    # at its timeout (then the spin, and the search, go on).
    seen = []
    for _ in range(int(round(8.0 / DT))):
        runner.step()
        seen.append(core.phase)
    assert seen.count(Phase.APPROACH) == pytest.approx(5.0 / DT, abs=2)
    assert seen[seen.count(Phase.APPROACH)] == Phase.SPIN


def test_leaving_the_wander_for_an_approach_stops_the_wander_at_once():
    core = make_core(strategy='reactive')
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    feed(core, runner)
    runner.until(lambda c: core.phase == Phase.WANDER, limit=10.0)
    feed(core, runner)
    core.on_distant_tags([(5, ODOM[0] - 4.0, ODOM[1], 0.0)], runner.t)   # behind the robot
    command = runner.step()
    assert core.phase == Phase.APPROACH and command.twist == (0.0, 0.0)


def test_leaving_lost_during_an_approach_stops_the_robot():
    core, runner, _ = lost_on_a_leg()
    core.on_distant_tags([(5, TAG[0], TAG[1], FACING)], runner.t)
    follow(core, runner, (ODOM[0], ODOM[1], 0.0), 3.0)
    assert core.phase == Phase.APPROACH
    core.on_state(State.LOCALIZING, runner.t)      # the tag gave a fix
    command = runner.step()
    assert command.twist == (0.0, 0.0) and not command.cancel
    assert core.phase == Phase.IDLE
    assert runner.run(5.0) == []


def test_the_search_budget_ends_an_approach_too():
    core, runner, _ = lost_on_a_leg(max_search_time=20.0)
    core.on_distant_tags([(5, (ODOM[0] + 30.0), ODOM[1], FACING)], runner.t)
    _, commands = follow(core, runner, (ODOM[0], ODOM[1], 0.0), 15.0)
    assert core.phase == Phase.GAVE_UP
    assert any(c.request_state == State.NEED_HELP for c in commands)
    assert core.saved_goal is not None


@pytest.mark.parametrize('when', ['not lost', 'switched off', 'non-finite'])
def test_distant_tags_are_ignored_outside_a_search_or_when_bad(when, caplog):
    core, runner, _ = lost_on_a_leg(approach_tags=(when != 'switched off'))
    if when == 'not lost':
        core.on_state(State.LOCALIZING, runner.t)
        runner.step()
    x = math.nan if when == 'non-finite' else TAG[0]
    core.on_distant_tags([(5, x, TAG[1], FACING)], runner.t)
    follow(core, runner, (ODOM[0], ODOM[1], 0.0), 2.0)
    assert core.phase != Phase.APPROACH
    if when == 'non-finite':
        assert 'non-finite' in caplog.text


def test_strategy_none_never_approaches():
    core = make_core(strategy='none')
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    feed(core, runner)
    core.on_distant_tags([(5, TAG[0], TAG[1], FACING)], runner.t)
    commands = runner.run(10.0)
    assert core.phase == Phase.WAIT
    assert all(c.twist in (None, (0.0, 0.0)) for c in commands)


@pytest.mark.parametrize('name, value', [
    ('approach_tags', 'yes'), ('approach_standoff', -1.0), ('approach_timeout', 0.0),
    ('approach_tries', 0), ('approach_tries', 1.5), ('approach_dwell', math.nan),
    ('approach_standoff', 0.7), ('approach_max_distance', math.inf),
    ('approach_max_view_angle', -0.1), ('approach_max_view_angle', math.pi / 2),
    ('approach_max_view_angle', math.nan), ('approach_at_once', 1),
    ('approach_clear_way', 'yes')])
def test_bad_approach_parameters_are_refused_by_name(name, value):
    with pytest.raises(ConfigError, match=name):
        RecoveryConfig(**{name: value}).validate()


def test_a_farthest_distance_nearer_than_the_standoff_names_both_values():
    with pytest.raises(ConfigError, match=r'approach_max_distance=1\.0.*approach_standoff=1\.2'):
        RecoveryConfig(approach_max_distance=1.0).validate()


def test_a_standoff_inside_the_stop_distance_names_both_values():
    with pytest.raises(ConfigError, match=r'approach_standoff=0\.9.*stop_distance=0\.8'):
        RecoveryConfig(approach_standoff=0.9, reactive_stop_distance=0.8).validate()


# ----------------------------------------------------------------------- the adapter

def tag_transform(fiducial_id, xyz, quaternion):
    """A FiducialTransform of a tag at ``xyz`` in the camera frame."""
    ft = FiducialTransform(fiducial_id=fiducial_id)
    t, q = ft.transform.translation, ft.transform.rotation
    t.x, t.y, t.z = xyz
    q.x, q.y, q.z, q.w = quaternion
    return ft


def test_distant_tags_are_placed_on_the_floor_with_their_facing():
    # The camera's optical frame (z forward, x right, y down) at (1, 2) in odom, heading +y.
    optical = np.array([[0.0, 0.0, 1.0, 0.0], [-1.0, 0.0, 0.0, 0.0],
                        [0.0, -1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
    t_odom_cam = geometry.compose(geometry.make_transform(
        (0.0, 0.0, math.sin(math.pi / 4), math.cos(math.pi / 4)), (1.0, 2.0, 0.3)), optical)
    # Tags ahead facing the camera: their z axis points back at it (rotation pi about y).
    facing_back = (0.0, 1.0, 0.0, 0.0)
    far = tag_transform(3, (0.5, 0.0, 6.0), facing_back)
    near = tag_transform(9, (0.0, 0.1, 4.0), facing_back)
    broken = tag_transform(4, (0.0, 0.0, 1.0), (0.0, 0.0, 0.0, 0.0))
    msg = FiducialTransformArray(transforms=[far, broken, near])
    placed = nodes.tags_on_floor(msg, t_odom_cam)
    assert [tag[0] for tag in placed] == [3, 9]         # the broken transform is dropped
    assert placed[0][1:3] == pytest.approx((1.5, 8.0))     # 0.5 m to the right: +x
    assert placed[1][1:3] == pytest.approx((1.0, 6.0))
    assert placed[1][3] == pytest.approx(-math.pi / 2)
    # A tag lying flat (its z axis vertical): no facing.
    half = math.pi / 4
    flat = tag_transform(2, (0.0, 0.0, 3.0), (math.sin(half), 0.0, 0.0, math.cos(half)))
    assert nodes.tags_on_floor(FiducialTransformArray(transforms=[flat]),
                               t_odom_cam)[0][3] is None
    assert nodes.tags_on_floor(FiducialTransformArray(transforms=[broken]), t_odom_cam) == []


# ----------------------------------------------------------------------- the wander

def test_the_wander_tells_the_clearance_ahead_from_the_scan_and_memory():
    wander = ReactiveWander(ReactiveConfig())
    ranges = [3.0] * 9
    ranges[4] = 1.4                          # the beam straight ahead
    scan = Scan(ranges=ranges, angle_min=-0.4, angle_increment=0.1, range_min=0.1,
                range_max=5.0)
    assert wander.clearance_ahead(scan) == pytest.approx(1.4)
    assert wander.clearance_ahead(scan, np.array([[0.8, 0.05], [0.3, 2.0]])) == \
        pytest.approx(0.8)
    blind = Scan(ranges=[math.nan] * 9, angle_min=-0.4, angle_increment=0.1, range_min=0.1,
                 range_max=5.0)
    assert wander.clearance_ahead(blind) == 0.0
    bad = Scan(ranges=ranges, angle_min=-0.4, angle_increment=0.0, range_min=0.1,
               range_max=5.0)
    assert wander.clearance_ahead(bad) == 0.0
    assert wander.state.value == 'STOPPED'   # the state machine was left alone


def test_approach_limits_default_to_the_wanders_speeds_and_stop_distance():
    limits, wander = ApproachLimits(), ReactiveConfig()
    assert (limits.max_speed, limits.turn_speed, limits.stop_distance) == (
        wander.max_speed, wander.max_turn_speed, wander.stop_distance)


def test_a_leg_queued_in_the_step_a_distant_tag_is_seen_is_not_sent():
    # A leg ends where the last spin ended, so the next is queued at once; in the same
    # control period a distant tag is reported: the approach takes over, and the queued leg
    # must not reach move_base, which would drive it while the approach drives the twists.
    core = make_core(leg_stall_time=0.0)
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    queue_a_leg_at_once(core, runner, first_leg_standing(core, runner))
    core.on_distant_tags([(5, TAG[0], TAG[1], FACING)], runner.t)
    command = runner.step()
    assert core.phase == Phase.APPROACH and command.send_goal is None


def test_an_empty_scan_during_an_approach_stands_the_robot_still():
    # A LaserScan without beams: the real wander's clearance ahead is 0 (nothing known
    # ahead), so the approach stands, instead of the control step raising every period.
    core = make_core(strategy='reactive')
    core.wander = ReactiveWander(ReactiveConfig())
    runner = Runner(core)
    core.on_state(State.LOST, runner.t)
    feed(core, runner)
    core.on_distant_tags([(5, TAG[0], TAG[1], FACING)], runner.t)
    runner.step()
    assert core.phase == Phase.APPROACH
    core.on_odom(ODOM[0], ODOM[1], runner.t, 'odom', 0.0)
    core.on_scan(Scan(ranges=(), angle_min=-1.0, angle_increment=0.5, range_min=0.1,
                      range_max=10.0), runner.t)
    command = runner.step()
    assert command.twist is None or command.twist[0] == 0.0
    assert core.wander.clearance_ahead(core._scan) == 0.0


class _StepFails:
    """Stands in for a RecoveryCore whose control step raises, in a given phase."""

    def __init__(self, phase):
        """In ``phase``; no goal saved."""
        self.phase = phase
        self.saved_goal = None

    def step(self, _t):
        """Fails, as a bug would."""
        raise ValueError('a bug')


@pytest.mark.parametrize('phase, stopped', [(Phase.SPIN, True), (Phase.WANDER, True),
                                            (Phase.APPROACH, True), (Phase.STEP, True),
                                            (Phase.LEG, False),
                                            (Phase.LOOK, False), (Phase.IDLE, False)])
def test_a_control_step_that_fails_stops_the_robot_when_this_node_drives_it(
        phase, stopped, monkeypatch):
    import rospy
    monkeypatch.setattr(rospy, 'get_time', lambda: 5.0)
    errors = []
    monkeypatch.setattr(rospy, 'logerr_throttle', lambda _period, text: errors.append(text))
    core = make_core()
    node = nodes.RecoveryNode(core, core.config)
    node._core = _StepFails(phase)
    twists = []
    node._cmd_pub = type('Pub', (), {'publish': lambda _self, msg: twists.append(msg)})()
    node._publish_saved_goal = lambda: None
    node._on_timer(None)
    assert len(errors) == 1 and 'a bug' in errors[0]
    assert [(t.linear.x, t.angular.z) for t in twists] == ([(0.0, 0.0)] if stopped else [])
