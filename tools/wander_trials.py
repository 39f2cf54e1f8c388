#!/usr/bin/python3
"""Drive the recovery node's reactive search alone on a map and count its collisions.

Usage (with the workspace's devel space sourced, or from the repository root)::

    /usr/bin/python3 tools/wander_trials.py MAP.yaml [--trials 20] [--seconds 180] [--seed 0]
        [--delay 0.2] [--unstamped] [--start X,Y] [--fiducials FID.yaml] [--set KEY=VALUE ...]

No ROS: the recovery core (``core/recovery.py``, strategy ``reactive``, with the real
``ReactiveWander`` and its obstacle memory) drives the simulator's TurtleBot2
(``sim/world.py``: Kinect-like laser, disc robot, odometry with drift) from random free poses
for ``--seconds`` of sim time each (or, with ``--start X,Y``, from that place in ``--trials``
headings evenly around the circle: to see again what happened where a recovery run's trial
collided). It spins, wanders and looks around as in a real episode;
there are no tags, so the search never ends early (its budget is made longer than a trial).
The loop runs at the node's 10 Hz, the laser at 10 Hz and the odometry at 20 Hz.

``--delay`` models a busy machine: each scan reaches the core that many seconds after it was
taken, stamped with the time it was taken, and a velocity command takes effect that much
later; the small odometry messages come at once. ``--unstamped`` hands the scans over without
their stamp, so the core places them at the latest odometry pose, ``--delay`` s newer than the
scan (what it did before it kept an odometry history): compare the two to see what placing a
scan at its own stamp is worth. Messages and commands are handled on the world's 0.02 s step
(a delay between steps acts as the next step); odometry arriving at once is the model's
simplification (on a busy machine it is late too, by less: it is small and comes at 20 Hz).

``--fiducials`` also times the search the way a recovery needs it: the first sim second at which
the simulated camera, from the true pose, sees a mapped tag that fiducial_localizer would keep
(its distance, view-angle and object-error gates, as the recovery suite's fix bound counts
them). The trial drives on regardless (nothing localizes here), so the same run also gives the
share of trials that would have seen a tag within any budget. ``--set`` overrides a recovery
node parameter (``config/lost_and_found.yaml``'s keys, e.g. ``look_around_every=2``) to compare
settings on the same start poses.

Prints one line per trial (its collisions: where the contact began, the speeds it stopped, the
wander's state; with ``--fiducials`` when it first saw a kept tag; the 1 m cells its path
crossed; the seconds it spent in unknown map cells before it first saw one, which the simulator
treats as open space where no tag hangs) and the totals. Deterministic for a map, its
arguments and the seed. Exit status 1 on a bad map or argument.
"""
import argparse
import collections
import math
import os
import statistics
import sys

try:
    import lost_and_found  # noqa: F401  (the devel space puts the package on the path)
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'src'))

import numpy as np  # noqa: E402
import yaml  # noqa: E402

from lost_and_found.bench.oracle import (  # noqa: E402
    load_camera_config, localizer_acceptance, seen_ids)
from lost_and_found.core.config import ConfigError, config_from_params  # noqa: E402
from lost_and_found.core.fiducial import load_fiducial_map  # noqa: E402
from lost_and_found.core.reactive import Scan  # noqa: E402
from lost_and_found.core.recovery import RecoveryConfig, RecoveryCore  # noqa: E402
from lost_and_found.core.scan_agreement import LaserMount  # noqa: E402
from lost_and_found.sim.camera import Camera  # noqa: E402
from lost_and_found.sim.gridmap import MapError, load_map  # noqa: E402
from lost_and_found.sim.world import SimWorldConfig, World  # noqa: E402
from lost_and_found.state import State  # noqa: E402

#: The search times (s) the summary counts a first kept tag within; a longer trial's length too.
BUDGETS = (30.0, 60.0, 120.0)

#: Sim time step (s) of the world, and the periods (s) of the control loop, laser and odometry.
STEP, CONTROL, SCAN_PERIOD, ODOM_PERIOD = 0.02, 0.1, 0.1, 0.05


def parser():
    """The command line."""
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('map', help='map_server YAML of the map')
    p.add_argument('--trials', type=int, default=20, help='number of start poses (default 20)')
    p.add_argument('--seconds', type=float, default=180.0,
                   help='sim seconds of searching per trial (default 180)')
    p.add_argument('--seed', type=int, default=0, help='seed of the start poses and noise')
    p.add_argument('--delay', type=float, default=0.0,
                   help='seconds between a scan being taken and reaching the core, and '
                        'between a command and its effect (default 0)')
    p.add_argument('--start', help='X,Y: start every trial here (m, map frame), the headings '
                   'spread evenly around the circle')
    p.add_argument('--unstamped', action='store_true',
                   help='hand the scans over without their stamp (placed at the latest pose)')
    p.add_argument('--fiducials', help='fiducial map YAML: also time the first kept tag in view')
    p.add_argument('--set', action='append', default=[], metavar='KEY=VALUE',
                   help='a recovery node parameter (repeatable), e.g. look_around_every=2')
    return p


