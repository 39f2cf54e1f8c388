"""RecoveryCore: a resumed goal reached on an estimate no tag confirmed gets one turn in place
before it is forgotten (``check_arrival``)."""
import dataclasses
import logging
import math

import pytest

from lost_and_found.core.config import ConfigError
from lost_and_found.core.recovery import SUCCEEDED, Phase, RecoveryConfig
from lost_and_found.state import State
from test_recovery import DT, GOAL, Runner, make_core, resumed

SPIN = math.radians(72.0)


def reached(fix=False, in_the_air=False, **overrides):
    """A core whose resumed goal move_base has just reported reached (``in_the_air``: while
    the robot was lifted); its runner."""
    core = make_core(**overrides)
    runner = Runner(core)
    resumed(core, runner, fix=fix)
    runner.run(10.0)
    if in_the_air:
        core.on_state(State.FLYING, runner.t)
        runner.step()
    core.on_goal_done(SUCCEEDED, True, runner.t)
    return core, runner


def test_a_goal_reached_on_the_localizers_word_alone_is_kept_through_one_turn(caplog):
    caplog.set_level(logging.INFO, logger='rosout')
    core, runner = reached()
    assert core.phase == Phase.CHECK and core.saved_goal == GOAL
    assert 'one turn in place before forgetting it' in caplog.text
    started = runner.t
    turn = runner.step()
    assert turn.twist == (0.0, pytest.approx(SPIN)) and turn.request_state is None
    done = runner.until(lambda c: c.request_state is not None)
    # One full turn (2 pi / spin_speed = 5 s), then stopped, forgotten and IDLE asked for.
    assert runner.t - started == pytest.approx(5.0, abs=DT + 1e-9)
    assert done.twist == (0.0, 0.0) and done.request_state == State.IDLE
    assert core.saved_goal is None and core.phase == Phase.IDLE
    turns = [c for t, c in runner.log if started < t < runner.t]
    assert turns and all(c.twist == (0.0, pytest.approx(SPIN)) for c in turns)
    assert 'showed nothing against the estimate' in caplog.text


@pytest.mark.parametrize('case', ['tag fix', 'off'])
def test_a_confirmed_localization_or_the_option_off_forgets_the_goal_at_once(case):
    core, runner = reached(fix=True) if case == 'tag fix' else reached(check_arrival=False)
    assert core.saved_goal is None and core.phase == Phase.IDLE
    assert runner.step().request_state == State.IDLE


def test_a_users_own_goal_is_forgotten_when_reached():
    # The turn is for the goal this node resumed on the unconfirmed estimate.
    core = make_core()
    runner = Runner(core)
    resumed(core, runner)
    other = dataclasses.replace(GOAL, x=1.0, goal_id='/rviz-2')
    core.on_user_goal(other, runner.t)
    core.on_goal_done(SUCCEEDED, False, runner.t, other.goal_id)
    assert core.saved_goal is None and core.phase == Phase.IDLE


def test_lost_during_the_turn_searches_and_resumes_the_goal():
    core, runner = reached()
    runner.run(2.0)
    core.on_state(State.LOST, runner.t)         # lost_service's probation refuted it
    first = runner.step()
    assert core.phase == Phase.SPIN and core.saved_goal == GOAL
    assert first.twist == (0.0, pytest.approx(SPIN)) and not first.cancel
    runner.run(3.0)
    core.on_state(State.LOCALIZING, runner.t)   # a tag this time
    runner.run(1.0)
    core.on_state(State.IDLE, runner.t)
    assert runner.step().resend_saved_goal
    core.on_state(State.NAVIGATING, runner.t)
    core.on_goal_done(SUCCEEDED, True, runner.t)
    assert core.saved_goal is None, 'confirmed by the tag: no second turn'


