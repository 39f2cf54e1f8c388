"""The kidnap demo's bookkeeping: timeline, decisions, figures and the plot (pure).

:class:`DemoScenario` is fed what the ``demo_scenario`` node observes, as plain values with the
sim time passed in (ground truth, amcl estimates, robot state, localization tier, lost detector
status, ``initialpose`` messages, move_base goals, wheel drops, the saved goal) and records a
:class:`Entry` in its timeline for every event. :meth:`DemoScenario.step` decides what the node
must do next: call the kidnap service once the robot has covered ``kidnap_fraction`` of the
straight-line distance to the goal, and end the demo with an :class:`Outcome` when, after the
robot was put down and found again, the package ends its errand (``NAVIGATING`` -> ``IDLE``)
with the ground truth within ``goal_tolerance`` of the goal (success: where the robot
stopped) or when ``time_budget`` is spent (failure, with what was missing).

Figures (sim seconds, all measured from the put-down, when both wheels touch the ground):
time lost (until the state is localized again), time to re-localize (until the first fiducial
fix on ``initialpose``) and time to goal (until the errand ends at the goal).

:func:`plot_demo` draws the map, the true and estimated paths, the lift and put-down points,
the fiducial fixes, the search legs and the goal into a PNG with matplotlib's Agg canvas (no
display needed). No ROS, no clock reads.
"""
import dataclasses
import enum
import logging
import math
import textwrap

import numpy as np

from lost_and_found.core.config import Checker

_log = logging.getLogger('rosout')

#: Robot states in which the robot knows where it is (state.py LOCALIZED, by name).
LOCALIZED_STATES = frozenset({'IDLE', 'NAVIGATING'})
#: A goal within this distance (m) of the demo goal is the demo goal (a resend of it).
SAME_GOAL = 0.05
#: A ground-truth or estimate step longer than this (m) is a jump (teleport, re-seed): the
#: recorded path is broken there instead of drawing a line across the map.
JUMP = 1.0
#: Paths are thinned: a point is kept when it is this far (m) from the last kept one.
PATH_STEP = 0.05
#: Inputs stamped this much (s) before the latest one are dropped (the clock went back).
BACKWARDS = 0.5
#: Seconds (sim) between two warnings about the same kind of bad input.
WARN_PERIOD = 10.0


def _pose_ok(value, allow_empty=False):
    """True when ``value`` is a tuple of 3 finite numbers (or empty when allowed)."""
    if allow_empty and value == ():
        return True
    return (isinstance(value, tuple) and len(value) == 3
            and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                    and math.isfinite(v) for v in value))


@dataclasses.dataclass(frozen=True)
class DemoConfig:
    """Parameters of the demo_scenario node.

    Attributes:
        map_file: map_server YAML of the map (drawn in the figure).
        fiducial_map: fiducial map YAML (tags drawn in the figure); '' for a map without tags:
            none drawn, and the demo does not wait for ``fiducial_node``.
        output_dir: where kidnap_demo.png, kidnap_demo.bag and result.json are written.
        start_pose: the robot's start pose [x, y, yaw] (m, m, rad), for the figure; () none.
        goal: the demo goal G [x, y, yaw] sent through move_base (required).
        kidnap_pose: where the robot is put down [x, y, yaw] (required).
        kidnap_fraction: the robot is lifted once it has covered this fraction of the
            straight-line distance from where the goal was sent to the goal, in (0, 1).
        kidnap_hold: seconds (sim) the robot is held in the air, > 0.
        goal_tolerance: the goal is reached when the ground truth is this close (m): the
            navigator's xy_tolerance (0.2) plus 0.2 for the estimate's error, as the recovery
            benchmark and the lift-kidnap rostest count it.
        time_budget: sim seconds from sending the goal until the demo is declared failed.
        ready_timeout: wall seconds to wait for the simulator and the package to come up.
        map_frame: frame of the goal and the poses.
        fiducial_node: name of the node whose ``initialpose`` messages are fiducial fixes.
        found_error: the estimate is back on the truth when its error is below this (m)...
        lost_error: ...and off when above this (m); between the two nothing changes.
        write_bag: record a rosbag of the observed messages.
    """

    map_file: str = ''
    fiducial_map: str = ''
    output_dir: str = 'demo'
    start_pose: tuple = ()
    goal: tuple = ()
    kidnap_pose: tuple = ()
    kidnap_fraction: float = 0.5
    kidnap_hold: float = 3.0
    goal_tolerance: float = 0.4
    time_budget: float = 600.0
    ready_timeout: float = 60.0
    map_frame: str = 'map'
    fiducial_node: str = 'fiducial_localizer'
    found_error: float = 0.45
    lost_error: float = 1.0
    write_bag: bool = True

    def validate(self):
        """Raise ConfigError naming every bad value."""
        check = Checker(self)
        check.non_empty('map_file')
        check.require(isinstance(self.fiducial_map, str), 'fiducial_map', 'be a string')
        check.non_empty('output_dir')
        check.require(_pose_ok(self.start_pose, allow_empty=True), 'start_pose',
                      'be [] or [x, y, yaw] of finite numbers')
        check.require(_pose_ok(self.goal), 'goal', 'be [x, y, yaw] of finite numbers')
        check.require(_pose_ok(self.kidnap_pose), 'kidnap_pose',
                      'be [x, y, yaw] of finite numbers')
        check.in_range('kidnap_fraction', 0.0, 1.0, low_open=True, high_open=True)
        check.positive('kidnap_hold')
        check.positive('goal_tolerance')
        check.positive('time_budget')
        check.positive('ready_timeout')
        check.non_empty('map_frame')
        check.non_empty('fiducial_node')
        check.positive('found_error')
        check.require(isinstance(self.lost_error, float) and math.isfinite(self.lost_error)
                      and self.lost_error > self.found_error, 'lost_error',
                      'be a number > found_error (%r)' % (self.found_error,))
        check.done()