def parse_overrides(items):
    """``['key=value', ...]`` -> {key: YAML value}; ValueError naming a malformed item."""
    overrides = {}
    for item in items:
        key, sep, value = item.partition('=')
        if not sep or not key.strip():
            raise ValueError('--set %r: must be KEY=VALUE' % item)
        try:
            overrides[key.strip()] = yaml.safe_load(value)
        except yaml.YAMLError:
            raise ValueError('--set %r: the value is not valid YAML' % item) from None
    return overrides


#: Side (m) of the cells whose count tells how much ground a trial's path covered.
CELL = 1.0

Trial = collections.namedtuple('Trial', 'start driven collisions first_tag cells unknown_s')
Trial.__doc__ = """One trial: ``start`` (x, y, yaw), metres ``driven``, ``collisions`` (each
``(t, x, y, yaw, v, w, wander state)``), ``first_tag`` (sim s of the first kept tag in view, or
None: no tags given, or none seen), ``cells`` (the CELL x CELL cells the path crossed) and
``unknown_s`` (seconds before the first kept tag in view, or the end, that the robot spent in
unknown map cells: open space to the simulator, where no tag hangs)."""


class TagView:
    """Whether the simulated camera sees, from a true pose, a mapped tag fiducial_localizer
    keeps (the recovery suite's fix bound counts the same detections)."""

    def __init__(self, grid, fiducials_file):
        """Raises ConfigError on a bad fiducial file or package config."""
        self.camera = Camera(load_camera_config(), load_fiducial_map(fiducials_file), grid)
        self.acceptance = localizer_acceptance()

    def sees(self, pose):
        """True when a kept tag is in view from base pose ``(x, y, yaw)``."""
        return bool(seen_ids(self.camera, pose, self.acceptance))


def recovery_config(seconds, overrides=None):
    """The recovery node's reactive search with its defaults, ``overrides`` (parameter name ->
    value, as in config/lost_and_found.yaml) on top, and a budget longer than ``seconds``.

    Raises:
        ConfigError: naming a bad value.
    """
    params = dict(overrides or {})
    fixed = sorted({'strategy', 'max_search_time'} & set(params))
    if fixed:
        raise ConfigError(['%s: set by the tool (the reactive search, a budget longer than the '
                           'trial), not by --set' % ', '.join(fixed)])
    params.update(strategy='reactive', max_search_time=seconds + 60.0)
    return config_from_params(RecoveryConfig, params, warn=_unknown)


def _unknown(text):
    raise ConfigError([text])


def run_trial(grid, map_file, seed, seconds, delay, unstamped, start=None, tags=None,
              config=None):
    """One trial from ``start`` ``(x, y, yaw)`` (None: a random free pose), searching with
    ``config`` (None: :func:`recovery_config`); with ``tags`` (a :class:`TagView`) it also
    notes the first kept tag in view, checked every control step. Returns a :class:`Trial`.

    Raises:
        ValueError: the robot does not fit at ``start``.
    """
    world = World(SimWorldConfig(map_file=map_file, seed=seed), grid)
    start = world.random_free_pose() if start is None else tuple(start)
    world.teleport(start)
    world.odometry.reset()
    laser = world.laser
    mount = LaserMount(x=laser.config.x, y=laser.config.y, yaw=laser.config.yaw)
    core = RecoveryCore(config or recovery_config(seconds))
    core.on_move_base_available(False)
    core.on_state(State.LOST, 0.0)
    inbox = []                          # (arrival time, order, kind, payload, stamp)
    commands = collections.deque()      # (effective time, v, w)
    collisions = []
    driven = 0.0
    first_tag = None
    cells = set()
    unknown_s = 0.0
    steps = int(round(seconds / STEP))
    for k in range(steps + 1):
        t = round(k * STEP, 9)
        if k % int(round(ODOM_PERIOD / STEP)) == 0:
            inbox.append((t, k, 'odom', world.odometry.pose, t))
        if k % int(round(SCAN_PERIOD / STEP)) == 0:
            scan = Scan(world.scan(), laser.config.angle_min, laser.angle_increment,
                        laser.config.range_min, laser.config.range_max)
            inbox.append((t + delay, k, 'scan', scan, t))
        inbox.sort(key=lambda item: item[:2])
        while inbox and inbox[0][0] <= t + 1e-9:
            _, _, kind, payload, stamp = inbox.pop(0)
            if kind == 'odom':
                core.on_odom(payload[0], payload[1], t, 'odom', yaw=payload[2], stamp=stamp)
            else:
                core.on_scan(payload, t, mount, None if unstamped else stamp)
        if k % int(round(CONTROL / STEP)) == 0:
            cells.add((math.floor(world.pose[0] / CELL), math.floor(world.pose[1] / CELL)))
            if first_tag is None and _in_unknown(grid, world.pose):
                unknown_s += CONTROL
            if tags is not None and first_tag is None and tags.sees(world.pose):
                first_tag = t
            command = core.step(t)
            if command.twist is not None:
                commands.append((t + delay,) + tuple(command.twist))
        while commands and commands[0][0] <= t + 1e-9:
            _, v, w = commands.popleft()
            world.command(v, w)
        before, here = world.collisions, world.pose
        world.step(STEP)
        driven += math.hypot(world.pose[0] - here[0], world.pose[1] - here[1])
        if world.collisions > before:
            collisions.append((t,) + tuple(world.drive.last_collision)
                              + (core.wander.state.name,))
    return Trial(start, driven, collisions, first_tag, len(cells), unknown_s)


