"""sim/controller.py: pure-pursuit following, obstacle stop, progress, goal execution."""
import dataclasses
import math
import os

import numpy as np
import pytest
import yaml
from hypothesis import given, settings, strategies as st

from lost_and_found.core.config import ConfigError, config_from_params
from lost_and_found.sim.controller import Command, FollowerConfig, Navigation, \
    NavigatorConfig, Outcome, PathFollower, Status, scan_points, wrap_angle
from lost_and_found.sim.gridmap import GridMap
from lost_and_found.sim.planner import Planner

DT = 0.1
CONFIG_YAML = os.path.join(os.path.dirname(__file__), '..', '..', 'config', 'sim_navigator.yaml')


def integrate(pose, command, dt=DT):
    """Ideal differential-drive kinematics (exact arc) for one period."""
    x, y, yaw = pose
    v, w = command.linear, command.angular
    if abs(w) < 1e-9:
        return x + v * dt * math.cos(yaw), y + v * dt * math.sin(yaw), yaw
    r = v / w
    return (x + r * (math.sin(yaw + w * dt) - math.sin(yaw)),
            y - r * (math.cos(yaw + w * dt) - math.cos(yaw)), wrap_angle(yaw + w * dt))


def drive(follower, pose, steps, obstacles_of=None, t0=0.0):
    """Run the follower in a loop; returns the final pose, time and every command."""
    commands = []
    now = t0
    for _ in range(steps):
        obstacles = obstacles_of(pose) if obstacles_of else None
        command = follower.compute(*pose, now, obstacles=obstacles)
        commands.append(command)
        if command.status in (Status.REACHED, Status.NO_PROGRESS):
            break
        pose = integrate(pose, command)
        now += DT
    return pose, now, commands


def straight(x0, y0, x1, y1, spacing=0.1):
    """A straight path with waypoints every ``spacing`` metres."""
    n = max(1, int(math.ceil(math.hypot(x1 - x0, y1 - y0) / spacing)))
    t = np.linspace(0.0, 1.0, n + 1)
    return list(zip(x0 + t * (x1 - x0), y0 + t * (y1 - y0)))


def test_reaches_a_straight_line_goal_within_tolerances_and_limits():
    follower = PathFollower()
    follower.set_path(straight(0, 0, 3, 0), 0.5, 0.0)
    pose, now, commands = drive(follower, (0.0, 0.0, 0.0), 400)
    assert commands[-1].status is Status.REACHED
    assert math.hypot(pose[0] - 3.0, pose[1]) <= 0.2
    assert abs(wrap_angle(pose[2] - 0.5)) <= 0.3
    assert all(0.0 <= c.linear <= 0.3 + 1e-9 and abs(c.angular) <= 1.0 + 1e-9 for c in commands)
    assert max(c.linear for c in commands) == pytest.approx(0.3)
    assert now < 3.0 / 0.3 + 8.0                 # no dawdling: ~10 s of driving plus slowdown
    assert commands[-1] == Command(0.0, 0.0, Status.REACHED)


def test_slows_down_near_the_goal():
    follower = PathFollower()
    follower.set_path(straight(0, 0, 3, 0), None, 0.0)
    far = follower.compute(0.0, 0.0, 0.0, 0.0)
    near = follower.compute(2.7, 0.0, 0.0, 0.1)
    assert far.linear == pytest.approx(0.3)
    assert 0.05 <= near.linear < 0.2


def test_rotates_in_place_first_for_a_goal_behind():
    follower = PathFollower()
    follower.set_path(straight(0, 0, -2, 0), None, 0.0)
    pose, _, commands = drive(follower, (0.0, 0.0, 0.0), 300)
    assert commands[0].status is Status.ROTATING
    assert commands[0].linear == 0.0 and abs(commands[0].angular) == pytest.approx(1.0)
    rotating = [c for c in commands if c.status is Status.ROTATING]
    assert all(c.linear == 0.0 for c in rotating) and len(rotating) >= 20   # >= ~2.6 rad
    assert commands[-1].status is Status.REACHED
    assert math.hypot(pose[0] + 2.0, pose[1]) <= 0.2


