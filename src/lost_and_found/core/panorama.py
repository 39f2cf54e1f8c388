"""Where a lost robot is, from the laser returns of a full turn: a panorama fix.

After a put-down the recovery node turns once in place, and the search turns again every few
metres. amcl reads each scan of such a turn against its particles; after a kidnap its
particles are where lost_service re-seeded them, or spread thinly over a large map by global
localization, and the cloud mostly settles on a wrong place (bench/RESULTS.md, "Search hints
from amcl's particle cloud"). The same returns, placed by odometry in one frame, are a
panorama around the robot, and scoring *every* free place of the map at every heading for
how well its walls lie under that panorama does not depend on where particles happened to
be.

:class:`Panorama` gathers returns in the odometry frame and says when the laser has looked
all the way round: the returns of one full turn, from the last match or the start of the lost
episode on; :class:`PanoramaEpisodes` holds the node's rules of when to gather, match and
publish. :class:`PanoramaMatcher` scores a panorama against the map: each return's likelihood
under amcl's likelihood-field model (exp(-d^2 / 2 sigma^2), d its distance to the nearest
mapped obstacle), averaged over the returns, for the robot at every place of the map it fits
in, at every heading: first on a coarse grid over the whole map by FFT correlation, then
around the best candidates on the ``cell`` grid. The best place is a fix only when it stands
alone: every candidate (the best place of a ``BLOCK`` square at one heading, refined) that
scores at least ``keep`` of the best lies within ``alone_xy`` of it, at a heading within
``alone_yaw``. A corridor, a row of like rooms, a symmetric building give several places
that score alike, and no fix.

The map is the one the robot localizes in. Where the building has changed since it was made
(furniture, people, doors), the returns that fall on the change lower every place's score
alike, and an unmapped wall that looks like a mapped one elsewhere can make a wrong place
stand alone: the fix is a re-seed for amcl, which settles it against the laser, not a
declaration that the robot is localized.

Pure numpy/scipy: no ROS.
"""
import dataclasses
import itertools
import math

import numpy as np

from lost_and_found.core.clock import CLOCK_JUMP, ClockWatch
from lost_and_found.core.config import Checker
from lost_and_found.state import LOCALIZED, State

