"""Unit tests for core/spiral.py: the rectangular outward spiral of search goals."""
import math

import pytest

from lost_and_found.core.spiral import SpiralSearch, leg_offset, spiral_goals

HALF_PI = math.pi / 2.0


def test_first_eight_goals_exact():
    """The first 8 goals around (1, -2) with step 0.5, in order, with the leg's heading."""
    s = 0.5
    expected = [
        (1 + s, -2, 0.0),
        (1 + s, -2 + s, HALF_PI),
        (1 - s, -2 + s, math.pi),
        (1 - s, -2 - s, -HALF_PI),
        (1 + 2 * s, -2 - s, 0.0),
        (1 + 2 * s, -2 + 2 * s, HALF_PI),
        (1 - 2 * s, -2 + 2 * s, math.pi),
        (1 - 2 * s, -2 - 2 * s, -HALF_PI),
    ]
    goals = spiral_goals(1.0, -2.0, s, 8)
    assert len(goals) == 8
    for got, want in zip(goals, expected):
        assert got == pytest.approx(want, abs=1e-12)


def test_leg_lengths_grow_every_two_legs():
    """Leg k is step * ceil(k / 2) long, alternating x and y."""
    step = 0.7
    goals = [(0.0, 0.0, 0.0)] + spiral_goals(0.0, 0.0, step, 20)
    for k in range(1, 21):
        (xa, ya, _), (xb, yb, yaw) = goals[k - 1], goals[k]
        length = math.hypot(xb - xa, yb - ya)
        assert length == pytest.approx(step * math.ceil(k / 2.0))
        if k % 2:
            assert yb == pytest.approx(ya)        # odd legs run along x
        else:
            assert xb == pytest.approx(xa)        # even legs run along y
        # The yaw points along the leg just driven.
        assert math.atan2(yb - ya, xb - xa) == pytest.approx(yaw)


def test_leg_offset_signs():
    """Sign is + when ceil(k/2) is odd, - when even."""
    assert [leg_offset(k) for k in range(1, 9)] == [
        ('x', 1), ('y', 1), ('x', -2), ('y', -2), ('x', 3), ('y', 3), ('x', -4), ('y', -4)]
    with pytest.raises(ValueError):
        leg_offset(0)


def test_spiral_search_matches_spiral_goals_and_counts_legs():
    """next_goal() walks the same spiral forever and counts what it returned."""
    search = SpiralSearch(3.0, 4.0, 0.25)
    assert search.legs_sent == 0
    goals = [search.next_goal() for _ in range(50)]
    assert search.legs_sent == 50
    assert goals == spiral_goals(3.0, 4.0, 0.25, 50)


def test_no_drift_far_out():
    """Goals stay exact multiples of the step after many legs (no float accumulation)."""
    search = SpiralSearch(0.0, 0.0, 0.1)
    for _ in range(999):
        search.next_goal()
    x, y, yaw = search.next_goal()          # leg 1000 closes lap 250 at (-250 s, -250 s)
    assert (x, y) == pytest.approx((-25.0, -25.0), abs=1e-9)
    assert yaw == pytest.approx(-HALF_PI)


def test_goals_move_outward():
    """Each lap of 4 legs lies one step farther out (Chebyshev distance) than the last."""
    goals = spiral_goals(0.0, 0.0, 1.0, 16)
    ring = [max(abs(x), abs(y)) for x, y, _ in goals]
    assert ring == pytest.approx([k // 4 + 1 for k in range(16)])


def test_zero_count():
    """count 0 gives no goals."""
    assert spiral_goals(0.0, 0.0, 1.0, 0) == []


@pytest.mark.parametrize('x0, y0, step', [
    (0.0, 0.0, 0.0),
    (0.0, 0.0, -1.0),
    (float('nan'), 0.0, 1.0),
    (0.0, float('inf'), 1.0),
    (0.0, 0.0, float('nan')),
    (0.0, 0.0, float('inf')),
    ('1', 0.0, 1.0),
    (True, 0.0, 1.0),
])
def test_bad_input_raises(x0, y0, step):
    """A non-finite origin or a step <= 0 is refused."""
    with pytest.raises(ValueError):
        SpiralSearch(x0, y0, step)
    with pytest.raises(ValueError):
        spiral_goals(x0, y0, step, 3)


@pytest.mark.parametrize('count', [-1, 2.5, None])
def test_bad_count_raises(count):
    """count must be a non-negative integer."""
    with pytest.raises(ValueError):
        spiral_goals(0.0, 0.0, 1.0, count)
