"""RecoveryCore: the episode, the saved goal, fallbacks, budget, config; adapter helpers."""
import dataclasses
import logging
import math

import pytest

from lost_and_found.core import geometry
from lost_and_found.core.config import ConfigError, config_from_params
from lost_and_found.core.reactive import ReactiveConfig, Scan
from lost_and_found.core.recovery import (
    ABORTED, FORWARD_JUMP, GOAL_LOST, PATH_STEP, PREEMPTED, REACTIVE_FIELDS, RECALLED,
    SUCCEEDED, Command,
    Phase, RecoveryConfig, RecoveryCore, UserGoal)
from lost_and_found.core.spiral import SpiralSearch
from lost_and_found.state import State

DT = 0.1
HOME = (2.0, -1.0, 0.3)
ODOM = (10.0, -3.0)           # where wheel odometry says the robot is (frame 'odom')
GOAL = UserGoal('map', 5.0, 4.0, 0.0, 0.0, 0.0, 0.0, 1.0, goal_id='/rviz-1-10.0')
SCAN = Scan(ranges=(2.0,) * 5, angle_min=-1.0, angle_increment=0.5, range_min=0.1,
            range_max=10.0)


class FakeWander:
    """Stands in for ReactiveWander: records scans, returns a fixed twist."""

    def __init__(self, twist=(0.15, -0.2)):
        """Return ``twist`` from every step."""
        self.twist = twist
        self.clearance = 5.0
        self.scans = []
        self.odoms = []
        self.remembered = []
        self.resets = 0

    def step(self, scan, t, odom=None, remembered=None):
        """Record the scan and odometry; a scan of None is 'bad input' (ValueError like the
        real one)."""
        if scan.ranges is None:
            raise ValueError('no ranges')
        self.scans.append((scan, t))
        self.odoms.append(odom)
        self.remembered.append(remembered)
        return self.twist

    def reset(self):
        """Count resets."""
        self.resets += 1

    def clearance_ahead(self, scan, remembered=None):
        """The fixed :attr:`clearance` (m), whatever the scan."""
        return self.clearance


def make_core(**overrides):
    """A core with a fake wander, localized (IDLE) at HOME, at ODOM in 'odom', move_base up."""
    core = RecoveryCore(RecoveryConfig(**overrides), wander=FakeWander())
    core.on_move_base_available(True)
    core.on_state(State.IDLE, 0.0)
    core.on_pose(*HOME)
    core.on_odom(*ODOM, 0.0, 'odom')
    return core


class Runner:
    """Steps a core at the control rate and keeps every non-empty command with its time."""

    def __init__(self, core, t=0.0):
        """Start at ``t``."""
        self.core = core
        self.t = t
        self.log = []

    def step(self):
        """One control period."""
        self.t = round(self.t + DT, 6)
        command = self.core.step(self.t)
        if command != Command():
            self.log.append((self.t, command))
        return command

    def run(self, seconds):
        """Step for ``seconds``; return the commands of this stretch."""
        start = len(self.log)
        for _ in range(int(round(seconds / DT))):
            self.step()
        return [c for _, c in self.log[start:]]

    def until(self, predicate, limit=300.0):
        """Step until ``predicate(command)``; return that command."""
        end = self.t + limit
        while self.t < end:
            command = self.step()
            if predicate(command):
                return command
        raise AssertionError('condition not reached within %.0f s' % limit)


def user_goal_then_lost(core, runner):
    """The user sends GOAL while IDLE, the state goes NAVIGATING then LOST."""
    core.on_user_goal(GOAL, runner.t)
    first = runner.step()
    assert first.request_state == State.NAVIGATING
    core.on_state(State.NAVIGATING, runner.t)
    core.on_pose(*HOME)
    core.on_pose(9.0, 9.0, 0.0)       # the last good pose while localized wins
    core.on_state(State.LOST, runner.t)
    core.on_pose(-50.0, 30.0, 1.0)    # garbage after global localization: not the centre


def test_full_spiral_episode():
    core = make_core()       # spiral_anchor odom: around where odometry says the robot is
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    lost_at = runner.t
    first = runner.step()
    assert first.cancel_user == GOAL.goal_id and not first.cancel
    assert first.twist == (0.0, pytest.approx(math.radians(72.0)))
    assert core.saved_goal == GOAL
    # The spin lasts 2*pi / spin_speed = 5 s, open loop.
    leg = runner.until(lambda c: c.send_goal is not None)
    assert runner.t - lost_at == pytest.approx(5.0, abs=DT + 1e-9)
    spins = [c for t, c in runner.log if lost_at < t < runner.t]
    assert all(c.twist == (0.0, pytest.approx(1.2566, abs=1e-4)) for c in spins[:-1])
    expected = SpiralSearch(ODOM[0], ODOM[1], 1.0)
    assert leg.send_goal == pytest.approx(expected.next_goal())
    assert leg.goal_frame == 'odom'
    assert leg.twist == (0.0, 0.0)
    # move_base never finishes the 1 m leg: it is cancelled after goal_timeout (5 s) + 5 s/m,
    # then a spin.
    sent = runner.t
    timeout = runner.until(lambda c: c.cancel)
    assert runner.t - sent == pytest.approx(10.0, abs=DT + 1e-9)
    assert timeout.twist[1] == pytest.approx(1.2566, abs=1e-4)
    assert core.phase == Phase.SPIN
    core.on_goal_done(PREEMPTED, True, runner.t)     # the cancelled leg: ignored
    assert core.phase == Phase.SPIN
    # The robot got half way: the next leg's timeout is measured from where it is now.
    core.on_odom(ODOM[0] + 0.5, ODOM[1], runner.t)
    leg2 = runner.until(lambda c: c.send_goal is not None)
    assert leg2.send_goal == pytest.approx(expected.next_goal())
    sent = runner.t
    core.on_goal_done(PREEMPTED, True, runner.t, leg.goal_tag)    # late: still ignored
    assert runner.until(lambda c: c.cancel) and core.phase == Phase.SPIN
    assert runner.t - sent == pytest.approx(5.0 + 5.0 * math.hypot(0.5, 1.0), abs=DT + 1e-9)
    leg2 = runner.until(lambda c: c.send_goal is not None)
    assert leg2.send_goal == pytest.approx(expected.next_goal())
    # A leg that move_base completes ends early, then a spin between legs.
    runner.run(1.0)
    core.on_goal_done(SUCCEEDED, True, runner.t)
    assert core.phase == Phase.SPIN and core.saved_goal == GOAL
    leg3 = runner.until(lambda c: c.send_goal is not None)
    assert leg3.send_goal == pytest.approx(expected.next_goal())
    assert core.legs_sent == 4 and core.strategy == 'spiral'
    # Localization fix: stop within one step, cancel the leg, nothing more afterwards.
    core.on_state(State.LOCALIZING, runner.t)
    stop = runner.step()
    assert stop.twist == (0.0, 0.0) and stop.cancel and stop.send_goal is None
    assert runner.run(20.0) == []
    # Localized: re-send the saved goal and ask for NAVIGATING, once.
    core.on_state(State.IDLE, runner.t)
    resume = runner.step()
    assert resume.resend_saved_goal and resume.request_state == State.NAVIGATING
    assert core.saved_goal == GOAL
    assert runner.run(2.0) == []
    # The cancelled leg's PREEMPTED arriving late is not taken for the re-sent goal's.
    assert resume.goal_tag and resume.goal_tag != leg3.goal_tag
    core.on_goal_done(PREEMPTED, True, runner.t, leg3.goal_tag)
    assert core.saved_goal == GOAL
    core.on_goal_done(SUCCEEDED, True, runner.t, resume.goal_tag)
    assert core.saved_goal is None


def test_resume_while_navigating_does_not_request_a_state():
    core = make_core()
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    runner.run(1.0)
    core.on_state(State.NAVIGATING, runner.t)
    command = runner.step()
    assert command.resend_saved_goal and command.request_state is None


def test_reactive_strategy_publishes_twists_from_scans():
    core = make_core(strategy='reactive')
    runner = Runner(core)
    core.on_state(State.LOST, runner.t)
    first = runner.step()
    assert first.cancel_user == ''        # no saved goal: cancel whatever move_base runs
    runner.run(5.0)
    core.on_scan(SCAN, runner.t)
    command = runner.step()
    assert command.twist == (0.15, -0.2) and command.send_goal is None
    assert core.wander.scans[-1][0] is SCAN
    # A stale scan stops the robot instead of steering on old data.
    commands = runner.run(1.0)
    assert commands[-1].twist == (0.0, 0.0)
    # Bad scans are skipped with a stop, the loop keeps running.
    core.on_scan(Scan(None, 0.0, 0.1, 0.1, 5.0), runner.t)
    assert runner.step().twist == (0.0, 0.0)
    core.on_scan(SCAN, runner.t)
    assert runner.step().twist == (0.15, -0.2)


def test_the_wander_gets_fresh_odometry_only():
    core = make_core(strategy='reactive')
    runner = Runner(core)
    core.on_state(State.LOST, runner.t)
    runner.run(5.0)
    core.on_scan(SCAN, runner.t)
    runner.step()
    assert core.wander.odoms[-1] is None          # none yet
    core.on_odom(1.0, 2.0, runner.t)
    core.on_scan(SCAN, runner.t)
    runner.step()
    assert core.wander.odoms[-1] == (1.0, 2.0)
    core.on_odom(float('nan'), 2.0, runner.t)       # ignored, with a warning
    runner.run(0.3)
    core.on_scan(SCAN, runner.t)
    runner.step()
    assert core.wander.odoms[-1] == (1.0, 2.0)
    runner.run(0.5)                                 # older than scan_timeout: not used
    core.on_scan(SCAN, runner.t)
    runner.step()
    assert core.wander.odoms[-1] is None


def test_the_wander_looks_around_every_few_metres_of_odometry():
    core = make_core(strategy='reactive', look_around_every=3.0)
    runner = Runner(core)
    core.on_state(State.LOST, runner.t)
    runner.run(core.config.spin_duration + DT)          # the first spin
    assert core.phase == Phase.WANDER
    x = ODOM[0]
    spins = []
    for _ in range(150):                                 # 15 s at 0.5 m/s: 7.5 m of odometry
        x += 0.05
        core.on_odom(x, ODOM[1], runner.t)
        core.on_scan(SCAN, runner.t)
        command = runner.step()
        if core.phase == Phase.SPIN:
            spins.append(x - ODOM[0])
            assert command.twist == (0.0, core.config.spin_speed)
            resets = core.wander.resets
            runner.run(core.config.spin_duration + DT)   # spins on the spot, then wanders
            assert core.phase == Phase.WANDER and core.wander.resets == resets
    # One look-around per 3 m driven: at 3 m, then 3 m after that spin (the robot stood still
    # while spinning).
    assert len(spins) == 2
    assert spins[0] == pytest.approx(3.0, abs=0.06)
    assert spins[1] - spins[0] == pytest.approx(3.0, abs=0.06)


def test_no_look_around_without_odometry_or_with_zero_distance():
    for overrides, odometry in (({'look_around_every': 0.0}, True), ({}, False)):
        core = make_core(strategy='reactive', **overrides)
        runner = Runner(core)
        core.on_state(State.LOST, runner.t)
        runner.run(core.config.spin_duration + DT)
        x = ODOM[0]
        for _ in range(200):
            x += 0.05
            if odometry:
                core.on_odom(x, ODOM[1], runner.t)
            core.on_scan(SCAN, runner.t)
            runner.step()
            assert core.phase == Phase.WANDER


def test_the_wander_gets_what_the_spin_saw_placed_by_odometry():
    """A return seen 2 m ahead during the spin is 1.5 m ahead after driving 0.5 m; the next
    episode (the robot was carried away) starts with nothing remembered."""
    core = make_core(strategy='reactive')
    runner = Runner(core)
    ahead = Scan(ranges=(math.nan, math.nan, 2.0, math.nan, math.nan), angle_min=-1.0,
                 angle_increment=0.5, range_min=0.1, range_max=10.0)
    core.on_scan(ahead, runner.t)       # not searching: not remembered
    core.on_state(State.LOST, runner.t)
    core.on_odom(0.0, 0.0, runner.t, 'odom', yaw=0.0)
    core.on_scan(ahead, runner.t)       # spinning
    runner.run(5.0)
    assert core.phase == Phase.WANDER
    core.on_odom(0.5, 0.0, runner.t, 'odom', yaw=0.0)
    core.on_scan(Scan((math.nan,) * 5, -1.0, 0.5, 0.1, 10.0), runner.t)
    runner.step()
    assert core.wander.remembered[-1].ravel().tolist() == pytest.approx([1.5, 0.0], abs=0.03)
    core.on_state(State.IDLE, runner.t)
    core.on_state(State.LOST, runner.t)
    runner.run(5.0)
    core.on_odom(0.5, 0.0, runner.t, 'odom', yaw=0.0)
    core.on_scan(Scan((math.nan,) * 5, -1.0, 0.5, 0.1, 10.0), runner.t)
    runner.step()
    assert len(core.wander.remembered[-1]) == 0