def test_follows_a_bent_path_closely():
    path = straight(0, 0, 2, 0)[:-1] + straight(2, 0, 2, 2)
    follower = PathFollower()
    follower.set_path(path, math.pi / 2, 0.0)
    trace = []
    pose = (0.0, 0.0, 0.0)
    for step in range(400):
        command = follower.compute(*pose, step * DT)
        if command.status is Status.REACHED:
            break
        pose = integrate(pose, command)
        trace.append(pose[:2])
    assert command.status is Status.REACHED
    # Pure pursuit cuts the corner by less than the lookahead.
    corner_gap = min(math.hypot(x - 2.0, y) for x, y in trace)
    assert corner_gap < 0.4
    assert all(-0.05 <= y and x <= 2.08 for x, y in trace)     # little overshoot


def wall_at(x_wall):
    """A wall across the robot's way at map x = ``x_wall``, as robot-frame laser points."""
    def obstacles_of(pose):
        x, y, yaw = pose
        ys = np.linspace(-1.0, 1.0, 81)
        dx, dy = x_wall - x, ys - y
        c, s = math.cos(-yaw), math.sin(-yaw)
        return np.column_stack((c * dx - s * dy, s * dx + c * dy))
    return obstacles_of


def test_stops_before_an_obstacle_in_the_scan():
    follower = PathFollower()
    follower.set_path(straight(0, 0, 3, 0), None, 0.0)
    pose, _, commands = drive(follower, (0.0, 0.0, 0.0), 100, obstacles_of=wall_at(1.5))
    assert commands[-1].status is Status.BLOCKED and commands[-1].linear == 0.0
    gap = 1.5 - pose[0]
    assert 0.35 - 0.3 * DT <= gap <= 0.36      # stopped at stop_distance, not in the wall


def test_blocked_means_no_forward_motion_but_turning_is_allowed():
    follower = PathFollower()
    follower.set_path(straight(0, 0, 0, 2), None, 0.0)   # the path is 90 deg to the left
    ahead = np.array([[0.3, 0.0]])
    command = follower.compute(0.0, 0.0, 0.0, 0.0, obstacles=ahead)
    assert command.status is Status.ROTATING and command.angular > 0 and command.linear == 0.0
    command = follower.compute(0.0, 0.0, 1.2, 0.1, obstacles=ahead)  # facing near the path
    assert command.status is Status.BLOCKED
    assert command.linear == 0.0 and command.angular > 0.0


@pytest.mark.parametrize('point,blocked', [((0.3, 0.0), True), ((0.3, 0.22), True),
                                           ((0.3, -0.22), True), ((0.3, 0.25), False),
                                           ((0.4, 0.0), False), ((-0.2, 0.0), False)])
def test_only_the_corridor_ahead_stops_the_robot(point, blocked):
    follower = PathFollower()
    follower.set_path(straight(0, 0, 3, 0), None, 0.0)
    command = follower.compute(0.0, 0.0, 0.0, 0.0, obstacles=np.array([point]))
    assert (command.status is Status.BLOCKED) == blocked
    assert (command.linear == 0.0) == blocked


def test_scan_points_uses_the_laser_pose_and_drops_invalid_beams():
    ranges = [1.0, float('nan'), float('inf'), 0.01, 2.0, 50.0]
    angles = [0.0, 0.1, 0.2, 0.3, math.pi / 2, 0.0]
    points = scan_points(ranges, angles, laser_pose=(0.1, 0.0, math.pi), range_min=0.05,
                         range_max=10.0)
    assert points.shape == (2, 2)
    np.testing.assert_allclose(points, [[-0.9, 0.0], [0.1, -2.0]], atol=1e-9)
    with pytest.raises(ValueError):
        scan_points([1.0, 2.0], [0.0])
    assert scan_points([], []).shape == (0, 2)


