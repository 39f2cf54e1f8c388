"""Unit tests of lost_and_found.core.kidnap (no ROS master)."""
import dataclasses
import random

import pytest
from hypothesis import given, settings, strategies as st

from lost_and_found.core.config import ConfigError, config_from_params
from lost_and_found.core.kidnap import (
    DOCKING_CHARGED, DOCKING_CHARGING, SENSOR_REPEAT_GRACE, STAMP_REORDER_WINDOW,
    WHEEL_DROP_LEFT_BIT, WHEEL_DROP_RIGHT_BIT, WHEEL_LEFT, WHEEL_RIGHT, KidnapConfig,
    KidnapEvent, KidnapTracker)

E = KidnapEvent
BOTH = WHEEL_DROP_LEFT_BIT | WHEEL_DROP_RIGHT_BIT
DISCHARGING = 0
ADAPTER_CHARGED = 18
ADAPTER_CHARGING = 22


def tracker(**kwargs):
    """A tracker with the default config, overridden by ``kwargs``."""
    config = KidnapConfig(**kwargs)
    config.validate()
    return KidnapTracker(config)


def lift_both(k, t):
    """Drop both wheels through WheelDropEvents at time ``t``; return the events."""
    return k.on_wheel(WHEEL_LEFT, True, t) + k.on_wheel(WHEEL_RIGHT, True, t)


def lower_both(k, t):
    """Raise both wheels through WheelDropEvents at time ``t``; return the events."""
    return k.on_wheel(WHEEL_LEFT, False, t) + k.on_wheel(WHEEL_RIGHT, False, t)


def ticks(k, start, stop, step=0.05):
    """Tick from ``start`` to ``stop`` (inclusive); return [(t, event), ...]."""
    out = []
    n = int(round((stop - start) / step))
    for i in range(n + 1):
        t = start + i * step
        out += [(t, e) for e in k.tick(t)]
    return out


def sensor_stream(k, start, stop, bits, charger=DISCHARGING, step=0.02):
    """Feed a 50 Hz SensorState stream; return every event."""
    out = []
    n = int(round((stop - start) / step))
    for i in range(n + 1):
        t = start + i * step
        out += k.on_sensor_state(bits, charger, t, stamp=t)
    return out


# --- timings -----------------------------------------------------------------------------

def test_one_wheel_for_a_tenth_of_a_second_is_a_bump():
    k = tracker()
    assert k.on_wheel(WHEEL_LEFT, True, 10.0) == []
    assert [e for _, e in ticks(k, 10.0, 10.1)] == []
    assert k.on_wheel(WHEEL_LEFT, False, 10.1) == [E.BUMP]
    assert not k.picked_up and not k.kidnapped


def test_one_wheel_held_long_is_never_a_pick_up():
    k = tracker()
    k.on_wheel(WHEEL_RIGHT, True, 0.0)
    assert ticks(k, 0.0, 5.0) == []
    assert not k.picked_up
    assert k.on_wheel(WHEEL_RIGHT, False, 5.0) == [E.BUMP]


def test_both_wheels_for_a_tenth_of_a_second_is_a_bump():
    k = tracker()
    assert lift_both(k, 0.0) == []
    assert ticks(k, 0.0, 0.1) == []
    assert lower_both(k, 0.1) == [E.BUMP]
    assert not k.picked_up


def test_both_wheels_for_one_second_is_a_pick_up_not_a_kidnap():
    k = tracker()
    lift_both(k, 0.0)
    events = ticks(k, 0.0, 1.0)
    assert [e for _, e in events] == [E.PICKED_UP]
    assert events[0][0] == pytest.approx(0.2)
    assert k.picked_up and not k.kidnapped
    assert lower_both(k, 1.0) == [E.PUT_DOWN]
    assert not k.picked_up and not k.kidnapped


