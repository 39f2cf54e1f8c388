"""Whether the last seconds of scans, placed by odometry, fit the map at amcl's estimate.

The lost detector's scan feature reads one scan at a time, each at amcl's estimate of its own
instant. After a silent delocalization amcl can keep a wrong estimate that fits each scan well
enough on its own (a Kinect sees 60 degrees, and one wall fits many places), nudging it scan by
scan. The wheels do not follow those nudges: the returns of the last ``window`` seconds,
placed by odometry in one frame around the robot (a *strip*), keep their true shape, and at a
wrong estimate that shape does not fit the map.

:class:`StripCheck` keeps the returns of recent scans in the odometry frame and, for each
reading, scores the strip at amcl's estimate under the likelihood field of
:class:`~lost_and_found.core.panorama.PanoramaMatcher` (the mean over its returns of
exp(-d^2 / 2 sigma^2), d the distance to the nearest mapped obstacle, one return per ``cell``
square). Unmapped clutter, people and doors opened since the map was made lower that score at
a right estimate too, so it is compared with the best score any place of the map gives the
same strip: a reading is *low* when the estimate scores below ``ratio`` of the best place and
that place lies more than ``min_distance`` from the estimate. The whole-map search costs tens
of milliseconds, and runs only when the estimate scores below ``ratio`` (the best place
scores at most 1, so a higher score is never low).

The lost detector's rule 9 (core/lost_detector.py) turns low readings into tier 2.

Pure numpy/scipy: no ROS.
"""
import collections
import dataclasses
import math

import numpy as np

from lost_and_found.core.panorama import PanoramaConfig, PanoramaMatcher


#: Step (rad) of the headings tried within ``slack_yaw`` of the estimate.
SLACK_YAW_STEP = 0.05


def _compose(pose, points):
    """``points`` (``(n, 2)``, in the frame of ``pose``) in the frame ``pose`` is given in."""
    c, s = math.cos(pose[2]), math.sin(pose[2])
    return np.column_stack([pose[0] + c * points[:, 0] - s * points[:, 1],
                            pose[1] + s * points[:, 0] + c * points[:, 1]])


def _inverse(pose):
    """The inverse of the planar pose ``(x, y, yaw)``."""
    c, s = math.cos(pose[2]), math.sin(pose[2])
    return (-c * pose[0] - s * pose[1], s * pose[0] - c * pose[1], -pose[2])