def test_without_a_heading_nothing_is_remembered():
    core = make_core(strategy='reactive')
    runner = Runner(core)
    core.on_state(State.LOST, runner.t)
    runner.run(5.0)
    core.on_odom(0.5, 0.0, runner.t, 'odom')
    core.on_scan(SCAN, runner.t)
    runner.step()
    assert core.wander.remembered[-1] is None
    core.on_odom(0.5, 0.0, runner.t, 'odom', yaw=float('nan'))     # ignored, with a warning
    core.on_scan(SCAN, runner.t)
    runner.step()
    assert core.wander.remembered[-1] is None


AHEAD = Scan(ranges=(math.nan, math.nan, 2.0, math.nan, math.nan), angle_min=-1.0,
             angle_increment=0.5, range_min=0.1, range_max=10.0)
NOTHING = Scan((math.nan,) * 5, -1.0, 0.5, 0.1, 10.0)


def spinning_core():
    """A reactive core in its first spin, odometry at the origin of 'odom' facing +x."""
    core = make_core(strategy='reactive')
    runner = Runner(core)
    core.on_state(State.LOST, runner.t)
    runner.step()
    assert core.phase == Phase.SPIN
    return core, runner


def remembered_in_odom(core, runner, pose):
    """What the wander is told it remembers, seen from odometry ``pose``, in 'odom'."""
    core.on_odom(*pose[:2], runner.t, 'odom', yaw=pose[2], stamp=runner.t)
    core.on_scan(NOTHING, runner.t)         # unstamped: adds nothing
    runner.run(core.config.spin_duration + DT)
    assert core.phase == Phase.WANDER
    core.on_odom(*pose[:2], runner.t, 'odom', yaw=pose[2], stamp=runner.t)
    core.on_scan(NOTHING, runner.t, stamp=runner.t)
    runner.step()
    local = core.wander.remembered[-1]
    c, s = math.cos(pose[2]), math.sin(pose[2])
    return [(pose[0] + c * x - s * y, pose[1] + s * x + c * y) for x, y in local]


def test_a_scan_is_remembered_at_the_odometry_pose_of_its_stamp():
    """The robot turned 0.6 rad between the scan's stamp and its delivery: the return 2 m
    ahead at the stamp is remembered there, not 0.6 rad off (where the latest pose would put
    it)."""
    core, runner = spinning_core()
    core.on_odom(0.0, 0.0, 1.0, 'odom', yaw=0.0, stamp=1.0)
    core.on_odom(0.0, 0.0, 1.2, 'odom', yaw=0.4, stamp=1.2)     # 1.1: yaw 0.2
    core.on_odom(0.0, 0.0, 1.4, 'odom', yaw=0.8, stamp=1.4)
    core.on_scan(AHEAD, 1.4, stamp=1.1)
    points = remembered_in_odom(core, runner, (0.0, 0.0, 0.8))
    assert points == [pytest.approx((2.0 * math.cos(0.2), 2.0 * math.sin(0.2)), abs=0.03)]


def test_a_scan_newer_than_the_odometry_waits_for_it():
    core, runner = spinning_core()
    core.on_odom(0.0, 0.0, 1.0, 'odom', yaw=0.0, stamp=1.0)
    core.on_scan(AHEAD, 1.05, stamp=1.1)
    assert len(core._memory) == 0           # not placed yet
    core.on_odom(0.0, 0.0, 1.2, 'odom', yaw=1.0, stamp=1.2)
    assert len(core._memory) == 1           # placed at 1.1: yaw 0.5
    points = remembered_in_odom(core, runner, (0.0, 0.0, 1.0))
    assert points == [pytest.approx((2.0 * math.cos(0.5), 2.0 * math.sin(0.5)), abs=0.03)]


def test_a_scan_older_than_the_odometry_kept_is_not_remembered(caplog):
    core, runner = spinning_core()
    for k in range(31):                     # 3 s of odometry at 10 Hz
        core.on_odom(0.0, 0.0, 1.0 + 0.1 * k, 'odom', yaw=0.0, stamp=1.0 + 0.1 * k)
    core.on_scan(AHEAD, 4.0, stamp=1.5)     # 2.5 s old: the pose then is forgotten
    assert len(core._memory) == 0
    assert 'before the odometry kept' in caplog.text
    core.on_scan(AHEAD, 4.0, stamp=float('nan'))
    assert len(core._memory) == 0 and 'non-finite stamp' in caplog.text
    core.on_scan(AHEAD, 4.0, stamp=3.5)
    assert len(core._memory) == 1


def ahead(distance):
    """A scan with one return ``distance`` m straight ahead."""
    return Scan((math.nan, math.nan, distance, math.nan, math.nan), -1.0, 0.5, 0.1, 10.0)


def test_scans_far_ahead_of_the_odometry_fall_back_to_the_latest_pose(caplog):
    """Odometry stamped by a clock 5 s behind the laser's: five scans wait for it, then each
    new one pushes the oldest out, placed at the latest pose as before there was a history."""
    core, runner = spinning_core()
    core.on_odom(0.0, 0.0, 1.0, 'odom', yaw=0.0, stamp=1.0)
    for k in range(5):
        core.on_scan(ahead(2.0 + 0.2 * k), 1.0 + 0.1 * k, stamp=6.0 + 0.1 * k)
    assert len(core._memory) == 0 and 'after the newest odometry' not in caplog.text
    core.on_scan(ahead(3.0), 1.5, stamp=6.5)
    assert 'placing them at the latest odometry pose' in caplog.text
    assert core._memory.points_around((0.0, 0.0, 0.0)).tolist() == [
        pytest.approx([2.0, 0.0], abs=0.03)]


def test_waiting_scans_the_odometry_history_no_longer_covers_are_dropped_with_a_warning(caplog):
    core, runner = spinning_core()
    core.on_odom(0.0, 0.0, 1.0, 'odom', yaw=0.0, stamp=1.0)
    for k in range(4):                      # nearer each time: none clears the one before
        core.on_scan(ahead(2.6 - 0.2 * k), 1.0 + 0.1 * k, stamp=4.0 + 0.1 * k)
    core.on_odom(0.0, 0.0, 1.4, 'odom', yaw=0.0, stamp=4.15)    # keeps 2.15..4.15: 1.0 goes
    assert 'before the odometry kept' in caplog.text
    core.on_odom(0.0, 0.0, 1.5, 'odom', yaw=0.0, stamp=4.3)
    # 4.0 and 4.1 fell before the kept odometry; 4.2 and 4.3 are placed (2.2 and 2.0 m ahead).
    points = sorted(core._memory.points_around((0.0, 0.0, 0.0))[:, 0].tolist())
    assert points == pytest.approx([2.0, 2.2], abs=0.03)


def test_odometry_out_of_order_is_ignored_not_taken_for_a_clock_jump():
    core, runner = spinning_core()
    for k, stamp in enumerate((1.0, 1.1, 1.2, 1.15, 1.3)):     # 1.15 comes late
        core.on_odom(stamp, 0.0, 1.0 + 0.1 * k, 'odom', yaw=0.0, stamp=stamp)
    core.on_scan(ahead(2.0), 1.5, stamp=1.05)                   # still placed, at x 1.05
    assert core._memory.points_around((0.0, 0.0, 0.0)).tolist() == [
        pytest.approx([3.05, 0.0], abs=0.03)]


def test_scans_waiting_for_odometry_are_dropped_when_the_clock_jumps_back_or_an_episode_starts():
    core, runner = spinning_core()
    core.on_odom(0.0, 0.0, 10.0, 'odom', yaw=0.0, stamp=10.0)
    core.on_scan(AHEAD, 10.0, stamp=10.1)
    for stamp in (1.0, 9.0, 9.5, 10.0, 10.2):                  # the clock jumped back, then on
        core.on_odom(0.0, 0.0, stamp, 'odom', yaw=0.0, stamp=stamp)
    assert len(core._memory) == 0
    core.on_scan(AHEAD, 10.2, stamp=10.3)                       # waits ...
    core.on_state(State.IDLE, 10.25)
    core.on_state(State.LOST, 10.25)                            # ... but the robot was carried
    core.on_odom(0.0, 0.0, 10.4, 'odom', yaw=0.0, stamp=10.4)
    assert len(core._memory) == 0


def test_reactive_strategy_with_the_real_wander_moves_on_an_open_scan():
    core = RecoveryCore(RecoveryConfig(strategy='reactive'))
    core.on_state(State.LOST, 0.0)
    open_scan = Scan(ranges=(4.0,) * 181, angle_min=-math.pi / 2,
                     angle_increment=math.pi / 180, range_min=0.05, range_max=10.0)
    twists = []
    for i in range(51, 100):
        t = i * DT
        core.on_scan(open_scan, t)
        twists.append(core.step(t).twist)
    assert core.phase == Phase.WANDER
    assert all(twist is not None and all(map(math.isfinite, twist)) for twist in twists)
    assert any(v > 0.0 for v, _ in twists)


def test_map_anchored_spiral_is_around_the_last_good_pose():
    core = make_core(spiral_anchor='map')
    runner = Runner(core)
    user_goal_then_lost(core, runner)     # the estimate then jumps to (-50, 30)
    expected = SpiralSearch(9.0, 9.0, 1.0)
    leg = runner.until(lambda c: c.send_goal is not None)
    assert leg.send_goal == pytest.approx(expected.next_goal()) and leg.goal_frame == 'map'
    # The timeout goes by the leg's length (1 m from the centre), not by the distance from the
    # jumped estimate (64 m, which would outlast the whole search).
    sent = runner.t
    runner.until(lambda c: c.cancel)
    assert runner.t - sent == pytest.approx(10.0, abs=DT + 1e-9)
    core.on_pose(-20.0, 7.0, 0.0)
    leg2 = runner.until(lambda c: c.send_goal is not None)
    assert leg2.send_goal == pytest.approx(expected.next_goal())
    sent = runner.t
    runner.until(lambda c: c.cancel)
    assert runner.t - sent == pytest.approx(10.0, abs=DT + 1e-9)     # (10, 9) -> (10, 10)


def test_map_anchored_spiral_without_allowance_gives_every_leg_goal_timeout():
    core = make_core(spiral_anchor='map', goal_timeout_per_metre=0.0)
    runner = Runner(core)
    core.on_state(State.LOST, runner.t)
    for _ in range(2):
        runner.until(lambda c: c.send_goal is not None)
        sent = runner.t
        runner.until(lambda c: c.cancel)
        assert runner.t - sent == pytest.approx(5.0, abs=DT + 1e-9)


def test_odom_anchored_spiral_takes_the_odometry_frame():
    core = make_core()
    core.on_odom(1.0, 2.0, 0.0, '/odom_combined')
    runner = Runner(core)
    core.on_state(State.LOST, runner.t)
    leg = runner.until(lambda c: c.send_goal is not None)
    assert leg.goal_frame == 'odom_combined'
    assert leg.send_goal[:2] == pytest.approx((2.0, 2.0))
    # The frame is fixed for the episode, even when the odometry's changes.
    core.on_odom(1.5, 2.0, runner.t, 'wheel_odom')
    core.on_goal_done(SUCCEEDED, True, runner.t, leg.goal_tag)
    leg2 = runner.until(lambda c: c.send_goal is not None)
    assert leg2.goal_frame == 'odom_combined'
    assert leg2.send_goal[:2] == pytest.approx((2.0, 3.0))
    # The next episode takes the new one; a message without a frame keeps the previous one.
    core.on_odom(1.5, 2.0, runner.t, '')
    core.on_state(State.LOCALIZING, runner.t)
    core.on_state(State.LOST, runner.t)
    assert runner.until(lambda c: c.send_goal is not None).goal_frame == 'wheel_odom'


def test_a_spiral_on_stale_odometry_is_sent_with_a_warning(caplog):
    core = make_core()          # odometry at t = 0 only
    runner = Runner(core)
    core.on_state(State.LOST, runner.t)
    leg = runner.until(lambda c: c.send_goal is not None)
    assert leg.send_goal[:2] == pytest.approx((ODOM[0] + 1.0, ODOM[1]))
    assert any('odometry 5.0 s old' in r.getMessage() for r in caplog.records)
    caplog.clear()
    core.on_odom(*ODOM, runner.t)
    core.on_state(State.LOCALIZING, runner.t)
    core.on_state(State.LOST, runner.t)
    runner.until(lambda c: c.send_goal is not None)
    assert not any('old' in r.getMessage() for r in caplog.records)