def test_both_wheels_for_three_seconds_is_a_kidnap_after_two_seconds():
    k = tracker()
    lift_both(k, 5.0)
    events = ticks(k, 5.0, 8.0)
    assert [e for _, e in events] == [E.PICKED_UP, E.KIDNAPPED]
    # "longer than kidnap_after": not at exactly 2 s, at the first tick after it.
    assert events[1][0] == pytest.approx(7.05)
    assert lower_both(k, 8.0) == [E.PUT_DOWN]
    assert not k.picked_up
    assert k.kidnapped, 'kidnapped must survive the put-down'


def test_pick_up_detected_without_ticks_when_put_down_late():
    k = tracker()
    lift_both(k, 0.0)
    assert lower_both(k, 1.0) == [E.PICKED_UP, E.PUT_DOWN]


def test_one_tick_after_a_long_gap_reports_pick_up_then_kidnap():
    k = tracker()
    lift_both(k, 0.0)
    assert k.tick(2.5) == [E.PICKED_UP, E.KIDNAPPED]


def test_kidnap_timer_needs_continuous_drop():
    k = tracker()
    lift_both(k, 0.0)
    ticks(k, 0.0, 1.5)
    assert k.picked_up
    # One wheel touches down briefly while still held: the robot is still up ...
    assert k.on_wheel(WHEEL_LEFT, False, 1.5) == []
    assert k.picked_up
    assert k.on_wheel(WHEEL_LEFT, True, 1.6) == []
    # ... but the kidnap clock restarted at 1.6.
    assert ticks(k, 1.6, 3.6) == []
    assert not k.kidnapped
    assert [e for _, e in ticks(k, 3.65, 3.7)] == [E.KIDNAPPED]


def test_put_down_needs_both_wheels_raised():
    k = tracker()
    lift_both(k, 0.0)
    k.tick(0.5)
    assert k.on_wheel(WHEEL_RIGHT, False, 0.6) == []
    assert k.picked_up
    assert k.on_wheel(WHEEL_LEFT, False, 0.7) == [E.PUT_DOWN]


def test_kidnapped_reported_once_per_lift_and_clear_sticks_in_mid_air():
    k = tracker()
    lift_both(k, 0.0)
    assert E.KIDNAPPED in k.tick(2.1)
    assert k.clear_kidnapped() == [E.KIDNAP_CLEARED]
    assert k.clear_kidnapped() == []
    assert k.tick(4.0) == []
    assert not k.kidnapped
    lower_both(k, 4.0)
    lift_both(k, 5.0)
    assert k.tick(7.5) == [E.PICKED_UP, E.KIDNAPPED]


def test_second_kidnap_before_relocalization_is_reported():
    k = tracker()
    lift_both(k, 0.0)
    ticks(k, 0.0, 3.0)
    lower_both(k, 3.0)
    # Not localized since (LOST, LOCALIZING): nobody cleared the flag.
    assert k.kidnapped
    # Carried somewhere else again: this lift is a kidnap of its own.
    lift_both(k, 10.0)
    events = ticks(k, 10.0, 13.0)
    assert [e for _, e in events] == [E.PICKED_UP, E.KIDNAPPED]
    assert events[1][0] == pytest.approx(12.05)
    assert lower_both(k, 13.0) == [E.PUT_DOWN]
    assert k.kidnapped


def test_second_kidnap_reported_before_a_put_down_in_the_same_call():
    k = tracker()
    lift_both(k, 0.0)
    assert lower_both(k, 3.0) == [E.PICKED_UP, E.KIDNAPPED, E.PUT_DOWN]
    lift_both(k, 10.0)
    assert lower_both(k, 12.5) == [E.PICKED_UP, E.KIDNAPPED, E.PUT_DOWN]


def test_short_lift_after_a_kidnap_is_no_kidnap():
    k = tracker()
    lift_both(k, 0.0)
    lower_both(k, 3.0)
    lift_both(k, 10.0)
    assert [e for _, e in ticks(k, 10.0, 11.5)] == [E.PICKED_UP]
    assert lower_both(k, 11.5) == [E.PUT_DOWN]


def test_repeated_kidnap_reported_once_per_lift():
    k = tracker()
    lift_both(k, 0.0)
    lower_both(k, 3.0)
    lift_both(k, 10.0)
    events = ticks(k, 10.0, 20.0) + [(20.0, e) for e in sensor_stream(k, 20.0, 21.0, BOTH)]
    assert [e for _, e in events] == [E.PICKED_UP, E.KIDNAPPED]


