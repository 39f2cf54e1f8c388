"""core/clock.py: a clock gone back told from jitter and lag, and stamps of the old clock."""
from lost_and_found.core.clock import ClockWatch


def watch(*readings):
    clock = ClockWatch()
    for now in readings:
        clock.read(now)
    return clock


def test_reading_says_how_far_the_clock_went_back_beyond_the_jump():
    clock = ClockWatch()
    assert clock.read(100.0) is None
    assert clock.read(99.5) is None                 # within a second: jitter
    assert clock.read(0.3) == 99.2                  # from the latest reading
    assert clock.read(0.2) is None
    assert (clock.latest, clock.high) == (0.2, 100.0)


def test_an_unknown_clock_is_ignored():
    clock = watch(120.0)
    assert clock.read(0.0) is None and clock.read(None) is None
    assert clock.latest == 120.0 and not clock.went_back()


def test_went_back_until_the_clock_is_near_its_highest_again():
    clock = watch(50.0, 10.0)
    assert clock.went_back()
    clock.read(49.5)
    assert not clock.went_back()


def test_a_stamp_is_of_the_old_clock_only_after_the_clock_went_back():
    clock = watch(119.9, 0.3)
    assert clock.of_old_clock(120.0)
    assert not clock.of_old_clock(1.2)              # a little ahead: a clock read late
    assert not clock.of_old_clock(0.0)              # unstamped
    assert not clock.of_old_clock(0.2)              # behind the clock: not ahead of it
    # a busy node whose clock lags its messages, the clock never gone back: never old
    assert not watch(100.0).of_old_clock(105.0)
    assert not ClockWatch().of_old_clock(105.0)