def test_timed_out_legs_count_towards_max_aborts():
    core = make_core(max_aborts=3)
    runner = Runner(core)
    core.on_state(State.LOST, runner.t)
    runner.until(lambda c: c.send_goal is not None)
    runner.until(lambda c: c.cancel)                 # timed out: 1
    runner.until(lambda c: c.send_goal is not None)
    core.on_goal_done(ABORTED, True, runner.t)       # aborted: 2
    runner.until(lambda c: c.send_goal is not None)
    assert core.strategy == 'spiral'
    last = runner.until(lambda c: c.cancel)          # timed out: 3, fall back at once
    assert core.strategy == 'reactive' and 'the last timed out' in core.fallback_reason
    assert core.phase == Phase.WANDER and last.send_goal is None
    assert core.legs_sent == 3


def drive(core, runner, seconds, speed=0.0):
    """Step for ``seconds`` with fresh odometry every period, moving along +x at ``speed``
    (m/s) from where the odometry last was; return the commands."""
    x, y = core._odom   # noqa: SLF001 - the test's own odometry, continued
    commands = []
    for _ in range(int(round(seconds / DT))):
        x += speed * DT
        core.on_odom(x, y, runner.t, 'odom')
        commands.append(runner.step())
    return commands


def test_a_leg_that_does_not_move_the_robot_is_cancelled_and_the_next_goes_without_a_spin(
        caplog):
    caplog.set_level(logging.INFO, logger='rosout')
    core = make_core()
    runner = Runner(core)
    core.on_state(State.LOST, runner.t)
    commands = drive(core, runner, 5.2)                 # the first spin, then leg 1
    assert sum(c.send_goal is not None for c in commands) == 1
    leg1_at = runner.t
    # move_base turns in place (no path from a wrong estimate): no odometry progress.
    commands = drive(core, runner, 5.3)
    stalled = [c for c in commands if c.cancel]
    assert len(stalled) == 1 and stalled[0].send_goal is not None      # leg 2 at once
    assert stalled[0].twist == (0.0, 0.0)                              # and no spin
    assert runner.t - leg1_at < 10.0            # before leg 1's 10 s timeout
    assert core.phase == Phase.LEG and core.legs_sent == 2
    assert any('leg 1 has not moved the robot 0.20 m in 5.0 s' in r.getMessage()
               for r in caplog.records)
    # The third stalled leg in a row hands the search to the wander, as max_aborts says.
    drive(core, runner, 10.2)
    assert core.strategy == 'reactive' and 'the last stalled' in core.fallback_reason
    assert core.legs_sent == 3


def test_a_leg_that_keeps_moving_runs_to_its_timeout_and_a_spin_follows():
    core = make_core()
    runner = Runner(core)
    core.on_state(State.LOST, runner.t)
    drive(core, runner, 5.2)
    assert core.phase == Phase.LEG
    # 0.08 m/s: 0.2 m every 2.5 s, slow but moving: only the 10 s timeout ends the leg.
    commands = drive(core, runner, 9.7, speed=0.08)
    assert not any(c.cancel for c in commands) and core.phase == Phase.LEG
    commands = drive(core, runner, 0.3, speed=0.08)
    ended = [c for c in commands if c.cancel]
    # It ended 0.8 m from the spin: the camera has not seen all around here, so it spins.
    assert len(ended) == 1 and ended[0].send_goal is None
    assert ended[0].twist == (0.0, pytest.approx(math.radians(72.0)))
    assert core.phase == Phase.SPIN


def test_a_failed_leg_near_the_spin_skips_the_spin_and_one_away_does_not():
    core = make_core()
    runner = Runner(core)
    core.on_state(State.LOST, runner.t)
    drive(core, runner, 5.2)
    drive(core, runner, 1.0, speed=0.3)                 # 0.3 m from the spin
    core.on_goal_done(ABORTED, True, runner.t)
    command = drive(core, runner, 0.1)[0]
    assert command.send_goal is not None and core.legs_sent == 2
    drive(core, runner, 1.0, speed=0.3)                 # 0.6 m from it
    core.on_goal_done(ABORTED, True, runner.t)
    command = drive(core, runner, 0.1)[0]
    assert command.send_goal is None and core.phase == Phase.SPIN


def test_no_stall_check_without_fresh_odometry_or_when_off():
    for core in (make_core(), make_core(leg_stall_time=0.0)):
        runner = Runner(core)
        core.on_state(State.LOST, runner.t)
        fresh = core.config.leg_stall_time == 0.0
        commands = drive(core, runner, 5.2) if fresh else runner.run(5.2)
        assert core.phase == Phase.LEG
        # Odometry stale (the first core) or the check off (the second): the 10 s timeout.
        commands = drive(core, runner, 9.7) if fresh else runner.run(9.7)
        assert not any(c.cancel for c in commands)
        commands = drive(core, runner, 0.3) if fresh else runner.run(0.3)
        assert any(c.cancel for c in commands)


def test_missing_move_base_falls_back_to_reactive():
    core = make_core(spiral_anchor='map')
    core.on_move_base_available(False)
    runner = Runner(core)
    core.on_state(State.LOST, runner.t)
    runner.run(5.0)
    core.on_scan(SCAN, runner.t)
    commands = runner.run(0.3)
    assert all(c.send_goal is None for _, c in runner.log)
    assert core.strategy == 'reactive' and 'unavailable' in core.fallback_reason
    assert [c.twist for c in commands] == [(0.15, -0.2)] * 3
    # A new episode tries the spiral again once move_base is back.
    core.on_move_base_available(True)
    core.on_state(State.FLYING, runner.t)
    assert runner.step().twist == (0.0, 0.0)
    core.on_state(State.LOST, runner.t)
    assert core.strategy == 'spiral'
    assert runner.until(lambda c: c.send_goal is not None).send_goal[:2] == \
        pytest.approx((HOME[0] + 1.0, HOME[1]))


@pytest.mark.parametrize('anchor, missing', [('map', 'pose'), ('odom', 'odometry')])
def test_nothing_to_anchor_the_spiral_falls_back_to_reactive(anchor, missing):
    core = RecoveryCore(RecoveryConfig(spiral_anchor=anchor), wander=FakeWander())
    core.on_move_base_available(True)
    if anchor == 'odom':
        core.on_pose(*HOME)        # a pose does not anchor an odom spiral
    runner = Runner(core)
    core.on_state(State.LOST, 0.0)
    runner.run(6.0)
    assert core.phase == Phase.WANDER and missing in core.fallback_reason


def test_current_estimate_is_the_centre_without_a_good_pose():
    core = RecoveryCore(RecoveryConfig(spiral_anchor='map'), wander=FakeWander())
    core.on_move_base_available(True)
    core.on_state(State.LOST, 0.0)
    core.on_pose(3.0, 4.0, 0.0)
    leg = Runner(core).until(lambda c: c.send_goal is not None)
    assert leg.send_goal[:2] == pytest.approx((4.0, 4.0))


@pytest.mark.parametrize('status, name', [(ABORTED, 'aborted'), (RECALLED, 'recalled')])
def test_with_max_aborts_1_the_first_failed_leg_falls_back_and_says_so(status, name):
    # A leg move_base recalled never drove (refused before it started, as when the clock
    # went back): it failed too.
    core = make_core(max_aborts=1)
    runner = Runner(core)
    core.on_state(State.LOST, runner.t)
    leg = runner.until(lambda c: c.send_goal is not None)
    core.on_goal_done(status, True, runner.t, leg.goal_tag)
    assert core.strategy == 'reactive' and core.legs_sent == 1
    assert core.fallback_reason.startswith('a spiral leg failed (') and \
        'the last %s' % name in core.fallback_reason


def test_max_aborts_in_a_row_fall_back_to_reactive():
    core = make_core(max_aborts=3)
    runner = Runner(core)
    core.on_state(State.LOST, runner.t)
    for _ in range(2):
        runner.until(lambda c: c.send_goal is not None)
        core.on_goal_done(ABORTED, True, runner.t)
    # A success in between resets the count.
    runner.until(lambda c: c.send_goal is not None)
    core.on_goal_done(SUCCEEDED, True, runner.t)
    for _ in range(3):
        assert core.strategy == 'spiral'
        runner.until(lambda c: c.send_goal is not None)
        core.on_goal_done(ABORTED, True, runner.t)
    assert core.strategy == 'reactive' and '3 spiral legs in a row failed' in \
        core.fallback_reason
    assert 'the last aborted' in core.fallback_reason
    assert core.phase == Phase.WANDER
    assert core.legs_sent == 6
    core.on_scan(SCAN, runner.t)
    assert runner.step().twist == (0.15, -0.2)
    assert all(c.send_goal is None for c in runner.run(30.0))


def test_max_search_time_asks_for_help_stops_and_keeps_the_goal():
    core = make_core(max_search_time=30.0)
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    lost_at = runner.t
    help_cmd = runner.until(lambda c: c.request_state == State.NEED_HELP)
    assert runner.t - lost_at == pytest.approx(30.0, abs=DT + 1e-9)
    assert help_cmd.twist == (0.0, 0.0)
    assert core.phase == Phase.GAVE_UP and core.saved_goal == GOAL
    # Stopped: no twist, no leg; only a repeated request while lost_service has not granted it.
    later = runner.run(6.0)
    assert all(c.twist is None and c.send_goal is None for c in later)
    assert [c.request_state for c in later] == [State.NEED_HELP]
    core.on_state(State.NEED_HELP, runner.t)
    assert runner.run(10.0) == [Command(twist=(0.0, 0.0))]
    core.on_state(State.LOCALIZING, runner.t)
    core.on_state(State.IDLE, runner.t)
    resume = runner.step()
    assert resume.resend_saved_goal and resume.request_state == State.NAVIGATING


@pytest.mark.parametrize('back_from', [State.LOCALIZING, State.FLYING])
def test_an_unconfirmed_fix_does_not_restart_the_search_budget(back_from):
    # A tag's fix that the localizer never confirms sends the robot back to LOST: the same
    # episode, whose budget runs on. A lift (a kidnap, a new place) starts a new one.
    core = make_core(max_search_time=30.0)
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    lost_at = runner.t
    runner.run(20.0)
    core.on_state(back_from, runner.t)
    runner.run(5.0)
    core.on_state(State.LOST, runner.t)
    back_at = runner.t
    runner.until(lambda c: c.request_state == State.NEED_HELP)
    if back_from == State.LOCALIZING:
        assert runner.t - lost_at == pytest.approx(30.0, abs=DT + 1e-9)
    else:
        assert runner.t - back_at == pytest.approx(30.0, abs=DT + 1e-9)


def test_a_persons_unconfirmed_fix_after_help_starts_a_new_search():
    # NEED_HELP -> LOCALIZING (a person's pose) -> LOST (not confirmed): the spent budget is
    # not the new search's; it spins again and asks for help only after a whole budget.
    core = make_core(max_search_time=30.0)
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    runner.until(lambda c: c.request_state == State.NEED_HELP)
    core.on_state(State.NEED_HELP, runner.t)
    runner.run(10.0)
    core.on_state(State.LOCALIZING, runner.t)
    runner.run(5.0)
    core.on_state(State.LOST, runner.t)
    back_at = runner.t
    first = runner.step()
    assert first.request_state is None and first.twist == (0.0, core.config.spin_speed)
    runner.until(lambda c: c.request_state == State.NEED_HELP)
    assert runner.t - back_at == pytest.approx(30.0, abs=DT + 1e-9)
    assert core.saved_goal == GOAL


def test_give_up_cancels_a_leg_in_flight():
    core = make_core(max_search_time=8.0)
    runner = Runner(core)
    core.on_state(State.LOST, runner.t)
    runner.until(lambda c: c.send_goal is not None)
    help_cmd = runner.until(lambda c: c.request_state == State.NEED_HELP)
    assert help_cmd.cancel and help_cmd.twist == (0.0, 0.0)


def test_user_goal_during_lost_is_saved_and_cancelled():
    core = make_core()
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    runner.until(lambda c: c.send_goal is not None)
    newer = dataclasses.replace(GOAL, x=-3.0, goal_id='/rviz-2-20.0')
    core.on_user_goal(newer, runner.t)
    command = runner.step()
    assert command.cancel_user == '/rviz-2-20.0' and not command.cancel
    assert command.request_state is None
    assert core.saved_goal == newer and core.phase == Phase.LEG
    # Its PREEMPTED (we caused it) keeps it; so does the old goal's.
    core.on_goal_done(PREEMPTED, False, runner.t, '/rviz-2-20.0')
    core.on_goal_done(PREEMPTED, False, runner.t, GOAL.goal_id)
    assert core.saved_goal == newer
    # Without an id (move_base_simple/goal) every goal up to now is cancelled.
    simple = dataclasses.replace(newer, goal_id='')
    core.on_user_goal(simple, runner.t)
    assert runner.step().cancel_user == ''