# --- sources -----------------------------------------------------------------------------

def test_sensor_state_alone():
    k = tracker()
    events = sensor_stream(k, 0.0, 0.5, WHEEL_DROP_LEFT_BIT)
    events += sensor_stream(k, 0.52, 0.6, 0)
    assert events == [E.BUMP]
    events = sensor_stream(k, 1.0, 4.0, BOTH) + sensor_stream(k, 4.02, 4.5, 0)
    assert events == [E.PICKED_UP, E.KIDNAPPED, E.PUT_DOWN]
    assert k.kidnapped and not k.picked_up


def test_both_sources_together_give_single_events():
    k = tracker()
    events = lift_both(k, 0.0)
    events += sensor_stream(k, 0.01, 3.0, BOTH)
    events += lower_both(k, 3.0)
    events += sensor_stream(k, 3.01, 3.5, 0)
    assert events == [E.PICKED_UP, E.KIDNAPPED, E.PUT_DOWN]


def test_duplicate_wheel_events_change_nothing():
    k = tracker()
    for _ in range(5):
        assert k.on_wheel(WHEEL_LEFT, True, 0.0) == []
    assert k.wheels_dropped == (True, False)
    assert k.on_wheel(WHEEL_RIGHT, True, 0.0) == []
    assert k.on_wheel(WHEEL_RIGHT, True, 0.3) == [E.PICKED_UP]
    assert k.on_wheel(WHEEL_RIGHT, True, 0.4) == []


def test_stale_sensor_state_is_ignored():
    k = tracker()
    assert k.on_sensor_state(BOTH, DISCHARGING, 1.0, stamp=1.0) == []
    # An older message saying "raised" must not end the lift.
    assert k.on_sensor_state(0, DISCHARGING, 1.01, stamp=0.9) == []
    assert k.stale_ignored == 1
    assert k.wheels_dropped == (True, True)
    assert k.on_sensor_state(BOTH, DISCHARGING, 1.3, stamp=1.3) == [E.PICKED_UP]
    # Equal stamps are duplicates, not stale: idempotent.
    assert k.on_sensor_state(BOTH, DISCHARGING, 1.3, stamp=1.3) == []
    assert k.stale_ignored == 1


def test_a_sensor_state_sampled_before_the_lift_events_does_not_restart_the_lift():
    # A loaded computer delivers the SensorStates sampled just before the lift 1.3 s after the
    # lift's WheelDropEvents: they repeat what the stream said before, so they neither end the
    # lift (a bump) nor restart its timers.
    k = tracker()
    k.on_sensor_state(0, DISCHARGING, 9.96, stamp=9.96)
    assert lift_both(k, 10.0) == []
    assert k.on_sensor_state(0, DISCHARGING, 11.3, stamp=9.98) == [E.PICKED_UP]
    assert k.wheels_dropped == (True, True) and k.superseded == 1
    # The stream then reports the lift (a change: applied, and nothing new) ...
    assert sensor_stream(k, 11.32, 12.1, BOTH) == [E.KIDNAPPED]     # 2 s after 10.0
    # ... and after the put-down, its late samples from the air do not lift the robot again.
    assert lower_both(k, 13.0) == [E.PUT_DOWN]
    assert k.on_sensor_state(BOTH, DISCHARGING, 13.4, stamp=12.99) == []
    assert k.wheels_dropped == (False, False) and k.superseded == 2
    assert ticks(k, 13.45, 14.0) == [] and not k.picked_up
    # Its next change is applied, whatever the events said (here nothing new).
    assert k.on_sensor_state(0, DISCHARGING, 14.02, stamp=13.02) == []
    assert k.superseded == 2