@dataclasses.dataclass(frozen=True)
class Entry:
    """One timeline line: sim time, robot state and tier at that moment, what happened."""

    t: float
    state: str
    tier: object
    event: str

    def format(self):
        """The printed line: ``[  t sim s] state tier event``."""
        tier = '-' if self.tier is None else str(self.tier)
        return '[%7.1f sim s] %-10s %s  %s' % (self.t, self.state or '-', tier, self.event)


@dataclasses.dataclass(frozen=True)
class Outcome:
    """How the demo ended: ``success``, a one-line ``reason``, at sim time ``t``."""

    success: bool
    reason: str
    t: float


class Phase(enum.Enum):
    """Where the demo is."""

    WAITING = 'waiting'          # goal not sent yet
    DRIVING = 'driving'          # goal sent, not yet half way
    KIDNAPPING = 'kidnapping'    # kidnap requested, not yet put down
    RECOVERING = 'recovering'    # put down: waiting to be found and to reach the goal
    DONE = 'done'


class Step(enum.Enum):
    """What :meth:`DemoScenario.step` asks the node to do."""

    NOTHING = 'nothing'
    KIDNAP = 'kidnap'
    FINISH = 'finish'


def _distance(a, b):
    return math.hypot(a[0] - b[0], a[1] - b[1])


class _Path:
    """A thinned 2D path (t, x, y) with NaN breaks at jumps."""

    def __init__(self):
        self.points = []
        self._last = None

    def add(self, t, x, y):
        """Append a point unless it is within PATH_STEP of the last one."""
        if self._last is not None:
            step = _distance(self._last, (x, y))
            if step < PATH_STEP:
                return
            if step > JUMP:
                self.points.append((t, math.nan, math.nan))
        self.points.append((t, x, y))
        self._last = (x, y)

    def array(self):
        """The points as an (n, 3) array."""
        return np.array(self.points, dtype=float).reshape(-1, 3)