def test_own_goals_are_not_saved_only_user_goals_are():
    core = make_core()
    runner = Runner(core)
    core.on_state(State.LOST, runner.t)
    runner.until(lambda c: c.send_goal is not None)
    core.on_goal_done(SUCCEEDED, True, runner.t)     # our leg succeeded: not the user's goal
    assert core.saved_goal is None
    assert runner.step().request_state is None


def test_succeeded_clears_and_requests_idle():
    core = make_core()
    runner = Runner(core)
    core.on_user_goal(GOAL, runner.t)
    runner.step()
    core.on_state(State.NAVIGATING, runner.t)
    core.on_goal_done(SUCCEEDED, False, runner.t, '/other-9-1.0')   # another goal: ignored
    assert core.saved_goal == GOAL
    core.on_goal_done(SUCCEEDED, False, runner.t, GOAL.goal_id)
    assert core.saved_goal is None
    assert runner.step().request_state == State.IDLE


def test_aborted_keeps_and_user_preempt_forgets():
    core = make_core()
    runner = Runner(core)
    core.on_user_goal(GOAL, runner.t)
    core.on_state(State.NAVIGATING, runner.t)
    core.on_goal_done(ABORTED, False, runner.t, GOAL.goal_id)
    assert core.saved_goal == GOAL
    core.on_goal_done(PREEMPTED, False, runner.t, GOAL.goal_id)   # the user cancelled it
    assert core.saved_goal is None


def test_result_of_the_resent_goal_applies_to_the_saved_goal():
    core = make_core(check_arrival=False)   # (with it, a turn first: test_recovery_arrival)
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    runner.run(2.0)
    core.on_state(State.IDLE, runner.t)
    assert runner.step().resend_saved_goal
    core.on_state(State.NAVIGATING, runner.t)
    core.on_state(State.LOST, runner.t)
    first = runner.step()
    assert first.cancel and first.cancel_user is None   # our re-send is cancelled
    core.on_goal_done(PREEMPTED, True, runner.t)          # that cancel: goal kept
    assert core.saved_goal == GOAL
    core.on_state(State.IDLE, runner.t)
    assert runner.step().resend_saved_goal
    core.on_goal_done(ABORTED, True, runner.t)
    assert core.saved_goal == GOAL
    core.on_state(State.LOST, runner.t)
    core.on_state(State.IDLE, runner.t)
    assert runner.step().resend_saved_goal
    core.on_state(State.NAVIGATING, runner.t)
    core.on_goal_done(SUCCEEDED, True, runner.t)
    assert core.saved_goal is None
    assert runner.step().request_state == State.IDLE


def resumed(core, runner, fix=False):
    """A user goal, an episode, re-localized: the saved goal is re-sent and NAVIGATING. The
    localizer alone ends the episode (LOST -> IDLE), or with ``fix`` a tag's fix (LOST ->
    LOCALIZING -> IDLE)."""
    user_goal_then_lost(core, runner)
    runner.run(2.0)
    if fix:
        core.on_state(State.LOCALIZING, runner.t)
        runner.run(1.0)
    core.on_state(State.IDLE, runner.t)
    assert runner.step().resend_saved_goal
    core.on_state(State.NAVIGATING, runner.t)


def test_an_aborted_resumed_goal_is_sent_again_then_kept():
    core = make_core(resume_retries=2, resume_retry_delay=5.0, max_doubts=0)
    runner = Runner(core)
    resumed(core, runner)
    for _ in range(2):
        aborted_at = runner.t
        core.on_goal_done(ABORTED, True, runner.t)
        again = runner.until(lambda c: c.resend_saved_goal, limit=10.0)
        assert again is not None and runner.t >= aborted_at + 5.0 - 1e-9
        assert core.saved_goal == GOAL
    core.on_goal_done(ABORTED, True, runner.t)
    assert not any(c.resend_saved_goal for c in runner.run(20.0))
    assert core.saved_goal == GOAL                       # never dropped


@pytest.mark.parametrize('status', [GOAL_LOST, 42, RECALLED])
def test_a_resumed_goal_move_base_loses_is_sent_again_then_kept(status, caplog):
    # move_base restarted (its goals end LOST), a status no goal ends with, or a recall no
    # user's cancel or goal explains (move_base refuses goals stamped before its last one, as
    # after the clock went back): sent again as after an abort, never a doubt of the
    # estimate, and kept.
    core = make_core(resume_retries=1, resume_retry_delay=5.0, max_doubts=2)
    runner = Runner(core)
    resumed(core, runner)
    core.on_goal_done(status, True, runner.t)
    commands = runner.run(6.0)
    assert sum(1 for c in commands if c.resend_saved_goal) == 1
    assert not any(c.request_state == State.LOST for c in commands)
    core.on_goal_done(status, True, runner.t)
    commands = runner.run(10.0)
    assert not any(c.resend_saved_goal for c in commands)
    assert any(c.request_state == State.IDLE for c in commands)     # nothing drives it now
    assert core.saved_goal == GOAL
    assert {GOAL_LOST: 'move_base ended the resumed goal (5.00, 4.00) with status lost',
            42: 'move_base ended the resumed goal (5.00, 4.00) with status 42',
            RECALLED: 'move_base recalled the resumed goal (5.00, 4.00) before it started'}[
                status] in caplog.text


def test_a_user_goal_move_base_loses_is_kept_and_idle_asked_for():
    core = make_core()
    runner = Runner(core)
    core.on_state(State.IDLE, runner.t)
    core.on_user_goal(GOAL, runner.t)
    core.on_state(State.NAVIGATING, runner.t)
    runner.step()
    core.on_goal_done(GOAL_LOST, False, runner.t, GOAL.goal_id)
    assert runner.step().request_state == State.IDLE
    assert core.saved_goal == GOAL


def test_a_user_goal_in_the_step_the_saved_one_is_resumed_replaces_the_re_send():
    # Localized (the re-send of the saved goal waits for this step), and the user sends
    # another goal before the step: the old re-send must not go out, or it would send the new
    # goal as this node's and move_base would preempt the user's own, which would then count
    # as cancelled by its user and be forgotten.
    core = make_core()
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    runner.run(2.0)
    core.on_state(State.IDLE, runner.t)
    other = dataclasses.replace(GOAL, x=1.0, y=2.0, goal_id='/rviz-2-20.0')
    core.on_user_goal(other, runner.t)
    command = runner.step()
    assert not command.resend_saved_goal and not command.goal_tag
    assert command.request_state == State.NAVIGATING
    core.on_state(State.NAVIGATING, runner.t)
    assert core.saved_goal == other
    core.on_goal_done(SUCCEEDED, False, runner.t, other.goal_id)
    assert core.saved_goal is None


def legs_then_one_more_queued(**overrides):
    """A spiral leg ends (aborted) where the last spin ended: the next is queued at once, to
    go out in the next step. (core, runner)."""
    core = make_core(leg_stall_time=0.0, **overrides)
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    queue_a_leg_at_once(core, runner, first_leg_standing(core, runner))
    return core, runner


def first_leg_standing(core, runner, yaw=0.0):
    """Step with fresh odometry at ODOM (the robot turns in place) until the first leg is
    sent; its command."""
    while True:
        core.on_odom(*ODOM, runner.t, 'odom', yaw)
        command = runner.step()
        if command.send_goal is not None:
            return command


def queue_a_leg_at_once(core, runner, leg):
    """``leg`` ends aborted where the spin before it ended: the next leg is queued at once."""
    core.on_odom(*ODOM, runner.t, 'odom', 0.0)
    core.on_goal_done(ABORTED, True, runner.t, leg.goal_tag)
    assert core.phase == Phase.LEG and core.legs_sent == 2


def test_a_leg_queued_in_the_step_the_search_budget_runs_out_is_not_sent():
    # a short budget: the step that spends it comes less than FORWARD_JUMP after the last
    core, runner = legs_then_one_more_queued(max_search_time=30.0)
    assert core._episode_start + core.config.max_search_time - runner.t < FORWARD_JUMP
    runner.t = core._episode_start + core.config.max_search_time
    command = runner.step()
    assert core.phase == Phase.GAVE_UP and command.request_state == State.NEED_HELP
    assert command.send_goal is None and not command.goal_tag


def test_a_leg_queued_in_the_step_the_state_leaves_lost_is_not_sent():
    core, runner = legs_then_one_more_queued()
    core.on_state(State.LOCALIZING, runner.t)
    command = runner.step()
    assert core.phase == Phase.IDLE and command.send_goal is None


def test_localized_while_move_base_is_down_the_goal_is_resumed_once_it_is_up(caplog):
    core = make_core()
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    runner.run(2.0)
    core.on_move_base_available(False)
    core.on_state(State.IDLE, runner.t)
    commands = runner.run(5.0)
    assert not any(c.resend_saved_goal or c.request_state for c in commands)
    assert core.saved_goal == GOAL and 'move_base is not up' in caplog.text
    core.on_move_base_available(True)
    command = runner.step()
    assert command.resend_saved_goal and command.request_state == State.NAVIGATING
    assert not any(c.resend_saved_goal for c in runner.run(5.0))        # once


def test_a_goal_waiting_for_move_base_gives_way_to_an_episode_or_a_user_goal():
    core = make_core()
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    core.on_move_base_available(False)
    core.on_state(State.IDLE, runner.t)
    runner.step()
    other = dataclasses.replace(GOAL, x=1.0, goal_id='/rviz-2')
    core.on_user_goal(other, runner.t)                  # the user's own goal, sent by them
    core.on_move_base_available(True)
    assert not any(c.resend_saved_goal for c in runner.run(3.0))
    assert core.saved_goal == other


def test_a_retry_while_move_base_is_down_waits_without_spending_an_attempt():
    core = make_core(resume_retries=1, resume_retry_delay=5.0, max_doubts=0)
    runner = Runner(core)
    resumed(core, runner)
    core.on_goal_done(ABORTED, True, runner.t)
    core.on_move_base_available(False)
    assert not any(c.resend_saved_goal for c in runner.run(12.0))
    core.on_move_base_available(True)
    again = runner.until(lambda c: c.resend_saved_goal, limit=6.0)
    assert again is not None and core._retries_left == 0


def test_a_pending_retry_is_dropped_when_lost_again_or_a_new_goal_comes():
    core = make_core(resume_retries=2, resume_retry_delay=5.0, max_doubts=0)
    runner = Runner(core)
    resumed(core, runner)
    core.on_goal_done(ABORTED, True, runner.t)
    core.on_state(State.LOST, runner.t)                  # the episode owns the robot now
    assert not any(c.resend_saved_goal for c in runner.run(10.0))
    core.on_state(State.IDLE, runner.t)                  # found again: one re-send, as usual
    assert runner.step().resend_saved_goal
    core.on_state(State.NAVIGATING, runner.t)
    core.on_goal_done(ABORTED, True, runner.t)
    other = dataclasses.replace(GOAL, x=1.0, goal_id='/rviz-2')
    core.on_user_goal(other, runner.t)                   # the user takes over
    assert not any(c.resend_saved_goal for c in runner.run(10.0))
    assert core.saved_goal == other


def assert_abort_retried(core, runner):
    """move_base aborts the resumed goal: it is sent again, and LOST is not asked for."""
    core.on_goal_done(ABORTED, True, runner.t)
    commands = runner.run(6.0)
    assert not any(c.request_state == State.LOST for c in commands)
    assert any(c.resend_saved_goal for c in commands)


def test_an_abort_after_the_localizer_alone_ended_lost_asks_for_lost():
    core = make_core(resume_retries=2, resume_retry_delay=5.0, max_doubts=2)
    runner = Runner(core)
    resumed(core, runner)                                # LOST -> IDLE: amcl's word alone
    core.on_state(State.FLYING, runner.t)                # a short lift confirms nothing
    core.on_state(State.NAVIGATING, runner.t)
    for _ in range(2):
        core.on_goal_done(ABORTED, True, runner.t)
        command = runner.step()
        assert command.request_state == State.LOST and not command.resend_saved_goal
        assert core.saved_goal == GOAL
        core.on_state(State.LOST, runner.t)              # granted: a new search, goal kept
        assert runner.step().twist[1] > 0.0 and core.phase == Phase.SPIN
        assert core.saved_goal == GOAL
        runner.run(3.0)
        core.on_state(State.IDLE, runner.t)              # amcl's word alone again
        assert runner.step().resend_saved_goal
        core.on_state(State.NAVIGATING, runner.t)
    # max_doubts spent for this goal: the next abort is retried, not doubted.
    aborted_at = runner.t
    core.on_goal_done(ABORTED, True, runner.t)
    commands = runner.run(6.0)
    assert not any(c.request_state == State.LOST for c in commands)
    assert [c.resend_saved_goal for c in commands].count(True) == 1
    assert runner.log[-1][0] >= aborted_at + 5.0 - 1e-9
    # A new goal from the user gets its own doubts.
    other = dataclasses.replace(GOAL, x=1.0, goal_id='/rviz-2')
    core.on_user_goal(other, runner.t)
    core.on_state(State.LOST, runner.t)
    runner.run(2.0)
    core.on_state(State.IDLE, runner.t)
    assert runner.step().resend_saved_goal
    core.on_state(State.NAVIGATING, runner.t)
    core.on_goal_done(ABORTED, True, runner.t)
    assert runner.step().request_state == State.LOST


