"""RecoveryCore: the step out before an aborted resumed goal is sent again
(``resume_step_distance``)."""
import logging
import math

import pytest

from lost_and_found.core.config import ConfigError
from lost_and_found.core.recovery import ABORTED, GOAL_LOST, HOP_MARGIN, Phase, RecoveryConfig
from lost_and_found.state import State
from test_recovery import DT, GOAL, SCAN, Runner, UserGoal, make_core, resumed

OTHER = UserGoal('map', -3.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, goal_id='/rviz-2-30.0')


def step_core(fix=True, **overrides):
    """A core whose saved goal was resumed after a tag's fix (so an abort is no doubt), with
    a fresh scan and odometry; resume_retry_delay 5 s, resume_step_distance 1 m."""
    settings = dict(resume_retries=2, resume_retry_delay=5.0, resume_step_distance=1.0)
    settings.update(overrides)
    core = make_core(**settings)
    runner = Runner(core)
    resumed(core, runner, fix=fix)
    feed(core, runner)
    return core, runner


def feed(core, runner, dx=0.0):
    """Fresh odometry (moved ``dx`` along x) and a fresh scan at the runner's time."""
    x, y = core._odom   # noqa: SLF001 - the test's own odometry, continued
    core.on_odom(x + dx, y, runner.t, 'odom', yaw=0.0)
    core.on_scan(SCAN, runner.t)


def drive(core, runner, speed, seconds):
    """Step for ``seconds``, the odometry moving ``speed`` m/s along x, scans fresh; the
    commands."""
    commands = []
    for _ in range(int(round(seconds / DT))):
        feed(core, runner, speed * DT)
        commands.append(runner.step())
    return commands


def test_an_abort_steps_out_then_sends_the_goal_again(caplog):
    caplog.set_level(logging.INFO, logger='rosout')
    core, runner = step_core()
    aborted_at = runner.t
    core.on_goal_done(ABORTED, True, runner.t)
    assert core.phase == Phase.STEP
    # The wander steers (FakeWander's twist) while the odometry moves 0.5 m/s: 1 m in 2 s.
    commands = drive(core, runner, 0.5, 2.3)
    assert commands[0].twist == (0.15, -0.2)
    assert not any(c.resend_saved_goal for c in commands)
    stop = [c for c in commands if c.twist == (0.0, 0.0)]
    assert len(stop) == 1 and core.phase == Phase.IDLE
    assert runner.t - aborted_at < 3.0
    assert 'stepped 1.0 m of 1.0 m' in caplog.text
    # The goal goes out when resume_retry_delay has passed since the abort, not before.
    again = runner.until(lambda c: c.resend_saved_goal, limit=5.0)
    assert runner.t == pytest.approx(aborted_at + 5.0, abs=DT + 1e-9)
    assert again.twist is None and core.saved_goal == GOAL
    # The scans seen while the resumed goal drove and during the step were remembered for the
    # wander (it drives by them).
    assert len(core._memory) > 0                 # noqa: SLF001
    assert core.wander.remembered[-1] is not None


def test_a_step_that_cannot_move_ends_at_its_deadline_then_the_goal_goes_out(caplog):
    caplog.set_level(logging.INFO, logger='rosout')
    core, runner = step_core()
    aborted_at = runner.t
    core.on_goal_done(ABORTED, True, runner.t)
    deadline = 2.0 * 1.0 / core.config.reactive_max_speed + HOP_MARGIN
    commands = drive(core, runner, 0.0, deadline + 0.5)
    assert core.phase == Phase.IDLE
    assert any(c.resend_saved_goal for c in commands)
    resent = next(i for i, c in enumerate(commands) if c.resend_saved_goal)
    assert resent * DT + DT == pytest.approx(deadline + DT, abs=2 * DT + 1e-9)
    assert runner.t - aborted_at > 5.0
    assert 'no way out found' in caplog.text


def test_a_step_goes_on_until_its_distance_when_the_delay_is_over_first():
    core, runner = step_core(resume_retry_delay=0.5)
    core.on_goal_done(ABORTED, True, runner.t)
    commands = drive(core, runner, 0.25, 2.0)          # 0.5 m in 2 s: still stepping
    assert core.phase == Phase.STEP and not any(c.resend_saved_goal for c in commands)
    commands = drive(core, runner, 0.25, 2.5)
    assert core.phase == Phase.IDLE and any(c.resend_saved_goal for c in commands)


def test_no_step_without_a_fresh_scan_or_odometry(caplog):
    core, runner = step_core()
    runner.run(1.0)                                      # scan and odometry go stale
    core.on_goal_done(ABORTED, True, runner.t)
    assert core.phase == Phase.IDLE
    assert 'no fresh scan and odometry to step by' in caplog.text
    again = runner.until(lambda c: c.resend_saved_goal, limit=6.0)
    assert again.twist is None


@pytest.mark.parametrize('overrides', [dict(resume_step_distance=0.0),
                                       dict(resume_retries=0)])
