"""The rectangular outward spiral of move_base goals used by the ``spiral`` search strategy.

Leg ``k`` (1, 2, 3, ...) runs along x when ``k`` is odd and along y when it is even; its length is
``step * ceil(k / 2)`` and its sign is ``+`` when ``ceil(k / 2)`` is odd, ``-`` when it is even.
The goals are cumulative from the origin ``(x0, y0)``::

    (s, 0), (s, s), (-s, s), (-s, -s), (2s, -s), (2s, 2s), (-2s, 2s), (-2s, -2s), ...

so every two legs the spiral grows by one ``step``. Each goal's yaw is the direction of travel of
its leg (0, pi/2, pi or -pi/2), so the robot arrives facing outward along the leg it just drove.

Pure Python: no ROS, no clock.
"""
import math
import numbers

# The direction of travel of a leg, by (axis, sign): the yaw the goal is sent with.
_YAW = {
    ('x', 1): 0.0,
    ('y', 1): math.pi / 2.0,
    ('x', -1): math.pi,
    ('y', -1): -math.pi / 2.0,
}


def _check_origin_step(x0, y0, step):
    """Raise ValueError unless the origin is finite and the step a finite number > 0."""
    for name, value in (('x0', x0), ('y0', y0), ('step', step)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ValueError('%s=%r: must be a number' % (name, value))
        if not math.isfinite(value):
            raise ValueError('%s=%r: must be finite' % (name, value))
    if step <= 0:
        raise ValueError('step=%r: must be > 0' % (step,))


def leg_offset(k):
    """The signed length of leg ``k`` in units of ``step``, and the axis it runs along.

    Args:
        k: the 1-based leg number.

    Returns:
        ``(axis, multiple)``: ``axis`` is ``'x'`` or ``'y'``, ``multiple`` a non-zero int; the
        leg moves ``multiple * step`` metres along ``axis``.

    Raises:
        ValueError: when ``k`` is not an integer >= 1.
    """
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
        raise ValueError('k=%r: must be an integer >= 1' % (k,))
    ring = (k + 1) // 2          # ceil(k / 2) without floats
    sign = 1 if ring % 2 == 1 else -1
    return ('x' if k % 2 == 1 else 'y'), sign * ring


class SpiralSearch:
    """An endless rectangular outward spiral of goals around a fixed origin.

    Attributes:
        x0: origin x (m), usually where the robot was when it got lost.
        y0: origin y (m).
        step: growth of the spiral every two legs (m).
        legs_sent: how many goals :meth:`next_goal` has returned.
    """

    def __init__(self, x0, y0, step):
        """Start a spiral at ``(x0, y0)`` growing by ``step`` metres every two legs.

        Raises:
            ValueError: when the origin is not finite or ``step`` is not a finite number > 0.
        """
        _check_origin_step(x0, y0, step)
        self.x0 = float(x0)
        self.y0 = float(y0)
        self.step = float(step)
        self.legs_sent = 0
        # Integer multiples of step: the goals are exact, with no drift from summing floats.
        self._ix = 0
        self._iy = 0

    def next_goal(self):
        """Return the goal ``(x, y, yaw)`` at the end of the next leg (never runs out)."""
        axis, multiple = leg_offset(self.legs_sent + 1)
        if axis == 'x':
            self._ix += multiple
        else:
            self._iy += multiple
        self.legs_sent += 1
        yaw = _YAW[(axis, 1 if multiple > 0 else -1)]
        return (self.x0 + self._ix * self.step, self.y0 + self._iy * self.step, yaw)

    def __repr__(self):
        """A readable summary for logs."""
        return 'SpiralSearch(x0=%g, y0=%g, step=%g, legs_sent=%d)' % (
            self.x0, self.y0, self.step, self.legs_sent)


def spiral_goals(x0, y0, step, count):
    """The first ``count`` goals ``(x, y, yaw)`` of the rectangular outward spiral around (x0, y0).

    Args:
        x0: origin x (m).
        y0: origin y (m).
        step: growth every two legs (m), > 0.
        count: number of goals, an integer >= 0.

    Returns:
        A list of ``count`` tuples ``(x, y, yaw)``.

    Raises:
        ValueError: on a non-finite origin, ``step <= 0`` or a negative / non-integer ``count``.
    """
    if isinstance(count, bool) or not isinstance(count, numbers.Integral) or count < 0:
        raise ValueError('count=%r: must be an integer >= 0' % (count,))
    search = SpiralSearch(x0, y0, step)
    return [search.next_goal() for _ in range(count)]