def test_a_change_in_the_sensor_state_stream_is_applied_after_an_event():
    k = tracker()
    k.on_sensor_state(0, DISCHARGING, 9.98, stamp=9.98)
    lift_both(k, 10.0)
    k.on_sensor_state(BOTH, DISCHARGING, 10.01, stamp=10.005)
    # The wheels came back down 10 ms later and the SensorState saw it before the events.
    assert k.on_sensor_state(0, DISCHARGING, 10.03, stamp=10.02) == [E.BUMP]
    assert k.wheels_dropped == (False, False) and k.superseded == 0


def test_a_sensor_state_change_of_one_wheel_leaves_the_other_to_the_events():
    k = tracker()
    k.on_sensor_state(0, DISCHARGING, 0.0, stamp=0.0)
    lift_both(k, 1.0)
    # The stream saw the left wheel go down only (the right one still up when sampled).
    assert k.on_sensor_state(WHEEL_DROP_LEFT_BIT, DISCHARGING, 1.05, stamp=0.99) == []
    assert k.wheels_dropped == (True, True) and k.superseded == 1
    assert [e for _t, e in ticks(k, 1.1, 1.3)] == [E.PICKED_UP]


def test_a_sensor_state_that_keeps_disagreeing_wins_after_the_grace():
    # The raise events were lost: the SensorState stream says "on the ground" all along.
    k = tracker()
    k.on_sensor_state(0, DISCHARGING, 0.98, stamp=0.98)
    lift_both(k, 1.0)
    stream = sensor_stream(k, 1.02, 1.0 + SENSOR_REPEAT_GRACE + 0.1, 0)
    assert stream == [E.PICKED_UP, E.PUT_DOWN] and not k.picked_up and not k.kidnapped
    assert k.superseded == int(round(SENSOR_REPEAT_GRACE / 0.02)) - 1


def test_the_first_sensor_state_is_taken_whole():
    k = tracker()
    lift_both(k, 1.0)
    assert k.on_sensor_state(0, DISCHARGING, 1.05, stamp=1.04) == [E.BUMP]
    assert k.wheels_dropped == (False, False)


def test_sensor_state_just_inside_the_reorder_window_is_stale():
    k = tracker()
    k.on_sensor_state(BOTH, DISCHARGING, 10.0, stamp=10.0)
    assert k.on_sensor_state(0, DISCHARGING, 10.02, stamp=10.0 - 0.9 * STAMP_REORDER_WINDOW) \
        == []
    assert k.stale_ignored == 1 and k.stamp_jumps == 0
    assert k.wheels_dropped == (True, True)


def test_sensor_state_stamps_jumping_back_keep_the_stream_alive(caplog):
    k = tracker()
    for i in range(50):
        k.on_sensor_state(0, DISCHARGING, i * 0.02, stamp=1000.0 + i * 0.02)
    # The stamps restart from 5.0 (a bag looped without --clock) while the receipt clock runs
    # on: the stream still reports the lift.
    events = []
    with caplog.at_level('DEBUG', logger='rosout'):
        for i in range(1, 201):
            t = 1.0 + i * 0.02
            events += k.on_sensor_state(BOTH, DISCHARGING, t, stamp=5.0 + i * 0.02)
    assert events == [E.PICKED_UP, E.KIDNAPPED]
    assert k.stale_ignored == 0 and k.stamp_jumps == 1
    jumps = [r for r in caplog.records if 'jumped back' in r.getMessage()]
    assert [r.levelname for r in jumps] == ['WARNING']


def test_sensor_state_stamps_jumping_back_again_warn_once(caplog):
    k = tracker()
    with caplog.at_level('DEBUG', logger='rosout'):
        for loop in range(3):
            for i in range(100):
                t = loop * 2.0 + i * 0.02
                k.on_sensor_state(0, DISCHARGING, t, stamp=i * 0.02)
    assert k.stamp_jumps == 2 and k.stale_ignored == 0
    jumps = [r for r in caplog.records if 'jumped back' in r.getMessage()]
    assert [r.levelname for r in jumps] == ['WARNING', 'DEBUG']


