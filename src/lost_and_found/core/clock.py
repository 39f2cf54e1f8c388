"""A node's clock that can go back: a simulator reset, a looped bag, ``rosbag play --clock``.

Under sim time the clock a node reads can go back by minutes at once, and messages stamped by
the old clock can still be queued when it does. :class:`ClockWatch` keeps the readings one
node needs to tell such a jump from jitter or a busy node's lag: the latest reading and the
highest one over every jump. A node reads the clock into it (``read``), and asks whether a
stamp is of the old clock (``of_old_clock``). Pure Python, no ROS.
"""

#: How far (s) the clock must go back, or a stamp lie ahead of it after it went back, to count
#: (less is jitter, or messages out of order).
CLOCK_JUMP = 1.0


class ClockWatch:
    """The latest and the highest reading of one node's clock."""

    def __init__(self, jump=CLOCK_JUMP):
        """No reading yet; ``jump`` (s): see :data:`CLOCK_JUMP`."""
        self.jump = float(jump)
        self.latest = None      # the latest reading
        self.high = None        # the highest reading, over every jump

    def read(self, now):
        """The clock read ``now`` (s; None or 0: unknown, as a simulated clock not yet
        started, and ignored): how far (s) it went back since the latest reading when that
        is more than :attr:`jump`, else None."""
        if now is None or now <= 0.0:
            return None
        last, self.latest = self.latest, now
        if self.high is None or now > self.high:
            self.high = now
        if last is not None and now < last - self.jump:
            return last - now
        return None

    def went_back(self):
        """True while the latest reading lies more than :attr:`jump` s below the highest."""
        return self.latest is not None and self.latest < self.high - self.jump

    def of_old_clock(self, stamp):
        """True for a ``stamp`` (s; 0: unstamped, never) more than :attr:`jump` s ahead of
        the latest reading of a clock that went back: stamped before it did. A clock that
        never went back makes no stamp old, however far a busy node's clock lags its
        messages."""
        return self.went_back() and stamp > 0.0 and stamp > self.latest + self.jump