def test_scan_argument_blocks_like_obstacles():
    follower = PathFollower()
    follower.set_path(straight(0, 0, 3, 0), None, 0.0)
    command = follower.compute(0.0, 0.0, 0.0, 0.0, scan=([0.3, 5.0], [0.0, 1.0]))
    assert command.status is Status.BLOCKED


def test_no_progress_is_reported_after_the_timeout_and_not_before():
    follower = PathFollower()
    follower.set_path(straight(0, 0, 3, 0), None, 0.0)
    blocked = np.array([[0.2, 0.0]])
    for step in range(101):            # 10.0 s of standing still
        command = follower.compute(0.0, 0.0, 0.0, step * DT, obstacles=blocked)
        assert command.status is Status.BLOCKED
    command = follower.compute(0.0, 0.0, 0.0, 10.2, obstacles=blocked)
    assert command == Command(0.0, 0.0, Status.NO_PROGRESS)
    follower.reset_progress(10.2)
    assert follower.compute(0.0, 0.0, 0.0, 10.3, obstacles=blocked).status is Status.BLOCKED


def test_slow_creep_below_progress_distance_is_no_progress_but_real_motion_is():
    follower = PathFollower()
    follower.set_path(straight(0, 0, 5, 0), None, 0.0)
    statuses = [follower.compute(0.009 * k, 0.0, 0.0, k * 1.0).status for k in range(12)]
    assert statuses[-1] is Status.NO_PROGRESS
    follower = PathFollower()
    follower.set_path(straight(0, 0, 5, 0), None, 0.0)
    statuses = [follower.compute(0.02 * k, 0.0, 0.0, k * 1.0).status for k in range(30)]
    assert Status.NO_PROGRESS not in statuses


def test_a_detour_that_leads_away_from_the_goal_is_progress():
    # The goal is 1 m north, but the path goes 5 m west first (a wall between, say): for 17 s
    # the distance to the goal grows. move_base's oscillation check counts the robot's movement,
    # not the closing of that distance, and so does the follower.
    follower = PathFollower()
    path = straight(0, 0, -5, 0) + straight(-5, 0, -5, 1)[1:] + straight(-5, 1, 0, 1)[1:]
    follower.set_path(path, None, 0.0)
    pose, now, commands = drive(follower, (0.0, 0.0, math.pi), 800)
    assert commands[-1].status is Status.REACHED and now > 30.0
    assert Status.NO_PROGRESS not in [c.status for c in commands]


def to_robot(point, pose):
    """A map point in the frame of a robot at ``pose``, as an (1, 2) obstacle array."""
    dx, dy = point[0] - pose[0], point[1] - pose[1]
    c, s = math.cos(pose[2]), math.sin(pose[2])
    return np.array([[c * dx + s * dy, -s * dx + c * dy]])


def test_an_obstacle_beside_the_path_does_not_hold_a_robot_facing_a_little_off_it():
    # Facing 0.25 rad left of the path, the obstacle 0.26 m beside it lies in the corridor
    # ahead (0.19 m off its axis): the robot turns to face the path, which frees it.
    obstacle = (0.25, 0.26)
    follower = PathFollower()
    follower.set_path(straight(0, 0, 3, 0), None, 0.0)
    first = follower.compute(0.0, 0.0, 0.25, 0.0, obstacles=to_robot(obstacle, (0, 0, 0.25)))
    assert first.status is Status.BLOCKED and first.linear == 0.0 and first.angular < 0.0
    pose, _, commands = drive(follower, (0.0, 0.0, 0.25), 200,
                              obstacles_of=lambda pose: to_robot(obstacle, pose))
    assert commands[-1].status is Status.REACHED
    assert Status.NO_PROGRESS not in [c.status for c in commands]