def test_dock_seen_after_a_bogus_future_stamp():
    k = tracker()
    assert k.on_sensor_state(0, DISCHARGING, 0.0, stamp=1e9) == []
    assert k.on_sensor_state(0, DOCKING_CHARGED, 0.02, stamp=10.02) == [E.DOCKED]
    assert k.on_dock and k.stamp_jumps == 1
    # Stale-ordering is judged from the new stamps on.
    assert k.on_sensor_state(0, DISCHARGING, 0.04, stamp=10.0) == []
    assert k.on_dock and k.stale_ignored == 1


def test_out_of_order_wheel_events_end_consistent():
    k = tracker()
    # RAISED overtakes DROPPED for the left wheel: left ends dropped, which the next
    # SensorState corrects.
    k.on_wheel(WHEEL_LEFT, False, 0.0)
    k.on_wheel(WHEEL_LEFT, True, 0.0)
    assert k.wheels_dropped == (True, False)
    assert k.on_sensor_state(0, DISCHARGING, 0.02, stamp=0.02) == [E.BUMP]
    assert k.wheels_dropped == (False, False)
    assert not k.picked_up


def _check_invariants(k, events, history):
    """Invariants that must hold whatever the order of the input."""
    assert not (k.picked_up and not any(k.wheels_dropped))
    for event in events:
        history.append(event)
    ups = [e for e in history if e in (E.PICKED_UP, E.PUT_DOWN)]
    # PICKED_UP and PUT_DOWN alternate, starting with PICKED_UP.
    for i, e in enumerate(ups):
        assert e == (E.PICKED_UP if i % 2 == 0 else E.PUT_DOWN)
    assert k.picked_up == (len(ups) % 2 == 1)
    docks = [e for e in history if e in (E.DOCKED, E.UNDOCKED)]
    for i, e in enumerate(docks):
        assert e == (E.DOCKED if i % 2 == 0 else E.UNDOCKED)
    assert k.on_dock == (len(docks) % 2 == 1)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3), st.floats(0.0, 0.5),
                          st.floats(-0.05, 0.05)), max_size=80))
def test_event_storms_keep_a_consistent_state(storm):
    k = tracker()
    history = []
    t = 0.0
    chargers = (DISCHARGING, DOCKING_CHARGED, DOCKING_CHARGING, ADAPTER_CHARGING)
    for kind, value, dt, jitter in storm:
        t += dt
        if kind == 0:
            events = k.on_wheel(value % 2, value >= 2, t)
        elif kind == 1:
            events = k.on_sensor_state(value, chargers[value], t, stamp=t + jitter)
        elif kind == 2:
            events = k.tick(t)
        else:
            events = k.clear_kidnapped()
        _check_invariants(k, events, history)
    # After the grace the level of the SensorState wins, whatever the events said.
    events = k.on_sensor_state(0, DISCHARGING, t + SENSOR_REPEAT_GRACE + 0.01, stamp=t + 10.0)
    _check_invariants(k, events, history)
    assert not k.picked_up and not k.on_dock


def test_seeded_random_storm_then_quiet_ends_on_the_ground():
    rng = random.Random(4)
    k = tracker()
    t = 0.0
    for _ in range(2000):
        t += rng.uniform(0.0, 0.01)
        k.on_wheel(rng.choice((WHEEL_LEFT, WHEEL_RIGHT)), rng.random() < 0.5, t)
    lower_both(k, t)
    assert not k.picked_up and k.wheels_dropped == (False, False)
    assert k.tick(t + 5.0) == []


# --- dock ----------------------------------------------------------------------------------

@pytest.mark.parametrize('charger', [DOCKING_CHARGED, DOCKING_CHARGING])
def test_docking_clears_kidnapped(charger):
    k = tracker()
    lift_both(k, 0.0)
    k.tick(3.0)
    lower_both(k, 3.0)
    assert k.kidnapped
    events = k.on_sensor_state(0, charger, 4.0, stamp=4.0)
    assert events == [E.DOCKED, E.KIDNAP_CLEARED]
    assert k.on_dock and not k.kidnapped
    assert k.on_sensor_state(0, charger, 4.02, stamp=4.02) == []
    assert k.on_sensor_state(0, DISCHARGING, 5.0, stamp=5.0) == [E.UNDOCKED]
    assert not k.on_dock