class StripCheck:
    """The strip of recent returns and its verdict on amcl's estimate (module docstring).

    Args:
        window: seconds of scans in a strip (> 0).
        min_points: a strip of fewer returns (one per ``cell`` square, within the search's
            ``max_range`` of the robot) gives no verdict.
        ratio: a reading is low when the estimate scores below this share of the best place,
            in (0, 1].
        min_distance: ... and that place lies farther than this (m) from the estimate.
        slack_xy, slack_yaw: the estimate's score is the best within a square of this half
            side (m, on the ``cell`` grid) and this heading (rad) around it (0, 0: the
            estimate's own), so that an estimate off by
            amcl's usual error, whose strip then lies a little beside the walls, does not
            read as a wrong place.
        matcher_config: the :class:`PanoramaConfig` of the map's search (its ``cell``,
            ``sigma``, ``headings``, ``max_range`` and ``clearance``; ``min_points`` is
            replaced by ``min_points`` above).

    Attributes:
        last: ``(score at the estimate, best score or None, best pose or None)`` of the latest
            verdict that was not None (for logs).
    """

    def __init__(self, window, min_points, ratio, min_distance, matcher_config=None,
                 slack_xy=0.0, slack_yaw=0.0):
        """No map and no returns yet."""
        config = matcher_config or PanoramaConfig()
        self._matcher_config = dataclasses.replace(config, min_points=min_points).validate()
        self.window = float(window)
        self.min_points = int(min_points)
        self.ratio = float(ratio)
        self.min_distance = float(min_distance)
        self.slack_xy = float(slack_xy)
        self.slack_yaw = float(slack_yaw)
        self.cell = self._matcher_config.cell
        self.matcher = None
        self.last = None
        self._scans = collections.deque()        # (stamp, (n, 2) returns in odom)

    @classmethod
    def from_config(cls, config):
        """The check of rule 9 with the ``strip_*`` numbers of a LostDetectorConfig."""
        return cls(config.strip_window, config.strip_min_points, config.strip_ratio,
                   config.strip_min_distance, slack_xy=config.strip_slack_xy,
                   slack_yaw=config.strip_slack_yaw)

    def set_map(self, distance_map):
        """Search ``distance_map`` (a :class:`~lost_and_found.core.scan_agreement.DistanceMap`)
        from now on.

        Raises:
            ValueError: a map the search cannot use (see :class:`PanoramaMatcher`); the
                previous map stays.
        """
        self.matcher = self.build_matcher(distance_map)

    def build_matcher(self, distance_map):
        """The search of ``distance_map`` that :meth:`set_map` would use, without using it
        (a node builds it outside its lock, then sets :attr:`matcher`).

        Raises:
            ValueError: as :meth:`set_map`.
        """
        return PanoramaMatcher(distance_map, self._matcher_config)

    def clear(self):
        """Forget every return (a reset of the detector, a clock jump)."""
        self._scans.clear()

    def add(self, stamp, odom, returns):
        """Keep the returns (``(n, 2)`` in the base frame, m) of the scan taken at ``stamp``
        when odometry put the base at ``odom`` (``(x, y, yaw)`` in the odometry frame). A
        stamp before the newest kept one (the clock went back) forgets the older ones first.

        Raises:
            ValueError: a stamp or odometry pose that is not finite (nothing is kept).
        """
        if not all(math.isfinite(float(v)) for v in (stamp, *odom)):
            raise ValueError('a scan stamped %r at odometry %r: not finite' % (stamp, odom))
        if self._scans and stamp < self._scans[-1][0]:
            self.clear()
        points = np.asarray(returns, dtype=float).reshape(-1, 2)
        points = points[np.all(np.isfinite(points), axis=1)]
        self._scans.append((float(stamp), _compose(odom, points)))
        while self._scans and self._scans[0][0] < stamp - self.window:
            self._scans.popleft()

    def strip(self, stamp, odom):
        """The returns of the scans within ``window`` s up to ``stamp``, in the base frame at
        ``odom``, one per ``cell`` square (its centre): an ``(n, 2)`` array."""
        parts = [p for t, p in self._scans if stamp - self.window <= t <= stamp and len(p)]
        if not parts:       # (numpy before 1.19 cannot take unique rows of nothing)
            return np.empty((0, 2))
        points = _compose(_inverse(odom), np.vstack(parts))
        cells = np.unique(np.floor(points / self.cell).astype(np.int64), axis=0)
        return (cells + 0.5) * self.cell

    def verdict(self, stamp, odom, estimate):
        """Whether the reading at ``stamp`` (odometry ``odom``, amcl's ``estimate`` ``(x, y,
        yaw)`` in the map frame) is low: True, False, or None without a map or with a strip
        of fewer than ``min_points`` returns within the search's ``max_range``."""
        measured = self.measure(stamp, odom, estimate, self.ratio)
        if measured is None:
            return None
        self.last = measured
        return is_low(measured, estimate, self.ratio, self.min_distance)

    def measure(self, stamp, odom, estimate, search_below):
        """``(score at the estimate, best score, best pose)`` of the strip at ``stamp`` (see
        :meth:`verdict`), both scores by :meth:`PanoramaMatcher.score` over the strip's
        returns within ``max_range`` (the ones the search uses); the map is searched only
        when the estimate scores below ``search_below`` (best score and pose None otherwise).
        None as :meth:`verdict` says, or when the search finds no place."""
        if self.matcher is None:
            return None
        # the returns the search uses (within its max_range), so that the estimate and the
        # best place are scored over the same ones
        points = self.matcher.usable(self.strip(stamp, odom))
        if len(points) < self.min_points:
            return None
        score = self.matcher.score(estimate, points)
        if score < search_below and (self.slack_xy > 0.0 or self.slack_yaw > 0.0):
            score = max(score, float(self.matcher.scores_at(
                self._around(estimate), points).max()))
        if score >= search_below:
            return score, None, None
        match = self.matcher.match(points)
        if match is None:
            return None
        # The best place scored as the estimate is: the search's refinement may round a
        # return lying on an edge of the map's squares (the strip's returns are squares'
        # centres, and the place is on the grid) into the other square.
        return score, self.matcher.score(match.pose, points), match.pose

    def _around(self, estimate):
        """Poses within ``slack_xy`` (on the ``cell`` grid) and ``slack_yaw`` (in steps of
        0.05 rad) of ``estimate``: an ``(m, 3)`` array."""
        steps = np.arange(-self.slack_xy, self.slack_xy + 1e-9, self.cell) \
            if self.slack_xy > 0.0 else np.zeros(1)
        turns = np.arange(-self.slack_yaw, self.slack_yaw + 1e-9, SLACK_YAW_STEP) \
            if self.slack_yaw > 0.0 else np.zeros(1)
        dx, dy, dk = np.meshgrid(steps, steps, turns, indexing='ij')
        return np.column_stack([estimate[0] + dx.ravel(), estimate[1] + dy.ravel(),
                                estimate[2] + dk.ravel()])


def is_low(measured, estimate, ratio, min_distance):
    """Whether a strip :meth:`StripCheck.measure` gave ``measured`` (searched below ``ratio``
    at least) is low for the ``estimate``: it scores there below ``ratio`` of the best place,
    which lies more than ``min_distance`` (m) from it."""
    score, best, pose = measured
    if best is None:
        if score < ratio:
            raise ValueError('a strip scoring %.3f was not searched below %g' % (score, ratio))
        return False
    return bool(score < ratio * best and
                math.hypot(pose[0] - estimate[0], pose[1] - estimate[1]) > min_distance)