def test_an_abort_after_a_confirmed_localization_is_retried():
    # A tag's fix (LOCALIZING) ended the episode.
    core = make_core(resume_retries=1, resume_retry_delay=5.0, max_doubts=2)
    runner = Runner(core)
    resumed(core, runner, fix=True)
    assert_abort_retried(core, runner)
    # The localizer alone, then a tag's correction on initialpose while driving.
    core = make_core(resume_retries=1, resume_retry_delay=5.0, max_doubts=2)
    runner = Runner(core)
    resumed(core, runner)
    core.on_pose_fix()
    assert_abort_retried(core, runner)


@pytest.mark.parametrize('dock_first', [True, False])
def test_docking_confirms_the_localization(dock_first):
    core = make_core(resume_retries=1, resume_retry_delay=5.0, max_doubts=2)
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    runner.run(2.0)
    if dock_first:
        core.on_dock(True)
    core.on_state(State.IDLE, runner.t)                  # lost_service: docked -> IDLE
    if not dock_first:
        core.on_dock(True)
    assert runner.step().resend_saved_goal
    core.on_state(State.NAVIGATING, runner.t)
    assert_abort_retried(core, runner)


def test_a_refused_doubt_sends_the_goal_again():
    core = make_core(resume_retries=2, resume_retry_delay=5.0, max_doubts=2)
    runner = Runner(core)
    resumed(core, runner)
    core.on_goal_done(ABORTED, True, runner.t)
    assert runner.step().request_state == State.LOST
    # lost_service refused (the state stays NAVIGATING): the goal goes out again.
    again = runner.until(lambda c: c.resend_saved_goal, limit=6.0)
    assert again.request_state is None and core.saved_goal == GOAL


def test_doubts_off_retry_every_abort():
    core = make_core(resume_retries=1, resume_retry_delay=5.0, max_doubts=0)
    runner = Runner(core)
    resumed(core, runner)
    assert_abort_retried(core, runner)


def stall_core(**overrides):
    """A core whose saved goal was resumed after the localizer alone ended LOST, with fresh
    odometry from then on; resume_stall_time 15 s, 0.3 m."""
    settings = dict(resume_retries=2, resume_retry_delay=5.0, max_doubts=2,
                    resume_stall_time=15.0, resume_stall_distance=0.3)
    settings.update(overrides)
    core = make_core(**settings)
    runner = Runner(core)
    resumed(core, runner)
    return core, runner


def test_a_resumed_goal_that_does_not_move_the_robot_is_doubted_before_any_abort(caplog):
    caplog.set_level(logging.INFO, logger='rosout')
    core, runner = stall_core()
    resumed_at = runner.t
    # move_base turns in place on a wrong estimate: 0.25 m in all, never 0.3 m from a start.
    commands = drive(core, runner, 14.8, speed=0.25 / 14.8)
    assert not any(c.request_state == State.LOST for c in commands)
    commands = drive(core, runner, 0.5)
    asked = [c for c in commands if c.request_state == State.LOST]
    assert len(asked) == 1 and asked[0].expected_states == frozenset(
        {State.IDLE, State.NAVIGATING})
    assert 15.0 <= runner.t - resumed_at < 15.5
    assert not asked[0].cancel and not asked[0].resend_saved_goal   # it drives until LOST
    assert core.saved_goal == GOAL
    assert any('the resumed goal (5.00, 4.00) has not moved the robot 0.30 m in 15 s after '
               'the localizer alone ended LOST' in r.getMessage() for r in caplog.records)
    # Once: no second request while the same goal still stands, refused or not.
    assert not any(c.request_state == State.LOST for c in drive(core, runner, 20.0))
    # Granted: the episode cancels our re-send, and the goal stays saved; it counted as a
    # doubt (max_doubts 2): one more is left for the next unconfirmed localization.
    core.on_state(State.LOST, runner.t)
    assert runner.step().cancel and core.saved_goal == GOAL
    runner.run(2.0)
    core.on_state(State.IDLE, runner.t)
    assert runner.step().resend_saved_goal
    core.on_state(State.NAVIGATING, runner.t)
    assert any(c.request_state == State.LOST for c in drive(core, runner, 15.5))
    core.on_state(State.LOST, runner.t)
    runner.run(2.0)
    core.on_state(State.IDLE, runner.t)
    assert runner.step().resend_saved_goal
    core.on_state(State.NAVIGATING, runner.t)
    assert not any(c.request_state == State.LOST for c in drive(core, runner, 30.0))


@pytest.mark.parametrize('sent', ['out', 'this step'])
def test_a_move_base_that_goes_under_our_resend_gets_it_again_and_no_stall_is_doubted(sent):
    """move_base dies while it drives our re-send (or before this step has sent it): a
    respawn holds no goal and sends no result, so the goal is sent again once it is back,
    without spending a retry, and the robot standing still meanwhile is no doubt."""
    core = make_core(resume_retries=0, max_doubts=2, resume_stall_time=15.0,
                     resume_stall_distance=0.3)
    runner = Runner(core)
    if sent == 'out':
        resumed(core, runner)
        core.on_move_base_available(False)
    else:
        user_goal_then_lost(core, runner)
        runner.run(2.0)
        core.on_state(State.IDLE, runner.t)     # localized: the re-send is asked for ...
        core.on_move_base_available(False)      # ... and move_base goes before it is sent
    commands = drive(core, runner, 40.0)
    # Nothing is asked for while nothing can drive the goal: no doubt, no NAVIGATING.
    assert not any(c.request_state or c.resend_saved_goal for c in commands)
    assert core.saved_goal == GOAL
    core.on_goal_done(GOAL_LOST, True, runner.t)        # actionlib gives up on it: nothing
    assert not any(c.resend_saved_goal for c in drive(core, runner, 2.0))
    core.on_move_base_available(True)
    again = runner.step()
    assert again.resend_saved_goal and again.goal_tag
    assert again.request_state == (None if sent == 'out' else State.NAVIGATING)
    core.on_state(State.NAVIGATING, runner.t)
    core.on_goal_done(SUCCEEDED, True, runner.t, again.goal_tag)
    runner.run(0.1)
    assert core.phase == Phase.CHECK        # reached on the localizer's word: one turn


def test_a_resumed_goal_that_moves_the_robot_is_not_doubted():
    core, runner = stall_core()
    # 0.3 m every 12 s: slow, but progress.
    commands = drive(core, runner, 40.0, speed=0.025)
    assert not any(c.request_state for c in commands)


@pytest.mark.parametrize('case', ['tag fix', 'pose fix', 'stall off', 'doubts off', 'stale odom',
                                  'reached'])
def test_no_stall_doubt_after_a_confirmed_localization_or_when_off(case):
    overrides = {'stall off': dict(resume_stall_time=0.0),
                 'doubts off': dict(max_doubts=0)}.get(case, {})
    if case == 'tag fix':
        core = make_core(resume_stall_time=15.0, max_doubts=2)
        runner = Runner(core)
        resumed(core, runner, fix=True)
    else:
        core, runner = stall_core(**overrides)
    if case == 'pose fix':
        core.on_pose_fix()
    if case == 'reached':
        core.on_goal_done(SUCCEEDED, True, runner.t)
    commands = runner.run(30.0) if case == 'stale odom' else drive(core, runner, 30.0)
    assert not any(c.request_state == State.LOST for c in commands)


def test_the_stall_time_left_survives_a_clock_jumping_back():
    core, runner = stall_core()
    drive(core, runner, 10.0)
    runner.t -= 100.0
    commands = drive(core, runner, 4.8)
    assert not any(c.request_state == State.LOST for c in commands)
    assert any(c.request_state == State.LOST for c in drive(core, runner, 0.5))


def test_the_stall_time_left_survives_a_clock_jumping_forward(caplog):
    # a bag's gap or a clock stepped by NTP: no event for 100 s, then the robot drives on
    core, runner = stall_core()
    drive(core, runner, 10.0, speed=0.01)
    runner.t += 100.0
    commands = drive(core, runner, 4.8, speed=0.01)
    assert not any(c.request_state == State.LOST for c in commands)
    assert any('clock jumped forward by 100' in r.getMessage() for r in caplog.records)
    assert any(c.request_state == State.LOST for c in drive(core, runner, 0.5, speed=0.01))


def test_a_search_budget_is_not_spent_by_a_clock_jumping_forward():
    core = make_core()
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    runner.run(10.0)
    runner.t += 200.0                    # more than max_search_time, with no event between
    commands = runner.run(5.0)
    assert core.phase != Phase.GAVE_UP
    assert not any(c.request_state == State.NEED_HELP for c in commands)


def test_a_gap_shorter_than_a_forward_jump_is_time_that_passed():
    core, runner = stall_core()
    drive(core, runner, 10.0)
    runner.t += FORWARD_JUMP - 1.0       # a stalled node's gap: counted, the goal doubted
    assert any(c.request_state == State.LOST for c in drive(core, runner, 0.2))


def test_an_abort_soon_after_a_stale_estimate_is_retried_not_doubted(caplog):
    caplog.set_level(logging.INFO, logger='rosout')
    core = make_core(resume_retries=2, resume_retry_delay=5.0, max_doubts=2)
    runner = Runner(core)
    resumed(core, runner)                                # amcl's word alone
    core.on_estimate_age(0.4, runner.t)                  # fresh: nothing to say
    assert not any('stale' in r.getMessage() for r in caplog.records)
    core.on_estimate_age(2.5, runner.t)                  # amcl lags: move_base cannot drive
    assert any('the pose estimate is 2.5 s old' in r.getMessage() for r in caplog.records)
    runner.run(9.5)
    core.on_estimate_age(0.1, runner.t)                  # caught up
    assert_abort_retried(core, runner)                   # 9.5 s after the stale reading
    assert any('move_base aborted the resumed goal 9.5 s after the pose estimate was last '
               'seen stale' in r.getMessage() for r in caplog.records)
    core.on_state(State.NAVIGATING, runner.t)
    # The localization is still unconfirmed: an abort with the estimate fresh for longer than
    # the window is doubted.
    core.on_goal_done(ABORTED, True, runner.t)
    assert runner.step().request_state == State.LOST
    assert core.saved_goal == GOAL


def test_a_stale_estimate_during_the_search_does_not_excuse_the_resumed_goal():
    """amcl lagged while the robot searched (LOST), then caught up; the goal is re-sent and
    move_base aborts it at once with the estimate fresh: doubted, as without the lag."""
    core = make_core(resume_retries=2, resume_retry_delay=5.0, max_doubts=2)
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    core.on_estimate_age(2.5, runner.t)                  # lagging while it searches
    runner.run(2.0)
    core.on_estimate_age(0.1, runner.t)
    core.on_state(State.IDLE, runner.t)                  # localized on amcl's word alone
    assert runner.step().resend_saved_goal
    core.on_state(State.NAVIGATING, runner.t)
    runner.run(0.5)
    core.on_goal_done(ABORTED, True, runner.t)            # 2.6 s after the stale reading
    assert runner.step().request_state == State.LOST
    assert core.saved_goal == GOAL


@pytest.mark.parametrize('case', ['check off', 'not a number', 'unknown'])
def test_an_abort_is_doubted_when_the_estimate_age_says_nothing(case, caplog):
    core = make_core(resume_retries=2, resume_retry_delay=5.0, max_doubts=2,
                     stale_estimate_age=0.0 if case == 'check off' else 1.0)
    runner = Runner(core)
    resumed(core, runner)
    core.on_estimate_age({'check off': 30.0, 'not a number': math.nan,
                          'unknown': None}[case], runner.t)
    assert ('not a number' in caplog.text) == (case == 'not a number')
    core.on_goal_done(ABORTED, True, runner.t)
    assert runner.step().request_state == State.LOST