class DemoScenario:
    """Decisions and records of one kidnap demo run (see the module docstring).

    Attributes:
        config: the validated :class:`DemoConfig`.
        phase: the current :class:`Phase`.
        timeline: list of :class:`Entry`, in the order they were recorded.
        outcome: the :class:`Outcome` once the demo ended, else None.
        lift: (x, y) of the ground truth when the robot was lifted, or None.
        put_down: (x, y) where it was put down, or None.
        fixes: list of (t, x, y, yaw) fiducial fixes seen on ``initialpose``.
        reseeds: list of (t, x, y, yaw) other ``initialpose`` messages.
        legs: list of (t, x, y) move_base goals other than the demo goal (search legs).
    """

    def __init__(self, config):
        """Start in WAITING with an empty timeline."""
        # ROS parameters may give integers inside the pose lists: make every pose float.
        self.config = dataclasses.replace(config, **{
            key: tuple(float(v) for v in getattr(config, key))
            for key in ('start_pose', 'goal', 'kidnap_pose')})
        self.phase = Phase.WAITING
        self.timeline = []
        self.outcome = None
        self.lift = None
        self.put_down = None
        self.fixes = []
        self.reseeds = []
        self.legs = []
        self._true = _Path()
        self._estimate = _Path()
        self._truth = None           # latest (t, x, y, yaw)
        self._origin = None          # ground truth when the goal was sent
        self._state = None
        self._tier = None
        self._detector = None
        self._saved = None
        self._dropped = set()
        self._estimate_off = None
        self._last_t = -math.inf
        self._warned = {}
        self._fix_run = None         # after a fix line: (fixes not printed, t, state, tier)
        self._times = {}

    # ------------------------------------------------------------------ bookkeeping

    def _event(self, t, text, fix=False):
        """Append a timeline entry. Fiducial fixes repeat every second while the robot sees a
        tag: after the first of a run only the count is kept, in one summary line written
        before the next other event."""
        if fix and self._fix_run is not None:
            self._fix_run = (self._fix_run[0] + 1, float(t), self._state, self._tier)
            return None
        if self._fix_run is not None:
            count, last, state, tier = self._fix_run
            self._fix_run = None
            if count:
                self.timeline.append(Entry(last, state, tier,
                                           '%d more fiducial fixes, the last at %.1f s'
                                           % (count, last)))
        entry = Entry(float(t), self._state, self._tier, text)
        self.timeline.append(entry)
        if fix:
            self._fix_run = (0, float(t), self._state, self._tier)
        return entry

    def _warn(self, key, text, *args):
        """Warn at most once per WARN_PERIOD (sim s) per ``key``."""
        now = self._last_t
        if now - self._warned.get(key, -math.inf) >= WARN_PERIOD or now < self._warned[key]:
            self._warned[key] = now
            _log.warning('demo_scenario: ' + text, *args)

    def _accept_time(self, t, what):
        """False (and a throttled warning) for a non-finite time or one that went back."""
        try:
            t = float(t)
        except (TypeError, ValueError):
            t = math.nan
        if not math.isfinite(t):
            self._warn('time', '%s with time %r ignored', what, t)
            return False
        # Callbacks run in several threads: a few ms out of order is normal, a clock that
        # went back by more (a simulator reset) makes the input meaningless.
        if t < self._last_t - BACKWARDS:
            self._warn('backwards', '%s at %.2f s ignored: sim time went back from %.2f s',
                       what, t, self._last_t)
            return False
        self._last_t = max(self._last_t, t)
        return True

    def _finite(self, what, *values):
        """True when every value is a finite number, else False and a throttled warning."""
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
               for v in values):
            return True
        self._warn('finite', '%s with non-finite values %r ignored', what, values)
        return False

    @property
    def times(self):
        """Sim times of the milestones: goal_sent, kidnap_requested, lifted, put_down,
        first_fix, recovered, resumed, goal_reached (only those that happened)."""
        return dict(self._times)

    @property
    def goal(self):
        """The demo goal (x, y, yaw)."""
        return self.config.goal

    def entries_since(self, index):
        """Timeline entries from position ``index`` on (for printing as they come)."""
        return self.timeline[index:]

    # ------------------------------------------------------------------ inputs

    def goal_sent(self, t):
        """The demo goal was sent to move_base at ``t``; needs a ground truth first."""
        if not self._accept_time(t, 'goal sent'):
            return
        self._origin = self._truth[1:3] if self._truth else None
        self._times['goal_sent'] = t
        self.phase = Phase.DRIVING
        gx, gy, _ = self.goal
        self._event(t, 'goal G (%.2f, %.2f) sent to move_base' % (gx, gy))

    def on_ground_truth(self, t, x, y, yaw):
        """A true pose of the robot."""
        if not (self._accept_time(t, 'ground truth')
                and self._finite('ground truth', x, y, yaw)):
            return
        self._truth = (t, x, y, yaw)
        self._true.add(t, x, y)

    def on_estimate(self, t, x, y, yaw):
        """An amcl pose; logs when its error against the ground truth crosses the bounds."""
        if not (self._accept_time(t, 'estimate') and self._finite('estimate', x, y, yaw)):
            return
        self._estimate.add(t, x, y)
        if self._truth is None:
            return
        error = _distance(self._truth[1:3], (x, y))
        if self._estimate_off is not True and error > self.config.lost_error:
            self._estimate_off = True
            self._event(t, 'amcl estimate is %.2f m off the truth' % error)
        elif self._estimate_off is not False and error < self.config.found_error:
            if self._estimate_off is True:
                self._event(t, 'amcl estimate back on the truth (%.2f m)' % error)
            self._estimate_off = False

    def on_state(self, t, state):
        """The robot state published by lost_service."""
        if not self._accept_time(t, 'state') or state == self._state:
            return
        previous, self._state = self._state, state
        self._event(t, 'state %s -> %s' % (previous or '?', state))
        if previous == 'FLYING' and 'lifted' in self._times:
            self._mark_put_down(t)
        if previous == 'NAVIGATING' and state == 'IDLE' and 'recovered' in self._times:
            self._times['errand_ended'] = t
        if state in LOCALIZED_STATES and 'put_down' in self._times and \
                'recovered' not in self._times:
            self._times['recovered'] = t
            self._event(t, 'localized again %.1f s after the put-down'
                        % (t - self._times['put_down']))

    def on_status(self, t, tier, status):
        """A lost_service LocalizationStatus (tier number and name)."""
        if not self._accept_time(t, 'status') or tier == self._tier:
            return
        self._tier = tier
        self._event(t, 'status %s' % status)

    def on_detector(self, t, status):
        """A lost_detector status string (normal / confused / lost)."""
        if not self._accept_time(t, 'detector') or status == self._detector:
            return
        self._detector = status
        self._event(t, 'lost_detector: %s' % status)

    def on_initialpose(self, t, x, y, yaw, sigma_xy, sender):
        """An ``initialpose`` message from node ``sender`` (e.g. '/fiducial_localizer')."""
        if not (self._accept_time(t, 'initialpose')
                and self._finite('initialpose', x, y, yaw)):
            return
        fiducial = str(sender).rstrip('/').split('/')[-1] == self.config.fiducial_node
        record = (t, x, y, yaw)
        error = ''
        if self._truth is not None:
            error = ', %.2f m from the truth' % _distance(self._truth[1:3], (x, y))
        if fiducial:
            self.fixes.append(record)
            self._event(t, 'fiducial fix on initialpose (%.2f, %.2f)%s' % (x, y, error),
                        fix=True)
            if 'put_down' in self._times and 'first_fix' not in self._times:
                self._times['first_fix'] = t
        else:
            self.reseeds.append(record)
            self._event(t, 'initialpose from %s (%.2f, %.2f) sigma %.2f m%s'
                        % (sender or '?', x, y, sigma_xy, error))

    def on_saved_goal(self, t, present, x=0.0, y=0.0):
        """The recovery node's saved goal (``present`` False: none saved)."""
        if not self._accept_time(t, 'saved goal'):
            return
        saved = (round(x, 2), round(y, 2)) if present else None
        if saved == self._saved:
            return
        self._saved = saved
        self._event(t, 'saved goal (%.2f, %.2f)' % (x, y) if present else 'saved goal cleared')

    def on_goal(self, t, x, y):
        """A move_base goal seen on ``move_base/goal`` (ours, a resend, or a search leg)."""
        if not (self._accept_time(t, 'goal') and self._finite('goal', x, y)):
            return
        if _distance(self.goal, (x, y)) <= SAME_GOAL:
            if 'put_down' in self._times:
                self._times.setdefault('resumed', t)
                self._event(t, 'goal G re-sent to move_base (resume)')
            return
        self.legs.append((t, x, y))
        self._event(t, 'search leg %d to (%.2f, %.2f)' % (len(self.legs), x, y))

    def on_wheel_drop(self, t, wheel, dropped):
        """A Kobuki wheel-drop edge: ``wheel`` 0 left / 1 right, ``dropped`` True / False."""
        if not self._accept_time(t, 'wheel drop'):
            return
        if dropped:
            self._dropped.add(wheel)
        else:
            self._dropped.discard(wheel)
        if len(self._dropped) == 2 and 'lifted' not in self._times:
            self._times['lifted'] = t
            self.lift = self._truth[1:3] if self._truth else None
            where = ' at (%.2f, %.2f)' % self.lift if self.lift else ''
            self._event(t, 'lifted (both wheels dropped)%s' % where)
        elif not self._dropped and 'lifted' in self._times:
            self._mark_put_down(t)

    def _mark_put_down(self, t):
        if 'put_down' in self._times:
            return
        self._times['put_down'] = t
        self.phase = Phase.RECOVERING
        x, y, _ = self.config.kidnap_pose
        self.put_down = (x, y)
        self._event(t, 'put down at (%.2f, %.2f)' % (x, y))

    def kidnap_requested(self, t):
        """The node is calling the kidnap service (``step`` calls this when it is due)."""
        self._times['kidnap_requested'] = t
        self.phase = Phase.KIDNAPPING
        x, y, _ = self.config.kidnap_pose
        self._event(t, 'half way: kidnap to (%.2f, %.2f), hold %.1f s' % (
            x, y, self.config.kidnap_hold))

    def kidnap_result(self, t, success, message, pose=None):
        """The kidnap service answered; a refusal ends the demo (failure)."""
        if success:
            if pose is not None:
                self.config = dataclasses.replace(self.config, kidnap_pose=tuple(pose))
            return
        self._finish(t, False, 'the kidnap service failed: %s' % message)

    # ------------------------------------------------------------------ decisions

    def _finish(self, t, success, reason):
        if self.outcome is None:
            self.outcome = Outcome(success, reason, t)
            self.phase = Phase.DONE
            self._event(t, ('SUCCESS: ' if success else 'FAILURE: ') + reason)

    def step(self, t):
        """What to do at sim time ``t``: a :class:`Step`."""
        if self.phase == Phase.DONE:
            return Step.FINISH
        if self.phase == Phase.WAITING or self._truth is None:
            return Step.NOTHING
        truth = self._truth[1:3]
        to_goal = _distance(truth, self.goal)
        if self.phase == Phase.DRIVING:
            origin = self._origin or truth
            if self._origin is None:
                self._origin = truth
            if to_goal <= (1.0 - self.config.kidnap_fraction) * _distance(origin, self.goal):
                self.kidnap_requested(t)
                return Step.KIDNAP
        elif self.phase == Phase.RECOVERING and 'errand_ended' in self._times and \
                self._state == 'IDLE' and to_goal <= self.config.goal_tolerance:
            self._times['goal_reached'] = t
            self._finish(t, True, 'goal reached: the robot stopped %.2f m from G, %.1f s '
                         'after the put-down' % (to_goal, t - self._times['put_down']))
            return Step.FINISH
        if t - self._times['goal_sent'] > self.config.time_budget:
            self._finish(t, False, 'time budget of %.0f sim s spent: %s' % (
                self.config.time_budget, self._missing()))
            return Step.FINISH
        return Step.NOTHING

    def give_up(self, t, reason):
        """End the demo as failed for a reason found by the node (e.g. a node died)."""
        self._finish(t, False, reason)

    def _missing(self):
        """What had not happened when the budget ran out."""
        times = self._times
        if self.phase == Phase.DRIVING:
            return 'the robot never got half way to G'
        if 'lifted' not in times:
            return 'the robot was never lifted'
        if 'put_down' not in times:
            return 'the robot was never put down'
        if 'recovered' not in times:
            return 'still not localized (state %s, %d fiducial fixes)' % (
                self._state, len(self.fixes))
        return 'localized but G not reached (ground truth %.2f m from G, %s)' % (
            _distance(self._truth[1:3], self.goal),
            'the errand ended' if 'errand_ended' in times else 'the errand not ended')

    # ------------------------------------------------------------------ outputs

    def figures(self):
        """The demo's figures in sim seconds (None for what did not happen)."""
        times = self._times

        def since_put_down(key):
            if 'put_down' in times and key in times:
                return round(times[key] - times['put_down'], 3)
            return None

        lift_to_put_down = None
        if self.lift is not None and self.put_down is not None:
            lift_to_put_down = round(_distance(self.lift, self.put_down), 3)
        return {
            'time_lost': since_put_down('recovered'),
            'time_to_relocalize': since_put_down('first_fix'),
            'time_to_goal': since_put_down('goal_reached'),
            'kidnap_distance': lift_to_put_down,
            'search_legs': len(self.legs),
            'fiducial_fixes': len(self.fixes),
        }

    def result(self):
        """Everything for ``result.json``: outcome, figures, milestones, timeline."""
        outcome = self.outcome
        return {
            'success': bool(outcome and outcome.success),
            'reason': outcome.reason if outcome else 'not finished',
            'figures': self.figures(),
            'times': {k: round(v, 3) for k, v in sorted(self._times.items())},
            'goal': list(self.goal),
            'kidnap_pose': list(self.config.kidnap_pose),
            'lift': list(self.lift) if self.lift else None,
            'timeline': [e.format() for e in self.timeline],
        }

    def figure_lines(self):
        """The figures as printable lines."""
        figures = self.figures()

        def show(key):
            value = figures[key]
            return 'n/a' if value is None else '%.1f sim s' % value

        return ['time lost (put-down -> localized):           %s' % show('time_lost'),
                'time to re-localize (put-down -> first fix):  %s' % show('time_to_relocalize'),
                'time to goal (put-down -> goal reached):      %s' % show('time_to_goal'),
                'search legs: %d, fiducial fixes: %d' % (figures['search_legs'],
                                                         figures['fiducial_fixes'])]

    def paths(self):
        """(true, estimate): arrays (n, 3) of t, x, y with NaN rows at jumps."""
        return self._true.array(), self._estimate.array()


