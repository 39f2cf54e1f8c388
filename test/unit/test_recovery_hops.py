"""RecoveryCore: short hops of the wander before the spiral (``hops_before_spiral``)."""
import logging
import math

import pytest

from lost_and_found.core.config import ConfigError
from lost_and_found.core.recovery import HOP_MARGIN, Phase, RecoveryConfig
from lost_and_found.core.spiral import SpiralSearch
from lost_and_found.state import State
from test_recovery import DT, ODOM, SCAN, Runner, make_core


def hop(core, runner, metres, speed=0.5):
    """Wander along +x with fresh odometry and scans until the core starts a spin or has
    driven ``metres``; return the metres driven."""
    x0, y = core._odom   # noqa: SLF001 - the test's own odometry, continued
    x = x0
    while x - x0 < metres + 1e-9 and core.phase == Phase.WANDER:
        x += speed * DT
        core.on_odom(x, y, runner.t, 'odom')
        core.on_scan(SCAN, runner.t)
        runner.step()
    return x - x0


def end_spin(core, runner):
    """Step through a spin (odometry and scans fresh); return the commands."""
    assert core.phase == Phase.SPIN
    commands = []
    while core.phase == Phase.SPIN:
        core.on_odom(*core._odom, runner.t, 'odom')   # noqa: SLF001
        core.on_scan(SCAN, runner.t)
        commands.append(runner.step())
    return commands


def lost_and_spun(**overrides):
    """A core of ``make_core(**overrides)`` made LOST, stepped through its first spin; the
    core, its runner and the spin's commands."""
    core = make_core(**overrides)
    runner = Runner(core)
    core.on_state(State.LOST, runner.t)
    runner.step()
    return core, runner, end_spin(core, runner)


def stand_still(core, runner):
    """Step with fresh scans and odometry that does not move while the core wanders."""
    while core.phase == Phase.WANDER:
        core.on_odom(*core._odom, runner.t, 'odom')   # noqa: SLF001
        core.on_scan(SCAN, runner.t)
        runner.step()


def test_hops_come_between_the_first_spin_and_the_first_leg(caplog):
    caplog.set_level(logging.INFO, logger='rosout')
    core, runner, commands = lost_and_spun(hops_before_spiral=2, hop_distance=1.0)
    # No leg after the first spin: the wander drives.
    assert all(c.send_goal is None for c in commands)
    assert core.phase == Phase.WANDER and core.legs_sent == 0
    assert 'a 1.0 m hop steered by the laser, then a spin (1 more before the spiral)' \
        in caplog.text
    core.on_scan(SCAN, runner.t)
    assert runner.step().twist == (0.15, -0.2)
    # One metre of odometry ends the hop with a spin, then the second hop.
    driven = hop(core, runner, 3.0)
    assert driven == pytest.approx(1.0, abs=0.06)
    assert core.phase == Phase.SPIN
    commands = end_spin(core, runner)
    assert all(c.send_goal is None for c in commands) and core.phase == Phase.WANDER
    assert hop(core, runner, 3.0) == pytest.approx(1.0, abs=0.06)
    # After the second hop's spin the spiral starts, around where the hops took the robot.
    here = core._odom     # noqa: SLF001
    assert here[0] == pytest.approx(ODOM[0] + 2.0, abs=0.12)
    leg = [c for c in end_spin(core, runner) if c.send_goal is not None]
    assert len(leg) == 1 and core.phase == Phase.LEG and core.legs_sent == 1
    assert leg[0].goal_frame == 'odom'
    assert leg[0].send_goal == pytest.approx(SpiralSearch(here[0], here[1], 1.0).next_goal())
    assert core.strategy == 'spiral'


def test_without_hops_the_first_leg_follows_the_first_spin():
    core, _runner, commands = lost_and_spun()
    assert core.config.hops_before_spiral == 0
    assert any(c.send_goal is not None for c in commands)