def test_no_step_when_off_or_when_no_attempt_is_left(overrides):
    core, runner = step_core(**overrides)
    core.on_goal_done(ABORTED, True, runner.t)
    assert core.phase == Phase.IDLE
    commands = drive(core, runner, 0.0, 6.0)
    assert not any(c.twist for c in commands)


def test_each_abort_with_an_attempt_left_is_followed_by_a_step(caplog):
    caplog.set_level(logging.INFO, logger='rosout')
    core, runner = step_core()
    for _ in range(2):
        core.on_goal_done(ABORTED, True, runner.t)
        assert core.phase == Phase.STEP
        assert 'trying again after a step, at the earliest in 5 s' in caplog.text
        commands = drive(core, runner, 0.5, 5.5)
        assert sum(1 for c in commands if c.resend_saved_goal) == 1
    core.on_goal_done(ABORTED, True, runner.t)      # the last: kept saved, no step
    assert core.phase == Phase.IDLE and core.saved_goal == GOAL


def test_no_step_when_move_base_loses_the_goal():
    # A restarted move_base says nothing about where the robot stands.
    core, runner = step_core()
    core.on_goal_done(GOAL_LOST, True, runner.t)
    assert core.phase == Phase.IDLE


def test_no_step_on_the_dock_and_docking_ends_one():
    core, runner = step_core()
    core.on_dock(True)
    core.on_goal_done(ABORTED, True, runner.t)
    assert core.phase == Phase.IDLE
    core, runner = step_core()
    core.on_goal_done(ABORTED, True, runner.t)
    drive(core, runner, 0.1, 0.5)
    core.on_dock(True)
    assert runner.step().twist == (0.0, 0.0) and core.phase == Phase.IDLE
    assert core.saved_goal == GOAL


def test_an_odometry_reset_during_the_step_is_not_counted_as_driven():
    core, runner = step_core()
    core.on_goal_done(ABORTED, True, runner.t)
    drive(core, runner, 0.1, 0.5)
    core.on_odom(0.0, 0.0, runner.t, 'odom', yaw=0.0)     # the base reset its odometry
    core.on_scan(SCAN, runner.t)
    runner.step()
    assert core.phase == Phase.STEP
    drive(core, runner, 0.5, 2.3)                        # then 1 m more: the step is over
    assert core.phase == Phase.IDLE


def test_no_step_after_an_abort_taken_as_a_wrong_estimate():
    # The localizer alone ended the episode: the abort asks for LOST, no step.
    core, runner = step_core(fix=False, max_doubts=1)
    core.on_goal_done(ABORTED, True, runner.t)
    assert core.phase == Phase.IDLE
    assert runner.step().request_state == State.LOST


def test_a_user_goal_during_the_step_stops_it_and_is_saved():
    core, runner = step_core()
    core.on_goal_done(ABORTED, True, runner.t)
    drive(core, runner, 0.1, 1.0)
    core.on_user_goal(OTHER, runner.t)
    command = runner.step()
    assert command.twist == (0.0, 0.0) and core.phase == Phase.IDLE
    assert core.saved_goal == OTHER
    # The old goal is never sent again over the user's.
    assert not any(c.resend_saved_goal for c in drive(core, runner, 0.0, 10.0))


def test_lost_during_the_step_searches_with_the_goal_kept():
    core, runner = step_core()
    core.on_goal_done(ABORTED, True, runner.t)
    drive(core, runner, 0.1, 1.0)
    core.on_state(State.LOST, runner.t)
    command = runner.step()
    assert core.phase == Phase.SPIN and command.twist[1] > 0.0
    assert core.saved_goal == GOAL
    # Re-localized: the goal is resumed as after any episode.
    runner.run(2.0)
    core.on_state(State.LOCALIZING, runner.t)
    runner.step()
    core.on_state(State.IDLE, runner.t)
    assert runner.step().resend_saved_goal


def test_picked_up_during_the_step_stops_and_keeps_the_goal():
    core, runner = step_core()
    core.on_goal_done(ABORTED, True, runner.t)
    drive(core, runner, 0.1, 1.0)
    core.on_state(State.FLYING, runner.t)
    assert runner.step().twist == (0.0, 0.0) and core.phase == Phase.IDLE
    commands = runner.run(6.0)
    assert not any(c.resend_saved_goal or c.twist for c in commands)
    assert core.saved_goal == GOAL


def test_the_step_survives_a_clock_jump_back():
    core, runner = step_core()
    core.on_goal_done(ABORTED, True, runner.t)
    drive(core, runner, 0.0, 1.0)
    runner.t -= 100.0                                    # the clock jumps back 100 s
    commands = drive(core, runner, 0.0, 12.0)
    assert any(c.resend_saved_goal for c in commands)    # the deadline was shifted, not lost


@pytest.mark.parametrize('value', [-1.0, float('nan'), math.inf, 'far'])
def test_a_bad_step_distance_is_refused(value):
    with pytest.raises(ConfigError, match='resume_step_distance'):
        RecoveryConfig(resume_step_distance=value).validate()
