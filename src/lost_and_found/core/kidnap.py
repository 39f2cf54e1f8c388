"""Decide from Kobuki wheel drops and charger state when the robot is picked up or kidnapped.

The Kobuki reports its wheel-drop switches twice: as one ``WheelDropEvent`` per wheel change
(no timestamp) and as bits of the 50 Hz ``SensorState`` stream (which also carries the charger
state). Both describe the same two switches, so :class:`KidnapTracker` keeps one copy of each
wheel's state and lets either source set it; a repeated report changes nothing, and every event
is an edge of the tracker's own state, so the two sources never produce double events. The two
arrive through separate queues, so a SensorState that repeats its stream's previous wheel bits
does not undo a WheelDropEvent received less than ``SENSOR_REPEAT_GRACE`` before: it was most
likely sampled before that event. A change in the SensorState stream always counts, and so does
a repeat after the grace (the level corrects an event that was lost).

Timing rules (time is passed in, seconds, never read here):

* both wheels dropped continuously for ``debounce`` -> picked up (``PICKED_UP``);
* a drop episode that ends without a pick-up (one wheel, or both for less than the
  debounce) is a bump (``BUMP``, once per episode);
* both wheels dropped continuously for longer than ``kidnap_after`` -> kidnapped
  (``KIDNAPPED``, once per continuous lift, even when the flag is still set from an earlier
  kidnap: every such lift is a kidnap of its own);
* both wheels raised after a pick-up -> put down; ``kidnapped`` stays set until the robot
  docks or :meth:`KidnapTracker.clear_kidnapped` is called (it is localized again).
"""
import dataclasses
import enum
import logging
import math

from lost_and_found.core.config import Checker

_log = logging.getLogger('rosout')

#: kobuki_msgs/WheelDropEvent wheel ids.
WHEEL_LEFT = 0
WHEEL_RIGHT = 1
#: kobuki_msgs/SensorState.wheel_drop bits.
WHEEL_DROP_RIGHT_BIT = 1
WHEEL_DROP_LEFT_BIT = 2
#: kobuki_msgs/SensorState.charger values that mean "on the dock" (the ADAPTER_* values mean a
#: wall adapter is plugged in: the robot is charging but not on the dock).
DOCKING_CHARGED = 2
DOCKING_CHARGING = 6
DOCK_CHARGER_STATES = frozenset({DOCKING_CHARGED, DOCKING_CHARGING})
#: A SensorState stamped less than this (s) before the last one processed is a reordered,
#: stale message and is ignored. A larger step back cannot be reordering at 50 Hz with a queue
#: of 10: the stamps' clock jumped (a bag looped without --clock, a driver whose clock stepped
#: back, one bogus future stamp), and ignoring it would silence the stream for good.
STAMP_REORDER_WINDOW = 1.0
#: For this long (s, receipt time) after a WheelDropEvent, a SensorState whose wheel bits only
#: repeat its stream's previous message does not undo that event. A loaded computer delivered
#: the SensorStates sampled just before a lift 1.3 s after the lift's events (the recovery
#: benchmark, two graphs on two cores): applied, they ended the lift for a moment and restarted
#: the kidnap timer, and 3 s lifts passed for short ones.
SENSOR_REPEAT_GRACE = 2.0


class KidnapEvent(enum.Enum):
    """An edge of the tracker's state, reported by the call that caused it."""

    PICKED_UP = 'picked_up'
    KIDNAPPED = 'kidnapped'
    PUT_DOWN = 'put_down'
    BUMP = 'bump'
    DOCKED = 'docked'
    UNDOCKED = 'undocked'
    KIDNAP_CLEARED = 'kidnap_cleared'


@dataclasses.dataclass(frozen=True)
class KidnapConfig:
    """Parameters of the kidnap_monitor node.

    Attributes:
        debounce: both wheels must stay dropped this long (s) to count as a pick-up; shorter
            drops are bumps (driving over a threshold can drop both for a few ms).
        kidnap_after: both wheels dropped continuously longer than this (s) is a kidnap: long
            enough to be carried somewhere else, so the pose can no longer be trusted.
        rate: how often (Hz) the node advances the timers without new events.
        state_namespace: where lost_service publishes ``state`` (read to clear the kidnap
            flag once the robot is localized again).
    """

    debounce: float = 0.2
    kidnap_after: float = 2.0
    rate: float = 20.0
    state_namespace: str = 'lost_service'

    def validate(self):
        """Raise ConfigError naming every bad value."""
        check = Checker(self)
        check.positive('debounce')
        check.positive('kidnap_after')
        check.positive('rate')
        check.non_empty('state_namespace')
        delays_ok = all(isinstance(v, (int, float)) and not isinstance(v, bool)
                        and math.isfinite(v) and v > 0
                        for v in (self.debounce, self.kidnap_after))
        if delays_ok and self.kidnap_after <= self.debounce:
            check.problem('kidnap_after=%r must be > debounce=%r (a kidnap is a long pick-up)'
                          % (self.kidnap_after, self.debounce))
        check.done()