def test_an_estimate_older_than_tf_keeps_is_stale(caplog):
    core = make_core(resume_retries=2, resume_retry_delay=5.0, max_doubts=2)
    runner = Runner(core)
    resumed(core, runner)
    core.on_estimate_age(math.inf, runner.t)
    assert 'the pose estimate is older than tf keeps' in caplog.text
    assert_abort_retried(core, runner)


def test_a_stall_while_the_estimate_was_stale_is_timed_again():
    core, runner = stall_core()
    drive(core, runner, 8.0)
    core.on_estimate_age(3.0, runner.t)                  # the navigator stopped for want of it
    commands = drive(core, runner, 7.5)                  # 15 s standing: not a doubt
    assert not any(c.request_state == State.LOST for c in commands)
    # Timed again from the declined doubt (at 15 s): with the estimate fresh, 15 s more
    # standing are a doubt.
    commands = drive(core, runner, 16.0)
    asked = [i for i, c in enumerate(commands) if c.request_state == State.LOST]
    assert len(asked) == 1
    assert 30.0 <= 15.5 + (asked[0] + 1) * DT <= 30.5


def test_a_stale_estimate_is_remembered_across_a_clock_jumping_back():
    core = make_core(resume_retries=2, resume_retry_delay=5.0, max_doubts=2)
    runner = Runner(core)
    resumed(core, runner)
    core.on_estimate_age(2.5, runner.t)
    runner.run(2.0)
    runner.t -= 100.0
    runner.run(2.0)
    assert_abort_retried(core, runner)


def test_picked_up_mid_search_stops_then_lost_again_restarts_with_a_spin():
    core = make_core()
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    runner.until(lambda c: c.send_goal is not None)
    core.on_state(State.FLYING, runner.t)
    stop = runner.step()
    assert stop.twist == (0.0, 0.0) and stop.cancel
    assert runner.run(10.0) == []
    assert core.saved_goal == GOAL
    core.on_odom(-4.0, 6.0, runner.t)       # put down elsewhere
    core.on_state(State.LOST, runner.t)
    lost_at = runner.t
    assert runner.step().twist[1] == pytest.approx(1.2566, abs=1e-4)
    leg = runner.until(lambda c: c.send_goal is not None)
    assert runner.t - lost_at == pytest.approx(5.0, abs=DT + 1e-9)
    # A fresh spiral around where the robot was put down.
    assert leg.send_goal == pytest.approx(SpiralSearch(-4.0, 6.0, 1.0).next_goal())


def test_goals_move_base_drives_are_saved_as_it_drives_them():
    """A hand-typed goal: a quaternion of any length about the vertical axis (move_base
    normalises it)."""
    core = make_core()
    runner = Runner(core)
    core.on_user_goal(UserGoal('map', 1.0, 0.0, qz=0.5, qw=0.5, goal_id='g1'), runner.t)
    assert core.saved_goal == UserGoal('map', 1.0, 0.0, qz=0.5, qw=0.5, goal_id='g1')
    core.on_user_goal(UserGoal('map', 2.0, 0.0, qw=2.0, goal_id='g2'), runner.t)
    assert core.saved_goal == UserGoal('map', 2.0, 0.0, qw=2.0, goal_id='g2')
    assert UserGoal('map', 0.0, 0.0, qx=0.02, qw=1.0).problem() is None
    assert 'does not turn about the vertical axis' in \
        UserGoal('map', 0.0, 0.0, qx=0.03, qw=1.0).problem()
    assert 'no orientation' in UserGoal('map', 0.0, 0.0, qw=1e-4).problem()


def test_bad_input_is_skipped():
    core = make_core()
    runner = Runner(core)
    core.on_pose(float('nan'), 0.0, 0.0)
    core.on_user_goal(UserGoal('map', float('inf'), 0.0), runner.t)
    core.on_user_goal(UserGoal('map', 1.0, 0.0, qw=0.0), runner.t)
    core.on_user_goal(UserGoal('map', 1.0, 0.0, qx=0.1, qw=1.0), runner.t)    # tilted
    core.on_user_goal(UserGoal('', 1.0, 0.0), runner.t)     # navfn refuses its frame too
    core.on_state('LOST', runner.t)
    assert core.saved_goal is None and core.state == State.IDLE
    assert core.step(float('nan')) == Command()
    core.on_odom(float('inf'), 0.0, runner.t)
    core.on_state(State.LOST, runner.t)
    leg = runner.until(lambda c: c.send_goal is not None)
    assert leg.send_goal[:2] == pytest.approx((ODOM[0] + 1.0, ODOM[1]))


def test_clock_jumping_back_keeps_the_remaining_spin():
    core = make_core()
    core.on_state(State.LOST, 100.0)
    core.step(102.0)
    assert core.step(1.0).twist is not None        # clock reset: 3 s of spin remain
    assert core.phase == Phase.SPIN
    assert core.step(3.9).send_goal is None
    assert core.step(4.1).send_goal is not None


def test_clock_jumping_back_keeps_the_stall_time_left_of_a_leg():
    core = make_core()
    core.on_state(State.LOST, 100.0)
    t = 100.0
    while core.phase != Phase.LEG:
        t = round(t + DT, 6)
        core.on_odom(*ODOM, t, 'odom')
        core.step(t)
    core.on_odom(*ODOM, 106.0, 'odom')
    assert not core.step(106.0).cancel             # the leg's progress is timed from here
    for t in (2.0, 4.0, 6.9):                      # clock reset: 5 s of stall time remain
        core.on_odom(*ODOM, t, 'odom')
        assert not core.step(t).cancel
    core.on_odom(*ODOM, 7.1, 'odom')
    assert core.step(7.1).cancel                   # stalled, not 104 s later


def test_shutdown_cancels_and_stops():
    core = make_core()
    runner = Runner(core)
    core.on_state(State.LOST, runner.t)
    runner.until(lambda c: c.send_goal is not None)
    command = core.shutdown()
    assert command.cancel and command.twist == (0.0, 0.0)
    assert core.phase == Phase.IDLE


@pytest.mark.parametrize('params, key', [
    ({'strategy': 'random'}, 'strategy'),
    ({'spin_speed': 0.0}, 'spin_speed'),
    ({'spiral_step': -1.0}, 'spiral_step'),
    ({'goal_timeout': float('nan')}, 'goal_timeout'),
    ({'goal_timeout_per_metre': -1.0}, 'goal_timeout_per_metre'),
    ({'leg_stall_time': -1.0}, 'leg_stall_time'),
    ({'leg_stall_distance': 0.0}, 'leg_stall_distance'),
    ({'spiral_anchor': 'base_link'}, 'spiral_anchor'),
    ({'rate': 0.0}, 'rate'),
    ({'max_aborts': 0}, 'max_aborts'),
    ({'max_aborts': 1.5}, 'max_aborts'),
    ({'resume_retries': -1}, 'resume_retries'),
    ({'resume_retry_delay': -1.0}, 'resume_retry_delay'),
    ({'max_doubts': -1}, 'max_doubts'),
    ({'max_doubts': 1.5}, 'max_doubts'),
    ({'max_doubts': True}, 'max_doubts'),
    ({'map_frame': ''}, 'map_frame'),
    ({'base_frame': '/base_footprint'}, 'base_frame'),
    ({'move_base_timeout': -1.0}, 'move_base_timeout'),
    ({'move_base_retry': 0.0}, 'move_base_retry'),
    ({'max_search_time': 4.0}, 'max_search_time'),
    ({'max_search_distance': -1.0}, 'max_search_distance'),
    ({'max_search_distance': float('nan')}, 'max_search_distance'),
    ({'state_namespace': ' '}, 'state_namespace'),
])
def test_bad_config_names_key_and_value(params, key):
    with pytest.raises(ConfigError) as error:
        config_from_params(RecoveryConfig, params)
    assert any(p.startswith(key + '=') for p in error.value.problems), error.value.problems


def test_config_defaults_and_reactive_group():
    warnings = []
    config = config_from_params(RecoveryConfig, {
        'strategy': 'reactive', 'max_aborts': 5, 'reactive': {'max_speed': 0.1}},
        warn=warnings.append)
    assert warnings == []
    assert config.strategy == 'reactive' and config.max_aborts == 5
    assert config.reactive_config().max_speed == 0.1
    assert config.spin_duration == pytest.approx(5.0)
    default = RecoveryConfig()
    assert (default.spin_speed, default.spiral_step, default.goal_timeout,
            default.max_search_time, default.rate, default.map_frame) == (
        pytest.approx(1.2566, abs=1e-4), 1.0, 5.0, 165.0, 10.0, 'map')
    assert (default.spiral_anchor, default.goal_timeout_per_metre) == ('odom', 5.0)
    assert default.reactive_config() == ReactiveConfig()


def test_reactive_fields_mirror_reactive_config():
    mirrored = {f.metadata['reactive'] for f in dataclasses.fields(RecoveryConfig)
                if 'reactive' in f.metadata}
    assert mirrored == set(REACTIVE_FIELDS)


def test_all_problems_are_reported_at_once():
    with pytest.raises(ConfigError) as error:
        config_from_params(RecoveryConfig, {'rate': -1.0, 'spiral_step': 0.0})
    assert len(error.value.problems) == 2


# ---------------------------------------------------------------- adapter conversions

nodes = pytest.importorskip('lost_and_found.nodes.lost_and_found')


def test_goal_status_values_match_actionlib():
    from actionlib_msgs.msg import GoalStatus
    from lost_and_found.core import recovery
    assert (recovery.PREEMPTED, recovery.SUCCEEDED, recovery.ABORTED, recovery.REJECTED,
            recovery.RECALLED, recovery.GOAL_LOST) == (
        GoalStatus.PREEMPTED, GoalStatus.SUCCEEDED, GoalStatus.ABORTED, GoalStatus.REJECTED,
        GoalStatus.RECALLED, GoalStatus.LOST)


def test_pose_stamped_round_trip():
    import rospy
    msg = nodes.pose_stamped_from_goal(GOAL, rospy.Time(12, 5))
    assert msg.header.frame_id == 'map' and msg.header.stamp == rospy.Time(12, 5)
    back = nodes.user_goal_from_pose(msg.header, msg.pose, 'abc')
    assert back == dataclasses.replace(GOAL, goal_id='abc')


def test_leg_goal_message():
    import rospy
    goal = nodes.move_base_goal_from_leg((1.0, 2.0, math.pi / 2), 'odom', rospy.Time(3))
    pose = goal.target_pose
    assert pose.header.frame_id == 'odom' and pose.header.stamp == rospy.Time(3)
    assert (pose.pose.position.x, pose.pose.position.y) == (1.0, 2.0)
    assert nodes.yaw_from_quaternion(pose.pose.orientation) == pytest.approx(math.pi / 2)


def test_scan_and_twist_conversion():
    from sensor_msgs.msg import LaserScan
    msg = LaserScan(angle_min=-0.5, angle_increment=0.25, range_min=0.1, range_max=4.0,
                    ranges=[1.0, 2.0, float('inf')])
    scan = nodes.scan_from_msg(msg)
    assert list(scan.ranges) == [1.0, 2.0, float('inf')]
    assert (scan.angle_min, scan.angle_increment, scan.range_min, scan.range_max) == (
        -0.5, 0.25, 0.1, 4.0)
    twist = nodes.twist_msg((0.1, -0.4))
    assert (twist.linear.x, twist.angular.z) == (0.1, -0.4)


class _Recorder:
    """Stands in for a rospy.Publisher."""

    def __init__(self):
        """Nothing published yet."""
        self.sent = []

    def publish(self, msg):
        """Record ``msg``."""
        self.sent.append(msg)


def test_adapter_saves_user_goals_but_not_its_own(monkeypatch):
    import rospy
    from move_base_msgs.msg import MoveBaseActionGoal, MoveBaseActionResult
    # No master here: a fixed clock stands in for the node's.
    monkeypatch.setattr(rospy, 'get_time', lambda: 5.0)
    monkeypatch.setattr(rospy.Time, 'now', staticmethod(lambda: rospy.Time(5)))
    core = make_core()
    node = nodes.RecoveryNode(core, core.config)
    node._saved_pub = _Recorder()
    own = MoveBaseActionGoal()
    own.goal.target_pose = nodes.pose_stamped_from_goal(GOAL, rospy.Time(1))
    own._connection_header = {'callerid': rospy.get_name()}
    node._on_action_goal(own)
    assert core.saved_goal is None and node._saved_pub.sent == []
    user = MoveBaseActionGoal()
    user.goal.target_pose = own.goal.target_pose
    user.goal_id.id = '/rviz-7-1.0'
    user._connection_header = {'callerid': '/rviz'}
    node._on_action_goal(user)
    assert core.saved_goal == dataclasses.replace(GOAL, goal_id='/rviz-7-1.0')
    assert node._saved_pub.sent[-1].pose.position.x == GOAL.x
    # Results of our own goals (actionlib ids start with our name) are not the user's.
    result = MoveBaseActionResult()
    result.status.status = SUCCEEDED
    result.status.goal_id.id = rospy.get_name() + '-3-1.0'
    node._on_result(result)
    assert core.saved_goal is not None
    result.status.goal_id.id = '/rviz-7-1.0'
    node._on_result(result)
    assert core.saved_goal is None
    assert node._saved_pub.sent[-1].header.frame_id == ''