def test_a_clock_jumping_backwards_restarts_the_progress_window():
    follower = PathFollower()
    follower.set_path(straight(0, 0, 3, 0), None, 100.0)
    follower.compute(0.0, 0.0, 0.0, 109.0)
    assert follower.compute(0.0, 0.0, 0.0, 1.0).status is Status.FOLLOWING
    assert follower.compute(0.0, 0.0, 0.0, 10.0).status is Status.FOLLOWING
    assert follower.compute(0.0, 0.0, 0.0, 11.5).status is Status.NO_PROGRESS


def test_final_yaw_alignment_turns_the_short_way_then_succeeds():
    follower = PathFollower()
    follower.set_path(straight(0, 0, 1, 0), -2.0, 0.0)
    command = follower.compute(0.95, 0.0, 0.5, 0.0)
    assert command.status is Status.ALIGNING
    assert command.linear == 0.0 and command.angular == pytest.approx(-1.0)
    pose, _, commands = drive(follower, (0.95, 0.0, 0.5), 100)
    assert commands[-1].status is Status.REACHED
    assert abs(wrap_angle(pose[2] + 2.0)) <= 0.3
    assert all(c.status is Status.ALIGNING for c in commands[:-1])


def test_no_goal_yaw_succeeds_on_position_alone_and_idle_is_zero():
    follower = PathFollower()
    assert follower.compute(0.0, 0.0, 0.0, 0.0) == Command(0.0, 0.0, Status.IDLE)
    follower.set_path(straight(0, 0, 1, 0), None, 0.0)
    assert follower.compute(0.9, 0.05, 3.0, 0.0).status is Status.REACHED


def test_bad_inputs_raise():
    follower = PathFollower()
    with pytest.raises(ValueError):
        follower.set_path([], None, 0.0)
    with pytest.raises(ValueError):
        follower.set_path([(0.0, float('nan'))], None, 0.0)
    follower.set_path(straight(0, 0, 1, 0), None, 0.0)
    with pytest.raises(ValueError):
        follower.compute(float('nan'), 0.0, 0.0, 0.0)


@settings(max_examples=30, deadline=None)
@given(st.floats(-3.0, 3.0), st.floats(-3.0, 3.0), st.floats(-math.pi, math.pi),
       st.floats(-math.pi, math.pi))
def test_any_open_space_goal_is_reached_within_limits(gx, gy, yaw0, goal_yaw):
    follower = PathFollower()
    follower.set_path(straight(0, 0, gx, gy), goal_yaw, 0.0)
    pose, _, commands = drive(follower, (0.0, 0.0, yaw0), 800)
    assert commands[-1].status is Status.REACHED
    assert math.hypot(pose[0] - gx, pose[1] - gy) <= 0.2 + 1e-9
    assert abs(wrap_angle(pose[2] - goal_yaw)) <= 0.3 + 1e-9
    assert all(0.0 <= c.linear <= 0.3 + 1e-9 and abs(c.angular) <= 1.0 + 1e-9 for c in commands)


# ---------------------------------------------------------------------- config


def test_navigator_config_needs_a_map_file_and_splits_into_parts():
    with pytest.raises(ConfigError) as caught:
        NavigatorConfig().validate()
    assert "map_file=''" in str(caught.value)
    config = NavigatorConfig(map_file='x.yaml', lookahead=0.5, inflation_radius=0.3)
    config.validate()
    assert config.follower_config() == FollowerConfig(lookahead=0.5)
    assert config.planner_config().inflation_radius == 0.3


def test_navigator_config_names_every_bad_value():
    config = NavigatorConfig(map_file='m.yaml', controller_frequency=0.0, max_planning_retries=-1,
                             max_linear=float('nan'), yaw_tolerance=4.0, planning_resolution=-1.0)
    with pytest.raises(ConfigError) as caught:
        config.validate()
    text = str(caught.value)
    for key in ('controller_frequency=0.0', 'max_planning_retries=-1', 'max_linear=nan',
                'yaw_tolerance=4.0', 'planning_resolution=-1.0'):
        assert key in text