def test_a_pose_fix_during_the_turn_sends_the_goal_again(caplog):
    core, runner = reached()
    runner.run(1.0)
    core.on_pose_fix((30.0, 4.0, 0.0))          # a tag contradicted the estimate
    command = runner.step()
    assert command.twist == (0.0, 0.0) and command.resend_saved_goal
    assert core.phase == Phase.IDLE and core.saved_goal == GOAL
    assert 'sending the goal again, in case it was reached on a wrong estimate' in caplog.text
    core.on_goal_done(SUCCEEDED, True, runner.t, command.goal_tag)
    assert core.saved_goal is None, 'the fix confirmed the estimate: no second turn'


def test_the_turn_goes_on_through_idle_and_navigating():
    core, runner = reached()
    core.on_state(State.IDLE, runner.t)
    assert runner.step().twist == (0.0, pytest.approx(SPIN))
    assert core.phase == Phase.CHECK and core.saved_goal == GOAL


def test_a_short_lift_during_the_turn_turns_again_and_a_kidnap_resumes_the_goal():
    core, runner = reached()
    runner.run(3.0)
    core.on_state(State.FLYING, runner.t)
    assert runner.step().twist == (0.0, 0.0) and core.phase == Phase.IDLE
    core.on_state(State.NAVIGATING, runner.t)    # put down: a short lift
    restarted = runner.t
    runner.until(lambda c: c.request_state is not None)
    assert runner.t - restarted == pytest.approx(5.0, abs=DT + 1e-9), 'a whole turn again'
    assert core.saved_goal is None
    # A kidnap instead: the goal, reached on an unconfirmed estimate, is resumed after it.
    core, runner = reached()
    core.on_state(State.FLYING, runner.t)
    runner.step()
    core.on_state(State.LOST, runner.t)
    assert core.phase == Phase.SPIN and core.saved_goal == GOAL


def test_a_user_goal_during_the_turn_stops_it():
    core, runner = reached()
    runner.step()
    other = dataclasses.replace(GOAL, x=1.0, goal_id='/rviz-2')
    core.on_user_goal(other, runner.t)
    command = runner.step()
    assert command.twist == (0.0, 0.0) and core.phase == Phase.IDLE
    assert core.saved_goal == other
    assert all(c.twist is None for c in runner.run(10.0)), 'nothing turns the robot any more'


def test_the_turn_keeps_what_remains_when_the_clock_jumps_back():
    core, runner = reached()
    runner.run(2.0)
    runner.t -= 100.0
    jumped = runner.t
    runner.until(lambda c: c.request_state is not None)
    assert runner.t - jumped == pytest.approx(3.0, abs=2 * DT + 1e-9)


def test_check_arrival_must_be_a_bool():
    with pytest.raises(ConfigError, match='check_arrival'):
        RecoveryConfig(check_arrival='yes').validate()


def short_lift(core, runner, back=State.NAVIGATING):
    """Picked up and put down again at once; the commands of the next 6 s."""
    core.on_state(State.FLYING, runner.t)
    runner.step()
    core.on_state(back, runner.t)
    return runner.run(6.0)


def test_a_short_lift_after_the_turn_does_not_turn_again():
    core, runner = reached()
    runner.until(lambda c: c.request_state is not None)
    core.on_state(State.IDLE, runner.t)
    assert all(c.twist is None for c in short_lift(core, runner, back=State.IDLE))
    assert core.phase == Phase.IDLE and core.saved_goal is None


def test_a_short_lift_after_a_user_goal_replaced_the_turn_does_not_turn():
    core, runner = reached()
    runner.step()
    other = dataclasses.replace(GOAL, x=1.0, goal_id='/rviz-2')
    core.on_user_goal(other, runner.t)
    runner.step()
    assert all(c.twist is None for c in short_lift(core, runner))
    assert core.saved_goal == other and core.phase == Phase.IDLE