def plot_demo(path, scenario, grid=None, tags=None, title='lost_and_found kidnap demo'):
    """Draw the demo into the PNG ``path`` (matplotlib Agg canvas, no display).

    Args:
        path: output PNG file.
        scenario: a :class:`DemoScenario` after (or during) the run.
        grid: the sim GridMap to draw underneath, or None.
        tags: dict id -> 4x4 tag pose (fiducial map) to draw, or None.
        title: the figure title.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(12, 8.5))
    FigureCanvasAgg(figure)
    axes = figure.add_subplot(1, 1, 1)
    if grid is not None:
        rows, cols = grid.shape
        image = np.where(grid.occupied, 0.0, np.where(grid.free, 1.0, 0.8))
        x0, y0 = grid.origin[0], grid.origin[1]
        axes.imshow(image, origin='lower', cmap='gray', vmin=0.0, vmax=1.0,
                    extent=(x0, x0 + cols * grid.resolution, y0, y0 + rows * grid.resolution),
                    interpolation='nearest')
    if tags:
        xy = np.array([pose[:2, 3] for pose in tags.values()])
        axes.scatter(xy[:, 0], xy[:, 1], marker='s', s=18, color='tab:purple',
                     label='fiducials (map)')
    true, estimate = scenario.paths()
    if len(true):
        axes.plot(true[:, 1], true[:, 2], '-', color='tab:green', lw=1.8, label='true path')
    if len(estimate):
        axes.plot(estimate[:, 1], estimate[:, 2], '--', color='tab:blue', lw=1.2,
                  label='amcl estimate')
    if scenario.legs:
        legs = np.array(scenario.legs)
        axes.plot(legs[:, 1], legs[:, 2], ':o', color='tab:orange', ms=4,
                  label='search legs')
    if scenario.fixes:
        fixes = np.array(scenario.fixes)
        axes.scatter(fixes[:, 1], fixes[:, 2], marker='*', s=120, color='gold',
                     edgecolors='k', zorder=7, label='fiducial fixes')
    if scenario.lift is not None:
        axes.scatter(*scenario.lift, marker='^', s=110, color='red', edgecolors='k',
                     zorder=6, label='lifted')
    if scenario.put_down is not None:
        axes.scatter(*scenario.put_down, marker='v', s=110, color='red', edgecolors='k',
                     zorder=6, label='put down')
        if scenario.lift is not None:
            axes.annotate('', xy=scenario.put_down, xytext=scenario.lift,
                          arrowprops=dict(arrowstyle='->', color='red', ls='--'))
    gx, gy, gyaw = scenario.goal
    axes.scatter([gx], [gy], marker='X', s=160, color='magenta', edgecolors='k', zorder=6,
                 label='goal G')
    start = scenario.config.start_pose
    if start:
        axes.scatter([start[0]], [start[1]], marker='o', s=80, color='white',
                     edgecolors='k', zorder=6, label='start')
    outcome = scenario.outcome
    figures = scenario.figures()
    subtitle = 'not finished' if outcome is None else (
        'SUCCESS' if outcome.success else 'FAILURE: ' + outcome.reason)
    details = ', '.join('%s %s' % (k.replace('_', ' '), 'n/a' if figures[k] is None else
                                   '%.1f s' % figures[k])
                        for k in ('time_lost', 'time_to_relocalize', 'time_to_goal'))
    axes.set_title('%s\n%s' % (title, textwrap.fill('%s; %s' % (subtitle, details), 110)),
                   fontsize=10)
    axes.set_xlabel('x (m)')
    axes.set_ylabel('y (m)')
    axes.set_aspect('equal')
    axes.legend(loc='upper left', bbox_to_anchor=(1.01, 1.0), fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