@pytest.mark.parametrize('changes,key', [({'inflation_radius': 0.1}, 'inflation_radius'),
                                         ({'stop_distance': 0.1}, 'stop_distance'),
                                         ({'min_linear': 0.4}, 'min_linear'),
                                         ({'rotate_exit_angle': 1.2}, 'rotate_exit_angle')])
def test_contradictions_are_refused(changes, key):
    with pytest.raises(ConfigError) as caught:
        NavigatorConfig(map_file='m.yaml', **changes).validate()
    assert key in str(caught.value)


def test_every_parameter_has_a_field_in_exactly_one_place():
    from lost_and_found.sim.planner import PlannerConfig
    own = {f.name for f in dataclasses.fields(NavigatorConfig)}
    parts = {f.name for f in dataclasses.fields(PlannerConfig)} | \
        {f.name for f in dataclasses.fields(FollowerConfig)}
    assert parts <= own


def test_shipped_yaml_loads_without_unknown_keys_and_matches_the_defaults():
    with open(CONFIG_YAML) as f:
        data = yaml.safe_load(f) or {}
    data['map_file'] = data.get('map_file') or 'maps/office.yaml'
    warnings = []
    config = config_from_params(NavigatorConfig, data, warn=warnings.append)
    assert warnings == []
    assert dataclasses.replace(config, map_file='') == NavigatorConfig()


# ---------------------------------------------------------------------- one goal end to end


def room():
    """A 6 m x 4 m room with a wall at x = 3 m and a door at its top."""
    occupied = np.zeros((80, 120), dtype=bool)
    occupied[0, :] = occupied[-1, :] = occupied[:, 0] = occupied[:, -1] = True
    occupied[:60, 60] = True
    return GridMap.from_occupancy(occupied, 0.05)


def navigation(**changes):
    """A Navigation on room() with NavigatorConfig defaults and ``changes``."""
    config = NavigatorConfig(map_file='room.yaml', **changes)
    config.validate()
    return Navigation(Planner(room(), config.planner_config()),
                      PathFollower(config.follower_config()), config)


def test_navigation_drives_through_the_door_and_succeeds():
    nav = navigation()
    nav.start(5.0, 1.0, math.pi, 0.0)
    pose, now = (1.0, 1.0, 0.0), 0.0
    grid = room()
    for _ in range(1500):
        step = nav.step(pose, now)
        if step.outcome is not None:
            break
        pose = integrate(pose, step)
        now += DT
        assert grid.distance_at(pose[0], pose[1]) > 0.18
    assert step.outcome is Outcome.SUCCEEDED and not nav.active
    assert math.hypot(pose[0] - 5.0, pose[1] - 1.0) <= 0.2
    assert abs(wrap_angle(pose[2] - math.pi)) <= 0.3


def test_navigation_aborts_a_goal_in_a_wall_after_the_retries():
    nav = navigation(max_planning_retries=2, max_recoveries=0)
    nav.start(3.0, 1.0, None, 0.0)
    steps = [nav.step((1.0, 1.0, 0.0), 0.1 * k) for k in range(3)]
    assert [s.outcome for s in steps] == [None, None, Outcome.ABORTED]
    assert 'no path' in steps[-1].message and 'after 3 attempts' in steps[-1].message
    assert all(s.linear == 0.0 and s.angular == 0.0 for s in steps)


def test_navigation_replans_once_when_stuck_then_aborts():
    nav = navigation(max_recoveries=0)
    nav.start(2.0, 1.0, None, 0.0)
    outcomes, statuses = [], []
    for k in range(300):            # the robot never moves: stuck for 30 s
        step = nav.step((1.0, 1.0, 0.0), k * DT)
        statuses.append(step.status)
        if step.outcome is not None:
            outcomes.append((k * DT, step.outcome, step.message))
            break
    assert statuses.count(Status.NO_PROGRESS) == 1      # one re-plan ...
    t, outcome, message = outcomes[0]
    assert outcome is Outcome.ABORTED and 'no progress' in message
    assert 20.0 < t < 21.0                              # ... then one more timeout