@pytest.mark.parametrize('charger', [DISCHARGING, ADAPTER_CHARGED, ADAPTER_CHARGING])
def test_adapter_charging_is_not_the_dock(charger):
    k = tracker()
    lift_both(k, 0.0)
    k.tick(3.0)
    lower_both(k, 3.0)
    assert k.on_sensor_state(0, charger, 4.0, stamp=4.0) == []
    assert not k.on_dock and k.kidnapped


# --- clock and bad input -------------------------------------------------------------------

def test_backwards_clock_restarts_timers_and_does_not_crash(caplog):
    k = tracker()
    lift_both(k, 100.0)
    assert k.tick(100.1) == []
    with caplog.at_level('WARNING', logger='rosout'):
        assert k.tick(1.0) == []
        assert k.tick(1.05) == []
    assert k.clock_jumps == 1
    assert len([r for r in caplog.records if 'backwards' in r.getMessage()]) == 1
    # The debounce restarted from 1.0: no pick-up at 1.15, one just after 1.2.
    assert k.tick(1.15) == []
    assert k.tick(1.21) == [E.PICKED_UP]
    assert k.tick(3.25) == [E.KIDNAPPED]


def test_backwards_clock_resets_the_stale_stamp_filter():
    k = tracker()
    k.on_sensor_state(0, DISCHARGING, 100.0, stamp=100.0)
    k.tick(1.0)
    # After the clock restarted, new (small) stamps are accepted again.
    assert k.on_sensor_state(BOTH, DISCHARGING, 1.02, stamp=1.02) == []
    assert k.wheels_dropped == (True, True)
    assert k.stale_ignored == 0


@pytest.mark.parametrize('call', [
    lambda k: k.on_wheel(2, True, 0.0),
    lambda k: k.on_wheel(True, True, 0.0),
    lambda k: k.on_wheel(WHEEL_LEFT, True, float('nan')),
    lambda k: k.tick(float('inf')),
    lambda k: k.on_sensor_state(-1, 0, 0.0),
    lambda k: k.on_sensor_state(0, 1.5, 0.0),
    lambda k: k.on_sensor_state(0, 0, 0.0, stamp=float('nan')),
])
def test_bad_input_raises_value_error_and_changes_nothing(call):
    k = tracker()
    k.on_wheel(WHEEL_LEFT, True, 0.0)
    before = (k.wheels_dropped, k.picked_up, k.kidnapped, k.on_dock)
    with pytest.raises(ValueError):
        call(k)
    assert (k.wheels_dropped, k.picked_up, k.kidnapped, k.on_dock) == before
    assert k.on_wheel(WHEEL_RIGHT, True, 0.05) == []
    assert k.tick(0.3) == [E.PICKED_UP]


# --- config --------------------------------------------------------------------------------

def test_default_config_is_valid_and_matches_yaml_defaults():
    config = config_from_params(KidnapConfig, {})
    assert config == KidnapConfig()
    assert (config.debounce, config.kidnap_after, config.rate) == (0.2, 2.0, 20.0)
    assert config.state_namespace == 'lost_service'


@pytest.mark.parametrize('params,names', [
    ({'debounce': 0.0}, ['debounce=0.0']),
    ({'debounce': -1.0, 'rate': float('nan')}, ['debounce=-1.0', 'rate=nan']),
    ({'kidnap_after': 0.1}, ['kidnap_after=0.1', 'debounce=0.2']),
    ({'debounce': 3.0, 'rate': -1.0}, ['kidnap_after=2.0', 'debounce=3.0', 'rate=-1.0']),
    ({'kidnap_after': float('inf')}, ['kidnap_after=inf']),
    ({'state_namespace': ' '}, ["state_namespace=' '"]),
    ({'rate': 'fast'}, ["rate='fast'"]),
])
def test_bad_config_names_the_bad_values(params, names):
    with pytest.raises(ConfigError) as error:
        config_from_params(KidnapConfig, params)
    for name in names:
        assert name in str(error.value)


def test_config_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        KidnapConfig().debounce = 1.0