def test_a_hop_that_gets_nowhere_ends_at_its_deadline(caplog):
    caplog.set_level(logging.INFO, logger='rosout')
    core, runner, _ = lost_and_spun(hops_before_spiral=1, reactive_max_speed=0.25)
    started = runner.t
    stand_still(core, runner)    # the wander is blocked: the odometry stays where it is
    assert runner.t - started == pytest.approx(2.0 * 1.0 / 0.25 + HOP_MARGIN, abs=DT + 1e-9)
    assert core.phase == Phase.SPIN
    assert 'the hop drove 0.0 m of 1.0 m in its time: looking around here' in caplog.text
    assert any(c.send_goal is not None for c in end_spin(core, runner))


def test_a_hops_deadline_moves_with_a_clock_that_jumps_back():
    core, runner, _ = lost_and_spun(hops_before_spiral=1, reactive_max_speed=0.25)
    started = runner.t
    runner.t -= 100.0                              # the clock jumps back 100 s
    stand_still(core, runner)
    # What remained of the deadline is kept, rather than waiting 100 s for the old clock.
    assert runner.t + 100.0 - started == pytest.approx(13.0, abs=2 * DT + 1e-9)


def test_a_fix_during_a_hop_stops_the_search():
    core, runner, _ = lost_and_spun(hops_before_spiral=3)
    hop(core, runner, 0.5)
    assert core.phase == Phase.WANDER and core.legs_sent == 0     # a hop under way
    core.on_state(State.LOCALIZING, runner.t)
    stop = runner.step()
    assert stop.twist == (0.0, 0.0) and stop.send_goal is None and not stop.cancel
    assert core.phase == Phase.IDLE


def test_a_wander_after_the_hops_looks_around_every_look_around_every():
    # move_base goes away during the hops: the search falls back to the wander, whose
    # look-arounds come every look_around_every (3 m) again, not at a hop's distance or deadline.
    core, runner, _ = lost_and_spun(hops_before_spiral=1, hop_distance=1.0)
    assert hop(core, runner, 3.0) == pytest.approx(1.0, abs=0.06)
    core.on_move_base_available(False)
    end_spin(core, runner)
    assert core.strategy == 'reactive' and core.phase == Phase.WANDER
    assert hop(core, runner, 5.0) == pytest.approx(3.0, abs=0.06)


def test_the_next_episode_hops_again_and_a_reactive_one_does_not():
    core, runner, _ = lost_and_spun(hops_before_spiral=1)
    hop(core, runner, 2.0)
    assert any(c.send_goal is not None for c in end_spin(core, runner))
    core.on_state(State.LOCALIZING, runner.t)
    runner.step()
    core.on_state(State.LOST, runner.t)
    runner.step()
    end_spin(core, runner)
    assert core.phase == Phase.WANDER and core.legs_sent == 0
    # The reactive search looks around every look_around_every (3 m), not every hop_distance.
    core, runner, _ = lost_and_spun(strategy='reactive', hops_before_spiral=2)
    assert hop(core, runner, 5.0) == pytest.approx(3.0, abs=0.06)


@pytest.mark.parametrize('name, value', [('hops_before_spiral', -1),
                                         ('hops_before_spiral', 1.5),
                                         ('hop_distance', 0.0),
                                         ('hop_distance', float('nan'))])
def test_bad_hop_settings_are_refused_by_name(name, value):
    with pytest.raises(ConfigError) as error:
        RecoveryConfig(**{name: value}).validate()
    assert name in str(error.value)


def test_hops_that_could_spend_the_search_budget_are_refused():
    # 2 s of spin, then each hop at the latest 2*1/0.5 + HOP_MARGIN s and a 2 s spin: 11 s.
    fits = dict(spin_speed=math.pi, reactive_max_speed=0.5, hop_distance=1.0,
                max_search_time=60.0)
    RecoveryConfig(hops_before_spiral=5, **fits).validate()          # 2 + 55 s < 60 s
    with pytest.raises(ConfigError) as error:
        RecoveryConfig(hops_before_spiral=6, **fits).validate()      # 2 + 66 s >= 60 s
    assert 'hops_before_spiral=6' in str(error.value) and 'max_search_time' in str(error.value)