def test_navigation_aborts_without_a_pose_and_is_idle_after():
    nav = navigation(pose_timeout=1.0)
    nav.start(2.0, 1.0, None, 0.0)
    assert nav.step(None, 0.5).outcome is None
    step = nav.step((float('nan'), 0.0, 0.0), 1.2)
    assert step.outcome is Outcome.ABORTED and 'no pose' in step.message
    assert nav.step((1.0, 1.0, 0.0), 1.3) == type(step)()
    with pytest.raises(ValueError):
        nav.start(float('inf'), 0.0, None, 2.0)


def test_navigation_keeps_the_old_path_when_a_periodic_replan_fails():
    nav = navigation(planner_frequency=1.0, max_planning_retries=1, max_recoveries=0)
    nav.start(2.0, 1.0, None, 0.0)
    assert nav.step((1.0, 1.0, 0.0), 0.0).new_path
    # The estimate jumps off the map: the re-plan fails, the old path is kept once.
    step = nav.step((-2.0, 1.0, 0.0), 1.0)
    assert step.outcome is None and nav.path is not None
    assert nav.step((-2.0, 1.0, 0.0), 1.5).outcome is None      # no retry before 2.0 s
    step = nav.step((-2.0, 1.0, 0.0), 2.0)
    assert step.outcome is Outcome.ABORTED


def test_navigation_rotates_in_place_before_giving_up_when_stuck():
    nav = navigation(max_recoveries=2, recovery_rotate_speed=1.0)
    nav.start(2.0, 1.0, None, 0.0)
    rotating_time, outcome = 0.0, None
    for k in range(1000):           # the robot never gets anywhere: stuck for 100 s
        now = k * DT
        step = nav.step((1.0, 1.0, 0.0), now)
        if step.status is Status.ROTATING and step.linear == 0.0 and step.angular == 1.0:
            rotating_time += DT
        if step.outcome is not None:
            outcome = (now, step.outcome, step.message)
            break
    # two full circles at 1 rad/s, each after a stall, then the abort
    assert rotating_time == pytest.approx(2 * 2 * math.pi, abs=2 * DT)
    assert outcome[1] is Outcome.ABORTED and 'after 2 recovery rotations' in outcome[2]


def test_navigation_rotates_before_aborting_a_goal_without_a_path():
    nav = navigation(max_planning_retries=0, max_recoveries=1, recovery_rotate_speed=2.0)
    nav.start(3.0, 1.0, None, 0.0)          # inside the wall
    step = nav.step((1.0, 1.0, 0.0), 0.0)
    assert step.outcome is None and (step.linear, step.angular) == (0.0, 2.0)
    assert nav.step((1.0, 1.0, 0.0), math.pi - 0.1).angular == 2.0
    step = nav.step((1.0, 1.0, 0.0), math.pi + 0.1)     # rotation over: plan again, fail
    assert step.outcome is Outcome.ABORTED and 'no path' in step.message


def test_a_recovery_rotation_ends_a_full_turn_after_a_clock_that_jumps_back():
    nav = navigation(max_planning_retries=0, max_recoveries=1, recovery_rotate_speed=2.0)
    nav.start(3.0, 1.0, None, 100.0)        # inside the wall
    assert nav.step((1.0, 1.0, 0.0), 100.0).status is Status.ROTATING
    # The clock restarts at 0 just after the turn began: it ends a full turn later at most,
    # not after the 100 s the clock went back.
    assert nav.step((1.0, 1.0, 0.0), 0.0).status is Status.ROTATING
    assert nav.step((1.0, 1.0, 0.0), math.pi - 0.1).status is Status.ROTATING
    step = nav.step((1.0, 1.0, 0.0), math.pi + 0.1)
    assert step.outcome is Outcome.ABORTED and 'no path' in step.message