def _check_time(t):
    """Return ``t`` as a float; raise ValueError when it is not a finite number."""
    if isinstance(t, bool):
        raise ValueError('time must be a number, got %r' % (t,))
    t = float(t)
    if not math.isfinite(t):
        raise ValueError('time must be finite, got %r' % t)
    return t


class KidnapTracker:
    """Tracks wheel drops and the dock; reports pick-up, kidnap, put-down, bump and dock edges.

    Every input method returns the list of :class:`KidnapEvent` it caused (often empty), in
    the order they happened. Bad input raises ValueError and changes nothing.

    Attributes:
        picked_up: both wheels have been dropped for at least the debounce, not yet put down.
        kidnapped: the robot was held up longer than ``kidnap_after``; cleared by docking or
            :meth:`clear_kidnapped` only.
        on_dock: the charger reports a docking state.
        stale_ignored: SensorState updates ignored because their stamp was less than
            ``STAMP_REORDER_WINDOW`` older than the last one processed.
        stamp_jumps: how many times SensorState stamps jumped back by ``STAMP_REORDER_WINDOW``
            or more (the message is processed and the stamp filter restarts from it).
        superseded: SensorStates whose wheel bits differed from the tracker's but only
            repeated their stream's previous ones within ``SENSOR_REPEAT_GRACE`` of a
            WheelDropEvent, so were not applied.
        clock_jumps: how many times time went backwards.
    """

    def __init__(self, config):
        """Start with both wheels raised, off the dock, not kidnapped.

        Args:
            config: a validated :class:`KidnapConfig`.
        """
        self._config = config
        self._dropped = {WHEEL_LEFT: False, WHEEL_RIGHT: False}
        self.picked_up = False
        self.kidnapped = False
        self.on_dock = False
        self.stale_ignored = 0
        self.stamp_jumps = 0
        self.superseded = 0
        self.clock_jumps = 0
        self._sensor_wheels = None   # the wheel states the last SensorState reported
        self._event_t = None         # receipt time of the last WheelDropEvent
        self._now = None
        self._both_since = None      # when both wheels last became dropped
        self._episode = False        # a wheel is down and the drop episode is not over
        self._episode_picked = False  # this episode became a pick-up (so it is no bump)
        self._kidnap_reported = False  # KIDNAPPED already reported for this continuous lift
        self._last_stamp = None

    @property
    def wheels_dropped(self):
        """(left, right) wheel-drop switch states."""
        return self._dropped[WHEEL_LEFT], self._dropped[WHEEL_RIGHT]

    def on_wheel(self, wheel, dropped, t):
        """Apply one WheelDropEvent.

        Args:
            wheel: ``WHEEL_LEFT`` (0) or ``WHEEL_RIGHT`` (1).
            dropped: True for DROPPED, False for RAISED.
            t: time of receipt (s).

        Returns:
            The events caused, in order.

        Raises:
            ValueError: on an unknown wheel id or a non-finite time.
        """
        t = _check_time(t)
        if wheel not in self._dropped or isinstance(wheel, bool):
            raise ValueError('unknown wheel %r (expected %d or %d)'
                             % (wheel, WHEEL_LEFT, WHEEL_RIGHT))
        self._advance_clock(t)
        self._event_t = t
        wheels = dict(self._dropped)
        wheels[wheel] = bool(dropped)
        return self._apply_wheels(wheels, t)

    def on_sensor_state(self, wheel_drop_bits, charger, t, stamp=None):
        """Apply one SensorState: both wheel-drop bits and the charger state.

        Args:
            wheel_drop_bits: ``SensorState.wheel_drop`` (bit 1 right, bit 2 left).
            charger: ``SensorState.charger``.
            t: time of receipt (s), on the same clock as every other call.
            stamp: the message's header stamp (s), used only to ignore messages a little older
                than the last one processed (see ``STAMP_REORDER_WINDOW``); None when the
                message carries no stamp.

        Returns:
            The events caused, in order (none when the message is stale).

        Raises:
            ValueError: on non-integer fields or a non-finite time.
        """
        t = _check_time(t)
        for name, value in (('wheel_drop', wheel_drop_bits), ('charger', charger)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError('%s must be a non-negative integer, got %r' % (name, value))
        if stamp is not None:
            stamp = _check_time(stamp)
            if self._last_stamp is not None and stamp < self._last_stamp:
                if self._last_stamp - stamp < STAMP_REORDER_WINDOW:
                    self.stale_ignored += 1
                    _log.debug('ignoring a SensorState stamped %.3f older than %.3f',
                               stamp, self._last_stamp)
                    return []
                self._stamp_jumped(stamp)
            self._last_stamp = stamp
        self._advance_clock(t)
        reported = {WHEEL_LEFT: bool(wheel_drop_bits & WHEEL_DROP_LEFT_BIT),
                    WHEEL_RIGHT: bool(wheel_drop_bits & WHEEL_DROP_RIGHT_BIT)}
        previous = self._sensor_wheels
        self._sensor_wheels = reported
        wheels = reported
        if previous is not None and self._event_t is not None \
                and t - self._event_t < SENSOR_REPEAT_GRACE:
            # Only the wheels whose bit changed in the stream: a repeat was most likely
            # sampled before the WheelDropEvent that came through faster.
            wheels = {wheel: dropped if previous[wheel] != dropped else self._dropped[wheel]
                      for wheel, dropped in reported.items()}
            if wheels != reported:
                self.superseded += 1
                _log.debug('SensorState wheel drops %s repeat the previous message, %.2f s '
                           'after a wheel-drop event: keeping %s', reported, t - self._event_t,
                           wheels)
        events = self._apply_wheels(wheels, t)
        on_dock = charger in DOCK_CHARGER_STATES
        if on_dock and not self.on_dock:
            self.on_dock = True
            events.append(KidnapEvent.DOCKED)
            # On the dock the robot knows where it is: the dock is at a known place.
            events += self.clear_kidnapped()
        elif not on_dock and self.on_dock:
            self.on_dock = False
            events.append(KidnapEvent.UNDOCKED)
        return events

    def tick(self, t):
        """Advance the timers to time ``t`` without new input.

        Returns:
            The events caused (a pick-up or kidnap whose time has come).

        Raises:
            ValueError: on a non-finite time.
        """
        t = _check_time(t)
        self._advance_clock(t)
        return self._update_timers(t)

    def clear_kidnapped(self):
        """Forget the kidnap: the robot is localized again.

        Returns:
            ``[KIDNAP_CLEARED]`` if it was kidnapped, else ``[]``.
        """
        if not self.kidnapped:
            return []
        self.kidnapped = False
        return [KidnapEvent.KIDNAP_CLEARED]

    def _stamp_jumped(self, stamp):
        """Count a backwards jump of the SensorState stamps; warn about the first one only."""
        self.stamp_jumps += 1
        # A looped bag jumps at every loop: one warning says it all, later ones would spam.
        log = _log.warning if self.stamp_jumps == 1 else _log.debug
        log('SensorState stamps jumped back by %.3f s (%.3f -> %.3f): taken as a jump of '
            'their clock, not as stale messages (further jumps are not warned about)',
            self._last_stamp - stamp, self._last_stamp, stamp)

    def _advance_clock(self, t):
        """Record the current time; on a backwards jump, restart the running timers."""
        if self._now is not None and t < self._now:
            self.clock_jumps += 1
            _log.warning('time moved backwards by %.3f s (%.3f -> %.3f): restarting the '
                         'pick-up timers', self._now - t, self._now, t)
            if self._both_since is not None:
                self._both_since = t
            if self._event_t is not None:
                self._event_t = t
            # Stamps from before the jump would make every later message look stale.
            self._last_stamp = None
        self._now = t

    def _apply_wheels(self, wheels, t):
        """Set both wheel states at time ``t`` and return the events this causes."""
        # Time has passed with the previous wheel states: a pick-up whose debounce elapsed
        # before this change happened even if no tick() came in between.
        events = self._update_timers(t)
        was_both = all(self._dropped.values())
        self._dropped = wheels
        both = all(wheels.values())
        none = not any(wheels.values())
        if both and not was_both:
            self._both_since = t
            self._kidnap_reported = False
        elif not both:
            self._both_since = None
        if not none and not self._episode:
            self._episode = True
            self._episode_picked = False
        if none:
            if self.picked_up:
                self.picked_up = False
                events.append(KidnapEvent.PUT_DOWN)
            elif self._episode and not self._episode_picked:
                events.append(KidnapEvent.BUMP)
            self._episode = False
        return events

    def _update_timers(self, t):
        """Report a pick-up or kidnap whose delay has elapsed at time ``t``."""
        if self._both_since is None:
            return []
        events = []
        held = t - self._both_since
        if held >= self._config.debounce:
            self._episode_picked = True
            if not self.picked_up:
                self.picked_up = True
                events.append(KidnapEvent.PICKED_UP)
        # Reported once per continuous lift, so clear_kidnapped() in mid-air sticks. Reported
        # even when the flag is still set from an earlier kidnap (not localized since): this
        # lift is a kidnap of its own, and a listener must not take it for a short lift.
        if held > self._config.kidnap_after and not self._kidnap_reported:
            self._kidnap_reported = True
            self.kidnapped = True
            events.append(KidnapEvent.KIDNAPPED)
        return events
