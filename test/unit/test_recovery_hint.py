"""Unit tests of the recovery core's use of fiducial_localizer's search hints
(``follow_search_hints``): after a spin, turn the way the particle cloud says a tag is."""
import logging
import math

import pytest

from lost_and_found.core.config import ConfigError
from lost_and_found.core.recovery import Phase, RecoveryConfig
from lost_and_found.state import State
from test_recovery import NOTHING, Runner, explore_core, finish_spin, make_core

LEFT = math.pi / 2


def hinted_core(**overrides):
    """explore_core (a wall 1 m ahead, open to the sides and behind) with hints followed and
    neither explore nor seek_walls; returns (core, runner, x) half a second before the end of
    the look-around spin."""
    core, runner, x = explore_core(**dict({'explore': False, 'seek_walls': 0.0,
                                           'follow_search_hints': True}, **overrides))
    while core._phase_end - runner.t > 0.5:
        core.on_odom(x, 0.0, runner.t, 'odom', yaw=0.0, stamp=runner.t)
        runner.step()
    assert core.phase == Phase.SPIN
    return core, runner, x


def heading(core):
    """The odometry heading the core will turn to before wandering, or None."""
    return None if core._heading_goal is None else core._heading_goal[0]


def test_a_hint_turns_the_robot_its_way_before_the_wander(caplog):
    caplog.set_level(logging.INFO, logger='rosout')
    core, runner, x = hinted_core()
    core.on_search_hint(LEFT, runner.t, runner.t)
    finish_spin(core, runner, x)
    assert heading(core) == pytest.approx(LEFT, abs=math.radians(10))
    assert 'particles agree that a tag is that way' in caplog.text
    assert core._hint is None               # used once
    # The turn, then the wander.
    yaw = 0.0
    for _ in range(60):
        core.on_odom(x, 0.0, runner.t, 'odom', yaw=yaw, stamp=runner.t)
        core.on_scan(NOTHING, runner.t, stamp=runner.t)
        twist = runner.step().twist
        if core._heading_goal is None:
            break
        assert twist[0] == 0.0 and twist[1] > 0.0
        yaw += twist[1] * 0.1
    assert core._heading_goal is None and yaw == pytest.approx(LEFT, abs=0.25)


def test_the_bearing_is_read_at_the_clouds_stamp():
    """The robot faced 1 rad when the cloud was taken: a bearing of -1 - pi/2 from there is
    -pi/2, whatever it faces when the spin ends."""
    core, runner, x = hinted_core()
    stamp = runner.t
    core.on_odom(x, 0.0, runner.t, 'odom', yaw=1.0, stamp=stamp)
    core.on_search_hint(-1.0 - LEFT, stamp, runner.t)
    runner.step()
    finish_spin(core, runner, x)        # facing 0 again from the next odometry on
    assert heading(core) == pytest.approx(-LEFT, abs=math.radians(10))


@pytest.mark.parametrize('case', ['off', 'none', 'withdrawn', 'old', 'no odometry then',
                                  'non-finite'])
def test_no_usable_hint_no_turn(case, caplog):
    caplog.set_level(logging.WARNING, logger='rosout')
    core, runner, x = hinted_core(follow_search_hints=(case != 'off'))
    stamp = runner.t
    if case in ('off', 'withdrawn', 'old'):
        core.on_search_hint(LEFT, stamp, runner.t)
    if case == 'withdrawn':
        core.on_search_hint(None, stamp + 0.5, runner.t)   # the next cloud has none
    if case == 'old':
        runner.run(core.config.search_hint_max_age + 0.2)
    if case == 'no odometry then':
        core.on_search_hint(LEFT, stamp - 10.0, stamp)      # before the odometry kept
    if case == 'non-finite':
        core.on_search_hint(math.nan, stamp, runner.t)
        assert 'non-finite bearing' in caplog.text
    finish_spin(core, runner, x)
    assert heading(core) is None


def test_a_hint_into_the_wall_is_not_followed():
    """Ahead is a wall 1 m off: no open heading lies within 45 deg of straight ahead."""
    core, runner, x = hinted_core()
    core.on_search_hint(0.0, runner.t, runner.t)
    finish_spin(core, runner, x)
    assert heading(core) is None


def test_with_the_spiral_a_hint_replaces_the_next_leg():
    for hint in (None, LEFT):
        core = make_core(strategy='spiral', follow_search_hints=True)
        runner = Runner(core)
        core.on_state(State.LOST, runner.t)
        sent = []
        while runner.t < core.config.spin_duration + 0.5:
            core.on_odom(0.0, 0.0, runner.t, 'odom', yaw=0.0, stamp=runner.t)
            core.on_scan(NOTHING, runner.t, stamp=runner.t)
            if hint is not None and core.phase == Phase.SPIN:
                core.on_search_hint(hint, runner.t, runner.t)
            command = runner.step()
            if command.send_goal is not None:
                sent.append(command.send_goal)
        if hint is None:
            assert core.phase == Phase.LEG and len(sent) == 1
        else:
            assert core.phase == Phase.WANDER and not sent
            assert heading(core) == pytest.approx(LEFT, abs=math.radians(10))


def test_no_hint_is_followed_after_the_first_spin_since_a_put_down(caplog):
    """amcl's particles are still the re-seed where the robot was lifted: the hint of that
    cloud is not followed; the next spin's is."""
    caplog.set_level(logging.INFO, logger='rosout')
    core = make_core(strategy='reactive', look_around_every=3.0, seek_walls=0.0,
                     follow_search_hints=True)
    runner = Runner(core)
    core.on_state(State.FLYING, runner.t)
    core.on_state(State.LOST, runner.t + 1.0)
    runner.t += 1.0

    def spin_with_hint(x):
        while core.phase == Phase.SPIN:
            core.on_odom(x, 0.0, runner.t, 'odom', yaw=0.0, stamp=runner.t)
            if core._phase_end - runner.t < 0.5:
                core.on_search_hint(LEFT, runner.t, runner.t)
            runner.step()
        assert core.phase == Phase.WANDER
    spin_with_hint(0.0)
    assert heading(core) is None
    assert 'still the re-seed where the robot was lifted' in caplog.text
    x = 0.0
    while core.phase == Phase.WANDER:
        x += 0.05
        core.on_odom(x, 0.0, runner.t, 'odom', yaw=0.0, stamp=runner.t)
        core.on_scan(NOTHING, runner.t, stamp=runner.t)
        runner.step()
    spin_with_hint(x)
    assert heading(core) == pytest.approx(LEFT, abs=math.radians(10))


@pytest.mark.parametrize('key, value', [('follow_search_hints', 1), ('search_hint_max_age', 0.0),
                                        ('search_hint_max_age', 2.5),
                                        ('search_hint_max_age', math.nan)])
def test_bad_hint_settings_are_refused(key, value):
    with pytest.raises(ConfigError) as error:
        RecoveryConfig(**{key: value}).validate()
    assert key in str(error.value)