def test_a_short_lift_on_the_way_back_after_lost_during_the_turn_does_not_turn():
    core, runner = reached()
    runner.run(2.0)
    core.on_state(State.LOST, runner.t)
    runner.run(3.0)
    core.on_state(State.LOCALIZING, runner.t)
    runner.run(1.0)
    core.on_state(State.IDLE, runner.t)
    assert runner.step().resend_saved_goal
    core.on_state(State.NAVIGATING, runner.t)
    assert all(c.twist is None for c in short_lift(core, runner))
    assert core.saved_goal == GOAL and core.phase == Phase.IDLE


def test_a_short_lift_after_a_pose_fix_ended_the_turn_does_not_turn():
    core, runner = reached()
    runner.run(1.0)
    core.on_pose_fix((30.0, 4.0, 0.0))
    assert runner.step().resend_saved_goal
    assert all(c.twist is None for c in short_lift(core, runner))
    assert core.saved_goal == GOAL and core.phase == Phase.IDLE


def test_docking_during_the_turn_stops_it_and_forgets_the_goal(caplog):
    caplog.set_level(logging.INFO, logger='rosout')
    core, runner = reached()
    runner.run(1.0)
    core.on_dock(True)
    command = runner.step()
    assert command.twist == (0.0, 0.0) and command.request_state == State.IDLE
    assert core.phase == Phase.IDLE and core.saved_goal is None
    assert 'on its dock' in caplog.text
    assert all(c.twist is None for c in runner.run(6.0))


def test_a_goal_reached_while_in_the_air_gets_its_turn_once_put_down():
    core, runner = reached(in_the_air=True)
    assert core.saved_goal == GOAL, 'kept until the robot is down and has turned'
    assert all(c.twist is None for c in runner.run(1.0)), 'no turn in the air'
    core.on_state(State.NAVIGATING, runner.t)       # a short lift
    turn = runner.step()
    assert turn.twist == (0.0, pytest.approx(SPIN)) and core.phase == Phase.CHECK
    runner.until(lambda c: c.request_state is not None)
    assert core.saved_goal is None
    # Put down after a kidnap instead: the goal is resumed after the episode.
    core, runner = reached(in_the_air=True)
    core.on_state(State.LOST, runner.t)
    assert runner.step().twist == (0.0, pytest.approx(SPIN)) and core.phase == Phase.SPIN
    assert core.saved_goal == GOAL


def test_a_pose_fix_in_the_air_sends_the_reached_goal_again_once_put_down(caplog):
    caplog.set_level(logging.INFO, logger='rosout')
    core, runner = reached(in_the_air=True)
    core.on_pose_fix((30.0, 4.0, 0.0))
    core.on_state(State.NAVIGATING, runner.t)       # a short lift
    command = runner.step()
    assert command.resend_saved_goal and command.twist is None
    assert core.phase == Phase.IDLE and core.saved_goal == GOAL


def dock_and_put_down(core, runner, state, dock_first):
    """Docking and the put-down's state (``state``), in the order given."""
    if dock_first:
        core.on_dock(True)
    core.on_state(state, runner.t)
    runner.step()
    if not dock_first:
        core.on_dock(True)


@pytest.mark.parametrize('dock_first', [True, False])
def test_docked_at_a_put_down_after_a_short_lift_forgets_the_goal_reached_in_the_air(
        dock_first):
    core, runner = reached(in_the_air=True)
    dock_and_put_down(core, runner, State.NAVIGATING, dock_first)
    commands = runner.run(6.0)
    assert core.saved_goal is None and core.phase == Phase.IDLE
    assert not any(c.resend_saved_goal for c in commands)
    assert all(c.twist in (None, (0.0, 0.0)) for c in commands[1:])


@pytest.mark.parametrize('dock_first', [True, False])
def test_docked_at_a_kidnap_put_down_resumes_the_goal_reached_in_the_air_either_way(dock_first):
    # The kidnap's episode owns the goal, whichever message comes first.
    core, runner = reached(in_the_air=True)
    dock_and_put_down(core, runner, State.LOST, dock_first)
    runner.step()
    assert core.saved_goal == GOAL and core.phase == Phase.SPIN