@pytest.mark.parametrize('state', [State.NAVIGATING, State.IDLE, State.LOCALIZING])
def test_a_pose_fix_far_from_the_estimate_clears_the_costmaps(state, caplog):
    caplog.set_level(logging.INFO, logger='rosout')
    core = make_core()
    runner = Runner(core)
    core.on_state(state, runner.t)
    runner.run(1.0)
    core.on_pose(*HOME)
    core.on_pose_fix((HOME[0] + 0.6, HOME[1] + 0.8, HOME[2]))        # 1.0 m: the limit
    assert runner.step().clear_costmaps
    assert any('a pose fix 1.0 m from the estimate' in r.getMessage() for r in caplog.records)
    # A correction of a few decimetres leaves them, and so does one without a pose.
    for fix in ((HOME[0] + 0.5, HOME[1], 1.0), None):
        core.on_pose_fix(fix)
        assert not runner.step().clear_costmaps
    # The localizer's answer to the fix came first: judged against the estimate before it.
    core.on_pose(20.0, 5.0, 0.0)
    core.on_pose_fix((20.0, 5.0, 0.0))
    assert runner.step().clear_costmaps


@pytest.mark.parametrize('overrides', [dict(clear_costmaps=False), dict(clear_costmaps_jump=0.0)])
def test_no_clearing_on_a_pose_fix_when_off_or_without_an_estimate(overrides, caplog):
    core = make_core(**overrides)
    runner = Runner(core)
    core.on_pose_fix((HOME[0] + 30.0, HOME[1], 0.0))
    assert not runner.step().clear_costmaps
    fresh = RecoveryCore(RecoveryConfig(), wander=FakeWander())   # no estimate yet
    fresh.on_state(State.IDLE, 0.0)
    fresh.on_pose_fix((30.0, 0.0, 0.0))
    assert not fresh.step(0.1).clear_costmaps
    # A fix that is not a number is logged and changes nothing.
    caplog.set_level(logging.WARNING, logger='rosout')
    core = make_core()
    core.on_pose_fix((math.nan, 0.0, 0.0))
    assert not Runner(core).step().clear_costmaps
    assert any('non-finite pose fix' in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize('strategy', ['spiral', 'reactive', 'none'])
def test_every_lost_episode_asks_move_base_to_clear_its_costmaps_once(strategy):
    core = make_core(strategy=strategy)
    runner = Runner(core)
    core.on_state(State.LOST, runner.t)
    commands = runner.run(3.0)
    assert [c.clear_costmaps for c in commands].count(True) == 1 and commands[0].clear_costmaps
    core.on_state(State.LOCALIZING, runner.t)
    runner.run(1.0)
    core.on_state(State.LOST, runner.t)                  # a new episode: cleared again
    assert runner.step().clear_costmaps
    quiet = make_core(strategy=strategy, clear_costmaps=False)
    quiet.on_state(State.LOST, 0.0)
    assert not any(c.clear_costmaps for c in Runner(quiet).run(3.0))


class _FailingService:
    """Stands in for the rospy.ServiceProxy of a move_base that is not running."""

    def __init__(self):
        """Not called yet."""
        self.calls = 0

    def wait_for_service(self, timeout):
        """There is no such service."""
        import rospy
        self.calls += 1
        raise rospy.ROSException('timeout exceeded while waiting for service')


def test_adapter_clears_costmaps_off_the_loop_and_survives_a_missing_move_base(monkeypatch):
    import rospy
    monkeypatch.setattr(rospy, 'get_time', lambda: 5.0)
    monkeypatch.setattr(rospy.Time, 'now', staticmethod(lambda: rospy.Time(5)))
    core = make_core()
    node = nodes.RecoveryNode(core, core.config)
    node._cmd_pub, node._cancel_pub = _Recorder(), _Recorder()
    node._clear_costmaps = _FailingService()
    node._execute(Command(clear_costmaps=True))
    assert node._clear_costmaps.calls == 0                 # queued for the worker, not called
    call = node._requests.get_nowait()
    call()                                                 # the worker: logs, does not raise
    assert node._clear_costmaps.calls == 1


@pytest.mark.parametrize('goal_id', ['', 'rviz-goal-7'])
def test_the_adapters_cancel_of_a_user_goal_leaves_move_base_no_mark(monkeypatch, goal_id):
    # A cancel stamped t makes move_base recall every goal stamped up to t that comes later
    # (actionlib keeps the latest cancel stamp): after a clock reset, all of ours. Stamped 0,
    # an empty id cancels everything there is and marks nothing.
    import rospy
    monkeypatch.setattr(rospy, 'get_time', lambda: 5.0)
    monkeypatch.setattr(rospy.Time, 'now', staticmethod(lambda: rospy.Time(5)))
    core = make_core()
    node = nodes.RecoveryNode(core, core.config)
    node._cmd_pub, node._cancel_pub = _Recorder(), _Recorder()
    node._execute(Command(cancel_user=goal_id))
    assert [(m.id, m.stamp) for m in node._cancel_pub.sent] == [(goal_id, rospy.Time(0))]


class _Client:
    """Stands in for the move_base SimpleActionClient: keeps what it is sent."""

    def __init__(self):
        """Nothing sent yet."""
        self.sent = []

    def send_goal(self, goal, done_cb=None):
        """Keep the goal and its done callback."""
        self.sent.append((goal, done_cb))


def test_adapter_sends_a_resend_only_while_the_core_still_wants_it(monkeypatch):
    """A user goal handled between the step and its execution went to move_base itself:
    neither it nor the goal it replaced may follow it there as ours."""
    import rospy
    monkeypatch.setattr(rospy, 'get_time', lambda: 5.0)
    monkeypatch.setattr(rospy.Time, 'now', staticmethod(lambda: rospy.Time(5)))
    core = make_core(resume_retries=1)
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    runner.run(2.0)
    core.on_state(State.IDLE, runner.t)
    node = nodes.RecoveryNode(core, core.config)
    node._cmd_pub, node._cancel_pub, node._saved_pub = _Recorder(), _Recorder(), _Recorder()
    node._client = _Client()
    node._on_timer(None)                                # the step asks for the re-send ...
    assert len(node._client.sent) == 1
    pose = node._client.sent[0][0].target_pose.pose.position
    assert (pose.x, pose.y) == (GOAL.x, GOAL.y)
    node._client.sent.clear()
    core.on_goal_done(ABORTED, True, runner.t, core._tag)   # noqa: SLF001 - ours, retried
    runner.run(4.0)
    core.on_state(State.NAVIGATING, runner.t)
    command = runner.until(lambda c: c.resend_saved_goal, limit=3.0)   # the retry is due ...
    core.on_user_goal(UserGoal('map', 7.0, 1.0, goal_id='other'), runner.t)    # ... a goal
    node._execute(command)
    assert node._client.sent == []                      # the user's own goal drives
    assert core.saved_goal.goal_id == 'other'


def test_adapter_passes_a_pose_fix_on_initialpose_to_the_core(monkeypatch):
    import rospy
    from geometry_msgs.msg import PoseWithCovarianceStamped
    monkeypatch.setattr(rospy, 'get_time', lambda: 5.0)
    monkeypatch.setattr(rospy.Time, 'now', staticmethod(lambda: rospy.Time(5)))
    core = make_core(resume_retries=1, max_doubts=2)
    runner = Runner(core)
    resumed(core, runner)                               # the localizer alone
    node = nodes.RecoveryNode(core, core.config)
    node._saved_pub = _Recorder()
    node._on_initialpose(PoseWithCovarianceStamped())   # a tag's correction while driving
    core.on_goal_done(ABORTED, True, runner.t)
    assert runner.step().request_state is None          # retried, not doubted


@pytest.mark.parametrize('frame, clears', [('map', True), ('/map', True), ('', True),
                                           ('odom', False)])
def test_adapter_hands_the_fix_pose_in_the_map_frame_only(monkeypatch, frame, clears):
    import rospy
    from geometry_msgs.msg import PoseWithCovarianceStamped
    monkeypatch.setattr(rospy, 'get_time', lambda: 5.0)
    core = make_core()
    node = nodes.RecoveryNode(core, core.config)
    node._saved_pub = _Recorder()
    msg = PoseWithCovarianceStamped()
    msg.header.frame_id = frame
    msg.pose.pose.position.x = HOME[0] + 12.0
    msg.pose.pose.orientation.w = 1.0
    node._on_initialpose(msg)
    assert core.step(5.0).clear_costmaps == clears


def _transform(parent, child, stamp):
    import rospy
    from geometry_msgs.msg import TransformStamped
    msg = TransformStamped()
    msg.header.frame_id, msg.child_frame_id = parent, child
    msg.header.stamp = rospy.Time.from_sec(stamp)
    msg.transform.rotation.w = 1.0
    return msg


@pytest.mark.parametrize('odom_from, doubts, seen, expected', [
    (1.0, 2, False, 3.0),       # amcl's map -> odom last came at 2 s, the odometry since 1 s
    (2.5, 2, True, math.inf),   # the odometry kept no time as old as amcl's last transform
    (2.5, 2, False, None),      # ... but the chain was never whole: start-up, nothing to say
    (1.0, 0, True, None)])      # no doubts: nothing to check
def test_adapter_measures_the_age_of_the_estimate_move_base_drives_by(monkeypatch, odom_from,
                                                                      doubts, seen, expected):
    import rospy
    import tf2_ros
    now = [3.0]
    monkeypatch.setattr(rospy, 'get_time', lambda: now[0])
    core = make_core(max_doubts=doubts)
    node = nodes.RecoveryNode(core, core.config)
    cfg = core.config
    if seen:        # the chain whole once before: map -> odom and odometry at 0.5 s
        node._tf_buffer = tf2_ros.Buffer(debug=False)     # no master: no frames service
        node._tf_buffer.set_transform(_transform(cfg.map_frame, 'odom', 0.5), 'amcl')
        node._tf_buffer.set_transform(_transform('odom', cfg.base_frame, 0.5), 'base')
        assert node._estimate_age() == (pytest.approx(2.5) if doubts else None)
    node._tf_buffer = tf2_ros.Buffer(debug=False)
    assert node._estimate_age() is None                   # no localizer now: nothing to say
    now[0] = 5.0
    node._tf_buffer.set_transform(_transform(cfg.map_frame, 'odom', 2.0), 'amcl')
    for stamp in (odom_from, 5.0):
        node._tf_buffer.set_transform(_transform('odom', cfg.base_frame, stamp), 'base')
    age = node._estimate_age()
    assert age == expected if expected in (None, math.inf) else age == pytest.approx(expected)


@pytest.mark.parametrize('state', [State.FLYING, State.LOCALIZING, State.NEED_HELP])
def test_a_user_goal_while_not_localized_is_saved_and_cancelled(state):
    core = make_core()
    core.on_state(state, 1.0)
    core.on_user_goal(GOAL, 2.0)
    command = core.step(2.1)
    assert core.saved_goal == GOAL
    assert command.cancel_user == GOAL.goal_id and command.request_state is None


def test_lost_in_the_same_period_as_the_resume_does_not_resend():
    core = make_core()
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    core.on_state(State.IDLE, runner.t)                 # localized: a re-send is pending ...
    core.on_state(State.LOST, runner.t)                 # ... and lost again before the step
    command = runner.step()
    assert not command.resend_saved_goal and command.request_state is None
    assert core.saved_goal == GOAL and core.phase == Phase.SPIN


def test_strategy_none_stands_still_keeps_the_goal_and_asks_for_help_on_budget():
    core = make_core(strategy='none')
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    assert core.phase == Phase.WAIT and core.saved_goal is not None
    commands = runner.run(core.config.max_search_time - 1.0)
    # No spin, no leg, no wander: at most the one stop when the episode starts.
    assert all(c.twist in (None, (0.0, 0.0)) for c in commands)
    assert all(c.send_goal is None for c in commands)
    commands = runner.run(2.0)
    assert any(c.request_state == State.NEED_HELP for c in commands)
    assert core.phase == Phase.GAVE_UP and core.saved_goal is not None


def test_strategy_none_resumes_the_saved_goal_once_localized():
    core = make_core(strategy='none')
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    runner.run(3.0)
    core.on_state(State.IDLE, runner.t)
    command = runner.step()
    assert command.resend_saved_goal and command.request_state == State.NAVIGATING


#: A flat wall 1 m ahead, as 101 beams over +-1 rad see it (a Kinect's columns are as dense).
WALL_AHEAD = Scan(ranges=tuple(1.0 / math.cos(-1.0 + 0.02 * i) for i in range(101)),
                  angle_min=-1.0, angle_increment=0.02, range_min=0.1, range_max=10.0)


def explore_core(**overrides):
    """A reactive core that drove 3 m along +x in 'odom' (from x = -3 to 0, facing +x) and
    saw a wall 1 m ahead in the look-around spin that followed; returns (core, runner, x),
    x where the spin began."""
    core = make_core(strategy='reactive', look_around_every=3.0, **dict(
        {'explore': True}, **overrides))
    runner = Runner(core)
    core.on_odom(-3.0, 0.0, runner.t, 'odom', yaw=0.0, stamp=runner.t)
    core.on_state(State.LOST, runner.t)
    runner.run(core.config.spin_duration + DT)         # the first spin: nothing seen
    assert core.phase == Phase.WANDER
    x = -3.0
    while core.phase == Phase.WANDER:
        x += 0.05
        core.on_odom(x, 0.0, runner.t, 'odom', yaw=0.0, stamp=runner.t)
        core.on_scan(NOTHING, runner.t, stamp=runner.t)
        runner.step()
    assert core.phase == Phase.SPIN and x == pytest.approx(0.0, abs=0.15)
    core.on_odom(x, 0.0, runner.t, 'odom', yaw=0.0, stamp=runner.t)
    core.on_scan(WALL_AHEAD, runner.t, stamp=runner.t)
    assert len(core._memory) > 0
    return core, runner, x


def finish_spin(core, runner, x):
    """Step through the spin with fresh odometry at (x, 0) facing +x (the spin is open-loop;
    the odometry only has to be fresh when it ends)."""
    while core.phase == Phase.SPIN:
        core.on_odom(x, 0.0, runner.t, 'odom', yaw=0.0, stamp=runner.t)
        runner.step()
    assert core.phase == Phase.WANDER


def test_after_a_look_around_the_wander_first_turns_toward_new_ground():
    """Back is where the robot came from, ahead is a wall: it turns to a side, on odometry,
    at no more than the spin speed, and only then hands over to the wander."""
    core, runner, x = explore_core()
    steps = len(core.wander.scans)
    finish_spin(core, runner, x)
    yaw, turns = 0.0, []
    for _ in range(50):
        core.on_odom(x, 0.0, runner.t, 'odom', yaw=yaw, stamp=runner.t)
        core.on_scan(NOTHING, runner.t, stamp=runner.t)
        twist = runner.step().twist
        if len(core.wander.scans) > steps:
            break
        assert twist[0] == 0.0 and 0.0 < abs(twist[1]) <= core.config.spin_speed
        turns.append(twist[1])
        yaw += twist[1] * DT
    assert turns and len(set(math.copysign(1.0, w) for w in turns)) == 1
    # Sideways: not back over the driven metres, not into the wall.
    assert math.radians(45.0) < abs(yaw) < math.radians(135.0)


def test_without_explore_or_a_heading_the_wander_starts_at_once():
    for overrides, with_yaw in (({'explore': False}, True), ({}, False)):
        core, runner, x = explore_core(**overrides)
        finish_spin(core, runner, x)
        # With explore on a turn is pending; the heading-less odometry below drops it.
        assert (core._heading_goal is not None) == (overrides == {})
        steps = len(core.wander.scans)
        core.on_odom(x, 0.0, runner.t, 'odom', yaw=0.0 if with_yaw else None,
                     stamp=runner.t)
        core.on_scan(NOTHING, runner.t, stamp=runner.t)
        assert runner.step().twist == core.wander.twist
        assert len(core.wander.scans) == steps + 1


def open_space_turn():
    """A core (seek_walls 2.5) whose look-around 3 m past a wall saw nothing near: it is about
    to turn back toward the wall, about 180 deg, facing +x at (x, 0)."""
    core, runner, x = explore_core(explore=False, seek_walls=2.5)
    finish_spin(core, runner, x)
    assert core._heading_goal is None and core._walled_at == pytest.approx((x, 0.0))
    core._memory.clear()                                # the wall left far behind
    start = x
    while core.phase == Phase.WANDER:
        x += 0.05
        core.on_odom(x, 0.0, runner.t, 'odom', yaw=0.0, stamp=runner.t)
        core.on_scan(NOTHING, runner.t, stamp=runner.t)
        runner.step()
    assert x - start == pytest.approx(3.0, abs=0.15)
    finish_spin(core, runner, x)
    return core, runner, x


def test_in_open_space_the_wander_first_turns_back_toward_the_last_wall(caplog):
    """The look-around after the first 3 m saw a wall 1 m ahead: remembered, no turn. The next
    one, 3 m on, sees nothing within seek_walls: turn back toward where that wall was seen."""
    caplog.set_level(logging.INFO, logger='rosout')
    core, runner, x = open_space_turn()
    goal = core._heading_goal
    assert goal is not None and abs(math.remainder(goal[0] - math.pi, 2 * math.pi)) < 0.1
    assert 'nothing within 2.5 m after the spin' in caplog.text
    # The wall seen where it stands has left the memory (someone walked past): no turn.
    core, runner, x = explore_core(explore=False, seek_walls=2.5)
    core._walled_at = (x + 0.3, 0.0)
    core._memory.clear()
    finish_spin(core, runner, x)
    assert core._heading_goal is None
    # Off: no turn, whatever the memory holds.
    core, runner, x = explore_core(explore=False, seek_walls=0.0)
    core._walled_at = (-3.0, 0.0)
    core._memory.clear()
    finish_spin(core, runner, x)
    assert core._heading_goal is None


def test_the_place_a_wall_was_seen_is_forgotten_when_it_means_nothing_any_more():
    """seek_walls' remembered place is in the odometry frame: an odometry reset (a jump) or a
    new episode (the robot was carried) forgets it; a step of normal driving keeps it."""
    core, runner, x = explore_core(explore=False, seek_walls=2.5)
    finish_spin(core, runner, x)
    assert core._walled_at == pytest.approx((x, 0.0))
    core.on_odom(x + 0.05, 0.0, runner.t, 'odom', yaw=0.0, stamp=runner.t)
    assert core._walled_at == pytest.approx((x, 0.0))
    core.on_odom(x + 5.0, 0.0, runner.t, 'odom', yaw=0.0, stamp=runner.t)  # reset: 5 m jump
    assert core._walled_at is None
    core, runner, x = explore_core(explore=False, seek_walls=2.5)
    finish_spin(core, runner, x)
    assert core._walled_at is not None
    core.on_state(State.FLYING, runner.t)                                 # lifted ...
    core.on_state(State.LOST, runner.t + 3.0)                             # ... and put down
    runner.t += 3.0
    runner.step()
    assert core._walled_at is None


def test_a_turn_that_does_not_arrive_hands_over_at_its_deadline():
    """Odometry whose heading never changes (a wheel slipping): the wander takes over half as
    long again as the turn would take, and a second, after it began."""
    core, runner, x = explore_core()
    finish_spin(core, runner, x)
    cfg = core.config
    limit = 1.5 * geometry.turn_time(geometry.wrap_angle(core._heading_goal[0] - 0.0),
                                     cfg.reactive_turn_gain,
                                     cfg.reactive_min_turn_speed, cfg.spin_speed,
                                     cfg.reactive_heading_tolerance) + 1.0
    start, steps = runner.t, len(core.wander.scans)
    while len(core.wander.scans) == steps:
        core.on_odom(x, 0.0, runner.t, 'odom', yaw=0.0, stamp=runner.t)
        core.on_scan(NOTHING, runner.t, stamp=runner.t)
        runner.step()
        assert runner.t - start <= limit + 2 * DT
    assert runner.t - start == pytest.approx(limit, abs=2 * DT)


def test_a_half_turn_on_a_base_slower_than_told_ends_facing_the_heading(caplog):
    """The turn back toward the wall (about 180 deg) on a base that turns at 80 % of the rate
    it is told (acceleration, load): it still faces the heading before the wander starts."""
    caplog.set_level(logging.WARNING, logger='rosout')
    core, runner, x = open_space_turn()
    caplog.clear()
    heading, steps, yaw = core._heading_goal[0], len(core.wander.scans), 0.0
    for _ in range(int(core.config.spin_duration * 3.0 / DT)):    # past any deadline
        core.on_odom(x, 0.0, runner.t, 'odom', yaw=yaw, stamp=runner.t)
        core.on_scan(NOTHING, runner.t, stamp=runner.t)
        twist = runner.step().twist
        if len(core.wander.scans) > steps:
            break
        yaw = float(geometry.wrap_angle(yaw + 0.8 * twist[1] * DT))
    else:
        pytest.fail('the wander never took over from the turn')
    assert abs(geometry.wrap_angle(heading - yaw)) <= core.config.reactive_heading_tolerance
    assert 'at its deadline' not in caplog.text


def test_an_odometry_reset_starts_the_path_anew():
    """A base driver restarted mid-search: its odometry jumps, and the positions of the old
    frame must not count as ground already searched."""
    core, runner, x = explore_core()
    assert len(core._path) > 10
    core.on_odom(x + 7.0, 4.0, runner.t, 'odom', yaw=0.0, stamp=runner.t)
    assert core._path == [(x + 7.0, 4.0)]
    core.on_odom(x + 7.3, 4.0, runner.t, 'odom', yaw=0.0, stamp=runner.t)
    assert core._path == [(x + 7.0, 4.0), (x + 7.3, 4.0)]


def test_max_search_distance_asks_for_help_once_that_far_driven():
    core = make_core(max_search_time=100.0, max_search_distance=3.0)
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    lost_at = runner.t
    commands = drive(core, runner, 20.0, 0.2)       # 3 m after 15 s
    help_at = next(i for i, c in enumerate(commands) if c.request_state == State.NEED_HELP)
    # counted in steps of at least PATH_STEP: at most one such step late
    assert 15.0 - DT <= (help_at + 1) * DT <= 15.0 + PATH_STEP / 0.2 + DT
    assert runner.t - lost_at < 100.0
    assert 'search budget of 3.0 m spent' in core._help_why
    assert commands[help_at].twist == (0.0, 0.0) and core.saved_goal == GOAL


def test_max_search_distance_skips_odometry_resets_and_runs_over_unconfirmed_fixes():
    core = make_core(max_search_time=100.0, max_search_distance=3.0)
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    drive(core, runner, 5.0, 0.2)                   # 1 m
    x, y = core._odom
    core.on_odom(x + 50.0, y, runner.t, 'odom')    # a reset of the odometry: not driven
    core.on_state(State.LOCALIZING, runner.t)
    drive(core, runner, 2.5, 0.2)                   # 0.5 m while the fix is checked
    core.on_state(State.LOST, runner.t)             # not confirmed: the same episode
    commands = drive(core, runner, 20.0, 0.2)
    help_at = next(i for i, c in enumerate(commands) if c.request_state == State.NEED_HELP)
    # the last 1.5 m, counted in steps of at least PATH_STEP: the part of a step before the
    # reset is lost, and the last one may come late
    assert 7.5 - DT <= (help_at + 1) * DT <= 7.5 + 2 * PATH_STEP / 0.2 + DT


def test_no_distance_budget_by_default():
    core = make_core(max_search_time=30.0)
    assert core.config.max_search_distance == 0.0
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    commands = drive(core, runner, 29.0, 0.5)       # 14.5 m: only the time budget counts
    assert not any(c.request_state == State.NEED_HELP for c in commands)


def test_odometry_jitter_in_place_spends_no_distance_budget():
    core = make_core(max_search_time=100.0, max_search_distance=1.0)
    runner = Runner(core)
    user_goal_then_lost(core, runner)
    x, y = core._odom
    commands = []
    for i in range(600):                # 60 s of 2 cm jitter: 12 m of steps, no progress
        core.on_odom(x + (0.02 if i % 2 else 0.0), y, runner.t, 'odom')
        commands.append(runner.step())
    assert not any(c.request_state == State.NEED_HELP for c in commands)


def test_hops_that_drive_the_whole_distance_budget_are_refused():
    with pytest.raises(ConfigError) as error:
        RecoveryConfig(strategy='spiral', hops_before_spiral=3, hop_distance=1.0,
                       max_search_distance=3.0).validate()
    assert 'max_search_distance=3.0' in str(error.value)
    RecoveryConfig(strategy='spiral', hops_before_spiral=3, hop_distance=1.0,
                   max_search_distance=3.5).validate()