#: Side (m) of the squares of the map over which :meth:`PanoramaMatcher.match` compares the
#: best place with the others (the best place of each square, at each heading), rounded to
#: whole squares of the first search (0.4 m with the default ``cell``).
BLOCK = 0.5
#: Headings are marked as looked at in bins of this width (rad): a full turn is every bin.
LOOK_BIN = math.radians(10.0)
#: The first search's squares and field width are this many times ``cell`` and ``sigma``,
#: at every second heading.
COARSE = 2
#: Places of the first search scoring at least this share of its best are searched again.
COARSE_KEEP = 0.75
#: Most places of the first search searched again.
MAX_CANDIDATES = 100
#: Most cells of the search grid a map may have: 8 million cells of 10 cm are 80 000 m2. The
#: matcher keeps a few arrays of floats of that size, an FFT of the coarse level (COARSE^2
#: times fewer cells), and during a match a float32 score per coarse place and coarse
#: heading: at most 36 x 2 million x 4 bytes (288 MB) with the default 72 headings.
MAX_CELLS = 8000000
#: Most bytes of those scores (one float32 per coarse place and coarse heading): 288 MB, what
#: a map of MAX_CELLS free cells needs with the default 72 headings.
MAX_SCORE_BYTES = 4 * (MAX_CELLS // COARSE ** 2) * 36


@dataclasses.dataclass(frozen=True)
class PanoramaConfig:
    """Settings of the panorama fix (see the module docstring).

    Attributes:
        cell: side (m) of the squares whose centres are tried as places, and of the squares
            in which one return of the panorama is kept.
        headings: headings tried at each place (evenly spaced; even, 2 to 720).
        sigma: width (m) of the likelihood field.
        keep: a place scoring at least this share of the best counts against it standing
            alone.
        alone_xy: the best place stands alone when every place that counts lies within this
            distance (m) of it ...
        alone_yaw: ... at a heading within this (rad) of its heading.
        min_score: the least score (the mean likelihood of the returns, in [0, 1]) of a fix.
        min_points: the fewest returns (one per ``cell`` square) a panorama needs.
        max_range: returns farther than this (m) from the robot are not used (at most 30).
        clearance: the robot's radius (m): a place nearer an obstacle is not tried.
        fixes: fixes published per lost episode, at most (one per match).
        partial_share: match a part of a turn once this share of the headings has been
            looked at (0: only full turns). A part that gives no fix is kept and grows; the
            full turn is matched as without it.
        partial_step: a share of the headings newly looked at between two matches of parts
            of one turn.
        sigma_xy: standard deviation (m) of x and y of a published fix.
        sigma_yaw: standard deviation (rad) of the yaw of a published fix.
        beam_step: every this-many-th beam of a scan is used.
        map_frame: the frame of ``map`` and of the fixes.
        odom_frame: the odometry frame the returns are gathered in (tf).
        base_frame: the robot's frame (tf).
        tf_timeout: how long (s) a scan waits for its transforms (at most 1).
        state_namespace: where lost_service publishes the robot state.
    """

    cell: float = 0.1
    headings: int = 72
    sigma: float = 0.2
    keep: float = 0.9
    alone_xy: float = 1.0
    alone_yaw: float = 0.35
    min_score: float = 0.5
    min_points: int = 100
    max_range: float = 6.0
    clearance: float = 0.18
    fixes: int = 2
    partial_share: float = 0.3
    partial_step: float = 0.1
    sigma_xy: float = 0.25
    sigma_yaw: float = 0.1
    beam_step: int = 8
    map_frame: str = 'map'
    odom_frame: str = 'odom'
    base_frame: str = 'base_footprint'
    tf_timeout: float = 0.1
    state_namespace: str = 'lost_service'

    def validate(self):
        """Raise :class:`ConfigError` naming every bad value."""
        check = Checker(self)
        check.positive('cell')
        check.positive_int('headings')
        headings = self.headings
        if isinstance(headings, int) and headings >= 1:
            check.require(headings % 2 == 0 and 2 <= headings <= 720, 'headings',
                          'be an even number from 2 to 720 (the first search tries every '
                          'second one)')
        check.positive('sigma')
        check.in_range('keep', 0.0, 1.0, low_open=True, high_open=True)
        check.positive('alone_xy')
        check.in_range('alone_yaw', 0.0, math.pi, low_open=True)
        check.in_range('min_score', 0.0, 1.0)
        check.positive_int('min_points')
        check.in_range('max_range', 0.0, 30.0, low_open=True)
        check.non_negative('clearance')
        check.positive_int('fixes')
        check.in_range('partial_share', 0.0, 1.0, high_open=True)
        check.in_range('partial_step', 0.0, 1.0, low_open=True)
        check.sigma_xy('sigma_xy')
        check.sigma_yaw('sigma_yaw')
        check.positive_int('beam_step')
        for name in ('map_frame', 'odom_frame', 'base_frame'):
            check.frame(name)
        check.non_empty('state_namespace')
        check.in_range('tf_timeout', 0.0, 1.0)
        check.done()
        return self


@dataclasses.dataclass(frozen=True)
class PanoramaMatch:
    """The best place of a panorama.

    Attributes:
        pose: ``(x, y, yaw)`` of the robot in the map frame.
        score: its score (mean likelihood of the returns, in [0, 1]).
        alone: it stands alone (every place that scores at least ``keep`` of it is near).
        rivals: how many candidates (the best place of a ``BLOCK`` square at one heading,
            refined) score at least ``keep`` of it and are not near it.
        points: the returns matched.
    """

    pose: tuple
    score: float
    alone: bool
    rivals: int
    points: int

    def is_fix(self, config):
        """True when this match may re-seed the localizer under ``config``."""
        return self.alone and self.score >= config.min_score


class Panorama:
    """The laser returns of one turn (or of the part of it gathered so far), in the odometry
    frame.

    Args:
        cell: one return is kept per square of this side (m), the first.
    """

    def __init__(self, cell):
        """An empty panorama."""
        self.cell = float(cell)
        self._points = {}       # in the order they came (a dict keeps it)
        self._looked = np.zeros(int(round(2.0 * math.pi / LOOK_BIN)), dtype=bool)
        self._marked = 0                    # returns kept when :meth:`mark` was called
        self._looked_since = np.zeros_like(self._looked)
        #: The share of the headings looked at when :meth:`mark` was called (0: no mark).
        self.marked_share = 0.0

    def __len__(self):
        """How many returns are kept."""
        return len(self._points)

    def clear(self):
        """Forget every return and every heading looked at: a new lost episode, or a match
        made (the next is of the next full turn: returns gathered over a longer way would
        carry odometry's drift into it)."""
        self._points.clear()
        self._looked[:] = False
        self._marked = 0
        self._looked_since[:] = False
        self.marked_share = 0.0

    def mark(self):
        """Remember what is kept now, for :meth:`forget_marked`."""
        self._marked = len(self._points)
        self._looked_since[:] = False
        self.marked_share = self.looked_share()

    def forget_marked(self):
        """Forget the returns kept at the last :meth:`mark` and the headings looked at before
        it; keep what came since (a return since that fell in a square already kept was not
        kept, and is not there)."""
        for key in list(itertools.islice(self._points, self._marked)):
            del self._points[key]
        self._looked[:] = self._looked_since
        self._marked = 0
        self.marked_share = 0.0

    def add(self, xs, ys):
        """Keep returns at odometry-frame points ``xs``, ``ys`` (m; non-finite ones are
        dropped)."""
        xs, ys = np.asarray(xs, dtype=float).ravel(), np.asarray(ys, dtype=float).ravel()
        ok = np.isfinite(xs) & np.isfinite(ys)
        xs, ys = xs[ok], ys[ok]
        keys = zip(np.floor(xs / self.cell).astype(np.int64).tolist(),
                   np.floor(ys / self.cell).astype(np.int64).tolist())
        for key, x, y in zip(keys, xs.tolist(), ys.tolist()):
            self._points.setdefault(key, (x, y))

    def look(self, first, last):
        """Mark the headings between ``first`` and ``last`` (rad, odometry frame: one scan's
        first and last beam; a span of a full turn or more marks all) as looked at."""
        low, high = sorted((float(first), float(last)))
        if not (math.isfinite(low) and math.isfinite(high)):
            return
        bins = self._looked.size
        if high - low >= 2.0 * math.pi:
            self._looked[:] = self._looked_since[:] = True
            return
        steps = int(math.ceil((high - low) / LOOK_BIN)) + 1
        index = np.floor(np.linspace(low, high, steps) / LOOK_BIN).astype(int) % bins
        self._looked[index] = self._looked_since[index] = True

    def looked_round(self):
        """True when every heading has been looked at since the last :meth:`clear`."""
        return bool(self._looked.all())

    def looked_share(self):
        """The share (0 to 1) of the headings looked at since the last :meth:`clear`."""
        return float(self._looked.mean())

    def around(self, pose, max_range):
        """``(n, 2)`` returns within ``max_range`` (m) of odometry pose ``(x, y, yaw)``, in
        the robot's frame there."""
        if not self._points:
            return np.zeros((0, 2))
        points = np.array(list(self._points.values()), dtype=float)
        dx, dy = points[:, 0] - pose[0], points[:, 1] - pose[1]
        near = np.hypot(dx, dy) <= max_range
        c, s = math.cos(pose[2]), math.sin(pose[2])
        return np.stack([c * dx[near] + s * dy[near], -s * dx[near] + c * dy[near]], axis=1)


#: Why a match gave no fix (:meth:`PanoramaEpisodes.finished`).
NO_FIX_OVER = 'the lost episode is over'
NO_FIX_STATE = 'the robot is no longer LOST'
NO_FIX_SPENT = 'the fixes of this episode are spent'


class PanoramaEpisodes:
    """The node's rules for gathering and matching, without ROS (one instance per node; the
    caller holds a lock around every call).

    A lost episode starts when the state becomes ``LOST`` from anything but ``LOCALIZING``
    (a fix that amcl did not settle leaves the robot where it was), and ends with ``FLYING``
    (the robot is carried off), ``IDLE`` or ``NAVIGATING`` (localized): its returns are
    forgotten and its fixes counted from zero. Returns are gathered only in ``LOST`` and
    while fixes are left. After a full turn a match starts (one at a time: the returns
    gathered while it runs wait for the next), and the next match is of the next full turn.
    With ``partial_share`` a match also starts once that share of the headings has been
    looked at, and again after every ``partial_step`` more, until the turn is full (a turn
    that becomes full while a part's match runs waits for it); the returns of a part are
    kept for the next match unless it gave a fix, which forgets them (those gathered while
    its match ran are kept). A clock that jumps back by more than
    ``clock_jump`` s forgets the returns and ends the episode (a match of the old clock is
    dropped). Given the clock, a stamp that only looks like a jump back because it, or the
    newest before it, lay more than ``clock_jump`` s off the clock (a driver's stray stamp)
    ends nothing (:attr:`strays` counts them; one that far behind is not gathered,
    :attr:`skip`). The clock itself going back by more than ``clock_jump`` s, read with a
    stamp or when a match ends, ends the episode too, whatever the stamps say (a simulator
    reset or a looped bag, while scans of the old clock are still queued: those lie ahead
    of the new clock, so they are strays, not gathered, not the new episode's returns).

    Args:
        config: a validated :class:`PanoramaConfig`.
        clock_jump: see above (s).
    """

    def __init__(self, config, clock_jump=CLOCK_JUMP):
        """No state yet, no returns."""
        self.config = config
        self.clock_jump = float(clock_jump)
        self.panorama = Panorama(config.cell)
        self.state = None
        self.episode = 0
        self.fixes = 0
        self.busy = False
        self.strays = 0
        self.skip = False
        self._last_stamp = None
        self._last_ahead = 0.0
        self._clock = ClockWatch(self.clock_jump)

    def _new_episode(self):
        self.panorama.clear()
        self.episode += 1
        self.fixes = 0

    def on_state(self, state):
        """A new state (a :class:`lost_and_found.state.State`); the number of returns
        forgotten, or None when the episode goes on."""
        before, self.state = self.state, state
        if state == State.FLYING or state in LOCALIZED or (
                state == State.LOST and before not in (State.LOST, State.LOCALIZING)):
            forgotten = len(self.panorama)
            self._new_episode()
            return forgotten
        return None

    def gathering(self):
        """True when a scan's returns are wanted now."""
        return self.state == State.LOST and self.fixes < self.config.fixes

    def on_clock(self, now):
        """The clock read ``now`` (s; None or 0: unknown, as a simulated clock not yet
        started); how far (s) it went back since the latest reading when that is more than
        ``clock_jump`` (a new episode, and the stamps of the old clock forgotten), or None."""
        jumped = self._clock.read(now)
        if jumped is not None:
            self._new_episode()
            self._last_stamp, self._last_ahead = None, 0.0
        return jumped

    def on_stamp(self, stamp, now=None):
        """A scan's ``stamp`` (s), received at the clock's ``now`` (s; None or 0: unknown, as
        a simulated clock not yet started); how far (s) the clock jumped back, or None.

        The clock going back (:meth:`on_clock`) is a jump back; after it, a stamp more than
        ``clock_jump`` s ahead of the clock is of the old clock (a scan queued before the
        reset): a stray, not gathered (:attr:`skip`). A stamp more than ``clock_jump`` s
        behind the newest is a jump back unless, with the clock known, it lies that far
        behind the clock (a stray, not gathered: the newest stays) or the newest lay that far
        ahead of it when it came (a stray: this one is the newest now). Only such a pair is
        judged by the clock, so a clock read late, however late, never loses a scan while
        it has not gone back."""
        self.skip = False
        jumped = self.on_clock(now)
        known = now is not None and now > 0.0
        if known and self._clock.of_old_clock(stamp):
            self.strays += 1
            self.skip = True
            return jumped
        last = self._last_stamp
        if last is not None and stamp < last - self.clock_jump:
            behind = known and stamp < now - self.clock_jump
            if behind or (known and self._last_ahead > self.clock_jump):
                self.strays += 1
                if behind:
                    self.skip = True
                    return jumped
            else:
                self._new_episode()
                jumped = last - stamp
        self._last_stamp, self._last_ahead = stamp, stamp - now if known else 0.0
        return jumped

    def add_scan(self, episode, laser, base, angles, ranges, range_min, range_max):
        """One scan's returns; the match to start now, or None.

        Args:
            episode: :attr:`episode` when the scan's handling began (its transforms were
                looked up since): a scan of an episode that has ended is dropped.
            laser: ``(x, y, yaw, sense)`` of the laser in the odometry frame at the scan's
                stamp; ``sense`` -1 for a laser mounted upside down (its angles turn the
                other way).
            base: ``(x, y, yaw)`` of the robot in the odometry frame at the same stamp.
            angles, ranges: the beams used (rad in the laser's frame, m); a return is a
                finite range above 0 in ``[range_min, range_max)`` (a driver may report no
                return as ``range_max``).

        Returns:
            ``(episode, points, base, share)``: the returns within ``max_range`` of ``base``
            in its frame, to match, and the share of the headings they were looked for at
            (1 for a full turn, after which the panorama starts again); :attr:`busy` is set
            until :meth:`finished`.
        """
        if episode != self.episode or not self.gathering():
            return None
        angles = np.asarray(angles, dtype=float)
        ranges = np.asarray(ranges, dtype=float)
        # (a negative range_min must not let negative ranges through as mirrored points)
        ok = np.isfinite(ranges) & (ranges > 0.0) & (ranges >= range_min) & \
            (ranges < range_max)
        x, y, yaw, sense = laser
        beams = yaw + sense * angles
        self.panorama.add(x + ranges[ok] * np.cos(beams[ok]),
                          y + ranges[ok] * np.sin(beams[ok]))
        if angles.size:
            self.panorama.look(beams[0], beams[-1])
        if self.busy:
            return None
        share, config = self.panorama.looked_share(), self.config
        # a part is due from partial_share on, then after every partial_step more; the mark
        # of the last part matched (none: 0) says how much it had
        last = self.panorama.marked_share
        part_due = 0.0 < config.partial_share <= share and (
            last == 0.0 or share >= last + config.partial_step - 1e-9)
        if share < 1.0 and not part_due:
            return None
        points = self.panorama.around(base, config.max_range)
        if share < 1.0:
            self.panorama.mark()        # the running match is of a part
        else:
            self.panorama.clear()
        self.busy = True
        return self.episode, points, tuple(base), share

    def finished(self, episode, match, now=None):
        """A match of ``episode`` is over (``match`` None: too few returns, or it failed) at
        the clock's ``now`` (s; None: unread): whether it is a fix to publish now, and if not,
        why (None: no match). A clock gone back since ends the episode (:meth:`on_clock`)."""
        self.busy = False
        self.on_clock(now)
        if match is None:
            return False, None
        if not match.alone:
            return False, '%d rival candidates score within %.0f %% of it' % (
                match.rivals, 100.0 * (1.0 - self.config.keep))
        if match.score < self.config.min_score:
            return False, 'its score is below min_score %.2f' % self.config.min_score
        if episode != self.episode:
            return False, NO_FIX_OVER
        if self.state != State.LOST:
            return False, NO_FIX_STATE
        if self.fixes >= self.config.fixes:
            return False, NO_FIX_SPENT
        self.fixes += 1
        if self.panorama.marked_share:
            # a part's returns gave their fix; those gathered since wait for the next
            self.panorama.forget_marked()
        return True, None


def fft_backend():
    """``(module, next_fast_len)`` for the first search's FFTs: ``scipy.fft`` (SciPy 1.4 and
    later, which keeps float32 input in single precision) or, on an older SciPy (Ubuntu 20.04,
    Noetic's platform, ships 1.3, whose ``scipy.fft`` is a function, not the module),
    ``numpy.fft`` with 5-smooth lengths: the same sums, in double precision."""
    try:
        from scipy import fft
        fast = fft.next_fast_len
    except (ImportError, AttributeError):
        return np.fft, smooth_length
    return fft, lambda n: fast(n, real=True)


def smooth_length(n):
    """The smallest length >= ``n`` (and >= 1) with no prime factor above 5, which numpy's FFT
    does fast."""
    n = max(1, int(n))
    while True:
        rest = n
        for prime in (2, 3, 5):
            while rest % prime == 0:
                rest //= prime
        if rest == 1:
            return n
        n += 1


class _Level:
    """One resolution of the search: the map's likelihood field on a grid of ``factor`` map
    cells, and the squares whose centre is a place.

    Args:
        distance_map: the map.
        factor: map cells per side of a square.
        sigma: the likelihood field's width (m).
        fine_places: the places of the map's own cells; a square is a place when any of
            its cells is.
        margin: squares of 0 around the field in :attr:`padded` (returns off the grid score
            0 there without a test of every index).
    """

    def __init__(self, distance_map, factor, sigma, fine_places, margin=0):
        """Pool the occupied cells and the places into squares; the field of the squares."""
        from scipy import ndimage
        rows, cols = distance_map.shape
        self.cell = distance_map.resolution * factor
        self.shape = (-(-rows // factor), -(-cols // factor))
        pad = ((0, self.shape[0] * factor - rows), (0, self.shape[1] * factor - cols))

        def pool(mask):
            return np.pad(mask, pad).reshape(self.shape[0], factor, self.shape[1],
                                             factor).any(axis=(1, 3))
        occupied = pool(distance_map.field <= 0.0)
        distance = ndimage.distance_transform_edt(~occupied) * self.cell
        self.margin = margin
        self.padded = np.pad(np.exp(-0.5 * (distance / sigma) ** 2), margin)
        self.field = self.padded[margin:margin + self.shape[0], margin:margin + self.shape[1]]
        self.places = pool(fine_places)


class PanoramaMatcher:
    """Every place of a map, at every heading, scored against a panorama.

    The search runs twice: over the whole map on squares of ``COARSE`` times ``cell``, at
    every second heading and ``COARSE`` times ``sigma`` (by FFT correlation); then around the
    best place of each ``BLOCK`` square at each heading that scored at least ``COARSE_KEEP``
    of the best there (:data:`MAX_CANDIDATES` at most), directly, with ``sigma`` on the
    ``cell`` grid, at offsets of half a ``cell`` up to one ``cell`` each way and at the two
    headings on each side. The best place and its rivals are those of the second search.

    Args:
        distance_map: the map, a :class:`lost_and_found.core.scan_agreement.DistanceMap`
            (its ``field`` is 0 on occupied cells; ``free`` its known-free cells).
        config: a validated :class:`PanoramaConfig`.

    Raises:
        ValueError: a map with no occupied cell, none the robot fits in, more than
            :data:`MAX_CELLS` cells of ``cell``, or more places and headings than
            :data:`MAX_SCORE_BYTES` of scores hold.
    """

    def __init__(self, distance_map, config):
        """Both levels, the coarse field's FFT, and the places."""
        self._fft, fast_len = fft_backend()
        self.distance_map = distance_map
        self.config = config
        res = distance_map.resolution
        factor = max(1, int(round(config.cell / res)))
        rows, cols = distance_map.shape
        if -(-rows // factor) * -(-cols // factor) > MAX_CELLS:
            raise ValueError('the map has %d x %d cells of %.2f m, more than the %d the '
                             'panorama fix is made for' % (-(-cols // factor),
                                                           -(-rows // factor),
                                                           res * factor, MAX_CELLS))
        if not (distance_map.field <= 0.0).any():
            raise ValueError('the map has no occupied cell to match returns against')
        free = distance_map.free if distance_map.free is not None else \
            distance_map.field > 0.0
        places = free & (distance_map.field >= config.clearance) & (distance_map.field > 0.0)
        if not places.any():
            raise ValueError('no known-free cell of the map is %.2f m from every obstacle'
                             % config.clearance)
        # the fine grid's margin holds every return of a candidate's poses (see _refine)
        margin = int(math.ceil(config.max_range / (res * factor))) + COARSE + 2
        self.fine = _Level(distance_map, factor, config.sigma, places, margin)
        self.coarse = _Level(distance_map, factor * COARSE, config.sigma * COARSE, places)
        self.cell = self.fine.cell
        self.headings = 2.0 * math.pi * np.arange(config.headings) / config.headings
        self.coarse_headings = self.headings[::2]
        # refused before the FFT is made: a match keeps a score per coarse place and heading
        coarse_places = int(self.coarse.places.sum())
        score_bytes = 4 * coarse_places * len(self.coarse_headings)
        if score_bytes > MAX_SCORE_BYTES:
            raise ValueError('%d headings at the %d places of this map need %.0f MB of scores '
                             'a match, more than the %.0f MB the panorama fix is made for: '
                             'fewer headings' % (config.headings, coarse_places,
                                                 score_bytes / 1e6, MAX_SCORE_BYTES / 1e6))
        self.reach = int(math.ceil(config.max_range / self.coarse.cell)) + 1
        size = 2 * self.reach + 1
        self._shape = (fast_len(self.coarse.shape[0] + size - 1),
                       fast_len(self.coarse.shape[1] + size - 1))
        self._field_fft = self._fft.rfft2(self.coarse.field.astype(np.float32), s=self._shape)
        # the coarse places, and the BLOCK square each lies in
        self._place_cells = np.nonzero(self.coarse.places)
        block = max(1, int(round(BLOCK / self.coarse.cell)))
        self._place_blocks = (self._place_cells[0] // block) * (
            -(-self.coarse.shape[1] // block)) + self._place_cells[1] // block
        # where each coarse place's score lies in a correlation of the FFT's shape
        self._place_flat = ((self._place_cells[0] + self.reach) * self._shape[1]
                            + self._place_cells[1] + self.reach)

    @property
    def places(self):
        """Bool grid of the squares of ``cell`` the robot may stand at."""
        return self.fine.places

    def usable(self, points):
        """The returns of ``points`` (``(n, 2)`` in the robot's frame, m) that :meth:`match`
        uses: finite and within ``max_range``."""
        points = np.asarray(points, dtype=float).reshape(-1, 2)
        return points[np.all(np.isfinite(points), axis=1) &
                      (np.hypot(points[:, 0], points[:, 1]) <= self.config.max_range)]

    def match(self, points):
        """The :class:`PanoramaMatch` of ``points`` (``(n, 2)`` returns in the robot's frame,
        m; non-finite ones and those beyond ``max_range`` are dropped), or None with fewer
        than ``min_points`` or when no place scores above 0."""
        config = self.config
        points = self.usable(points)
        if len(points) < config.min_points:
            return None
        candidates = self._coarse_candidates(points)
        if not candidates:
            return None
        best = self._refine(candidates, points)
        best.sort(reverse=True)
        top, gx, gy, gyaw = best[0]
        rivals = sum(
            1 for score, x, y, yaw in best[1:] if score >= config.keep * top and (
                math.hypot(x - gx, y - gy) > config.alone_xy or
                abs(math.remainder(yaw - gyaw, 2.0 * math.pi)) > config.alone_yaw))
        return PanoramaMatch(pose=self._map_pose(gx, gy, gyaw), score=top, alone=rivals == 0,
                             rivals=rivals, points=len(points))

    def score(self, pose, points):
        """The score of ``points`` (``(n, 2)`` returns in the robot's frame, m, finite) with
        the robot at ``pose`` (``(x, y, yaw)`` in the map frame): the mean of the ``cell``
        grid's field under them, 0 for a return off the grid; any pose, a place or not."""
        return float(self.scores_at(np.asarray([pose], dtype=float), points)[0])

    def scores_at(self, poses, points):
        """:meth:`score` at each of ``poses`` (``(m, 3)``, map frame): an ``(m,)`` array."""
        points = np.asarray(points, dtype=float).reshape(-1, 2)
        poses = np.asarray(poses, dtype=float).reshape(-1, 3)
        if not len(points):
            return np.zeros(len(poses))
        x0, y0, yaw0 = self.distance_map.origin
        c, s = math.cos(yaw0), math.sin(yaw0)
        dx, dy = poses[:, 0] - x0, poses[:, 1] - y0
        gx, gy, gyaw = c * dx + s * dy, -s * dx + c * dy, poses[:, 2] - yaw0
        level = self.fine
        c, s = np.cos(gyaw)[:, None], np.sin(gyaw)[:, None]
        rows = np.floor((gy[:, None] + s * points[:, 0] + c * points[:, 1])
                        / level.cell).astype(np.int64)
        cols = np.floor((gx[:, None] + c * points[:, 0] - s * points[:, 1])
                        / level.cell).astype(np.int64)
        inside = (rows >= 0) & (rows < level.shape[0]) & (cols >= 0) & (cols < level.shape[1])
        values = np.where(inside, level.field[np.where(inside, rows, 0),
                                              np.where(inside, cols, 0)], 0.0)
        return values.mean(axis=1)

    def _refine(self, candidates, points):
        """``[(score, x, y, yaw)]``, grid frame: the best pose around each of ``candidates``
        (``[(row, col, k)]`` as :meth:`_coarse_candidates` gives them), in their order.

        Around a candidate (the centre of a coarse square, at an even heading of
        ``headings``): the squares of ``cell`` at offsets of half a ``cell`` up to
        ``COARSE / 2`` cells each way, at the two headings on each side. A candidate's
        centre lies on a corner of the ``cell`` grid (``COARSE`` is even), so a return at
        ``u`` cells (along one axis, rotated to a heading) from a pose ``j`` half cells from
        the centre falls ``j // 2 + floor(u + (j % 2) / 2)`` cells from it: each return's
        cell for every pose is an integer offset, taken once per heading and half-cell
        parity, and the score of a pose the mean of the padded field at those cells. (A
        return exactly on an edge of a square may fall in the other square than
        :meth:`scores_at`'s floating point puts it in.)
        """
        level, config = self.fine, self.config
        margin, width = level.margin, level.padded.shape[1]
        flat = level.padded.ravel()
        count = len(self.headings)
        # the poses around a candidate: x offset, then y, then heading (as np.meshgrid 'ij')
        js = np.arange(-COARSE, COARSE + 1)
        turns = np.arange(-2, 3)
        jx, jy, dk = (a.ravel() for a in np.meshgrid(js, js, turns, indexing='ij'))
        shift = (jy // 2) * width + jx // 2
        steps = js * self.cell / 2.0
        step = 2.0 * math.pi / config.headings
        half = np.array([0.0, 0.5])
        best = [None] * len(candidates)
        k_now, around = None, None
        # one coarse heading at a time (its five headings' offsets, then its candidates)
        for i in sorted(range(len(candidates)), key=lambda i: candidates[i][2]):
            row, col, k = candidates[i]
            if k != k_now:
                k_now = k
                angles = self.headings[(2 * k + turns) % count]
                c, s = np.cos(angles)[:, None], np.sin(angles)[:, None]
                u = (c * points[:, 0] - s * points[:, 1]) / level.cell      # (5, returns)
                v = (s * points[:, 0] + c * points[:, 1]) / level.cell
                # cell offset of each return: [heading, row parity, column parity, return]
                offsets = (np.floor(v[:, None, None, :] + half[None, :, None, None])
                           .astype(np.int64) * width
                           + np.floor(u[:, None, None, :] + half[None, None, :, None])
                           .astype(np.int64))
                around = shift[:, None] + offsets[dk + 2, jy % 2, jx % 2]
            base_row, base_col = COARSE * row + COARSE // 2, COARSE * col + COARSE // 2
            scores = flat[(base_row + margin) * width + base_col + margin
                          + around].mean(axis=1)
            # a pose is on a place when the square its coordinates fall in is one (on a
            # corner of the grid, the rounding of its coordinates picks the square)
            xs = (col + 0.5) * self.coarse.cell + steps[jx + COARSE]
            ys = (row + 0.5) * self.coarse.cell + steps[jy + COARSE]
            r = np.floor(ys / level.cell).astype(np.int64)
            q = np.floor(xs / level.cell).astype(np.int64)
            on = (r >= 0) & (r < level.shape[0]) & (q >= 0) & (q < level.shape[1])
            on[on] = level.places[r[on], q[on]]
            scores = np.where(on, scores, -1.0)
            m = int(np.argmax(scores))
            best[i] = (float(scores[m]), float(xs[m]), float(ys[m]),
                       float(self.coarse_headings[k] + dk[m] * step))
        return best

    def _coarse_candidates(self, points):
        """``[(row, col, k)]``: the coarse square and the coarse heading (its index in
        ``coarse_headings``) of the best place of each ``BLOCK`` square at each coarse
        heading scoring at least ``COARSE_KEEP`` of the best, best first."""
        fft = self._fft
        level, reach = self.coarse, self.reach
        rows, cols = self._place_cells
        size = 2 * reach + 1
        scores = np.empty((len(self.coarse_headings), rows.size), dtype=np.float32)
        for k, heading in enumerate(self.coarse_headings):
            c, s = math.cos(heading), math.sin(heading)
            px = c * points[:, 0] - s * points[:, 1]
            py = s * points[:, 0] + c * points[:, 1]
            # flipped: the correlation is a convolution with the mirrored kernel
            kernel = np.bincount((reach - np.round(py / level.cell).astype(np.int64)) * size
                                 + reach - np.round(px / level.cell).astype(np.int64),
                                 minlength=size * size).reshape(size, size).astype(np.float32)
            # rfft2 of the kernel padded to the FFT's shape, its zero rows skipped
            spectrum = fft.fft(fft.rfft(kernel, n=self._shape[1], axis=1), n=self._shape[0],
                               axis=0)
            full = fft.irfft2(self._field_fft * spectrum, s=self._shape)
            scores[k] = full.ravel()[self._place_flat]
        if scores.max() <= 0.0:
            return []       # no return near any mapped obstacle from any place
        ks, js = np.nonzero(scores >= COARSE_KEEP * scores.max())
        values = scores[ks, js]
        group = ks * (int(self._place_blocks.max()) + 1) + self._place_blocks[js]
        order = np.lexsort((-values, group))
        first = order[np.r_[True, group[order][1:] != group[order][:-1]]]
        first = first[np.argsort(-values[first], kind='stable')][:MAX_CANDIDATES]
        return [(int(rows[j]), int(cols[j]), int(k)) for k, j in zip(ks[first], js[first])]

    def _map_pose(self, gx, gy, gyaw):
        """Map-frame ``(x, y, yaw)`` of a pose in the grid's frame (m, rad)."""
        x0, y0, yaw0 = self.distance_map.origin
        c, s = math.cos(yaw0), math.sin(yaw0)
        return (x0 + c * gx - s * gy, y0 + s * gx + c * gy,
                math.remainder(gyaw + yaw0, 2.0 * math.pi))