def _in_unknown(grid, pose):
    """Whether the map cell under ``pose`` is unknown (outside the grid is not)."""
    rows, cols = grid.cell_index(np.array([pose[0]]), np.array([pose[1]]))
    return bool(grid.in_bounds(rows, cols)[0] and grid.unknown[rows[0], cols[0]])


def main(argv=None):
    """Run the trials and print them; 0, or 1 on a bad argument or map."""
    args = parser().parse_args(argv)
    if args.trials < 1 or not args.seconds > 0 or not args.delay >= 0:
        print('wander_trials: --trials must be >= 1, --seconds > 0 and --delay >= 0',
              file=sys.stderr)
        return 1
    place = None
    if args.start is not None:
        try:
            place = tuple(float(v) for v in args.start.split(','))
        except ValueError:
            place = ()
        if len(place) != 2 or not all(math.isfinite(v) for v in place):
            print('wander_trials: --start %r: must be X,Y in metres' % args.start,
                  file=sys.stderr)
            return 1
    try:
        grid = load_map(args.map)
    except (MapError, OSError) as error:
        print('wander_trials: %s' % error, file=sys.stderr)
        return 1
    try:
        config = recovery_config(args.seconds, parse_overrides(args.set))
        tags = TagView(grid, args.fiducials) if args.fiducials else None
    except (ValueError, ConfigError) as error:
        print('wander_trials: %s' % error, file=sys.stderr)
        return 1
    seeds = np.random.SeedSequence(args.seed).generate_state(args.trials)
    total, distance, firsts, cells, unknown = 0, 0.0, [], [], []
    for trial, seed in enumerate(seeds):
        start = None if place is None else place + (2.0 * math.pi * trial / args.trials,)
        try:
            result = run_trial(grid, args.map, int(seed), args.seconds, args.delay,
                               args.unstamped, start, tags, config)
        except ValueError as error:         # the robot does not fit at --start
            print('wander_trials: %s' % error, file=sys.stderr)
            return 1
        start, collisions = result.start, result.collisions
        total += len(collisions)
        distance += result.driven
        cells.append(result.cells)
        unknown.append(result.unknown_s)
        seen = ''
        if tags is not None:
            firsts.append(result.first_tag)
            seen = ', no kept tag in view' if result.first_tag is None else \
                ', a kept tag in view at %.1f s' % result.first_tag
        print('trial %d from (%.2f, %.2f, %.2f): drove %.1f m over %d cells (%.0f s in unknown '
              'space)%s, %d collision(s)%s'
              % (trial, start[0], start[1], start[2], result.driven, result.cells,
                 result.unknown_s, seen, len(collisions), ''.join(
                     '\n  at %.1f s: (%.2f, %.2f, %.0f deg), v %.2f m/s, w %.2f rad/s, wander %s'
                     % (c[0], c[1], c[2], math.degrees(c[3]), c[4], c[5], c[6])
                     for c in collisions)))
        sys.stdout.flush()
    print('%d collision(s) in %d trials of %.0f s, %.0f m driven (delay %.2f s, scans %s)' % (
        total, args.trials, args.seconds, distance, args.delay,
        'unstamped' if args.unstamped else 'stamped'))
    print('cells crossed per trial: median %.0f' % float(np.median(cells)))
    print('in unknown map space before a kept tag in view (or the end): %d trials 10 s or more, '
          '%.0f s in all' % (sum(s >= 10.0 for s in unknown), sum(unknown)))
    if tags is not None:
        print(sight_summary(firsts, BUDGETS + ((args.seconds,) if args.seconds > BUDGETS[-1]
                                               else ())))
    return 0


def sight_summary(firsts, budgets=BUDGETS):
    """One line: how many trials saw a kept tag within each budget (s; each once, in
    increasing order), and the median time."""
    budgets = sorted(set(budgets))
    seen = sorted(t for t in firsts if t is not None)
    parts = ['%d/%d within %.0f s' % (sum(t <= b for t in seen), len(firsts), b)
             for b in budgets]
    # Unseen trials count as later than any seen one, so the median is over all trials.
    median = statistics.median(seen + [math.inf] * (len(firsts) - len(seen)))
    return 'a kept tag in view: %s; median %s' % (
        ', '.join(parts), 'never' if not math.isfinite(median) else '%.1f s' % median)


if __name__ == '__main__':
    sys.exit(main())
