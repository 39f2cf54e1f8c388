"""``rosrun lost_and_found bench <suite> --map MAP.yaml --fiducials FID.yaml --trials N --seed S
--out DIR``: run one benchmark suite on the real ROS graph and write its results.

Suites (each in its own module, each a ``run(ctx)`` returning a result dict):

- ``detection``: silent delocalizations and normal driving; lost_detector vs amcl's and Nav2's
  covariance rules, on the same recorded amcl pose streams.
- ``real-logs``: the Carmen Intel and ACES logs replayed through sim_localizer + lost_detector.
- ``recovery``: lift kidnaps while navigating, per search strategy, against an oracle bound.
- ``compute``: per-message callback cost and the simulator's real-time factor.

Every suite writes ``DIR/<suite>.json`` (the command, the seed, every trial and the summary),
``DIR/<suite>.md`` (the tables) and its PNG plots into ``DIR``.
"""
import argparse
import importlib
import os
import shlex
import signal
import sys
import time

import numpy as np

from lost_and_found.bench import report
from lost_and_found.sim.laser import NO_RETURN

#: ``--fiducials`` value that places the tags itself (:func:`place_tags`).
AUTO_FIDUCIALS = 'auto'

#: suite name -> module of lost_and_found.bench with ``run(ctx)``.
SUITES = {
    'detection': 'detection',
    'real-logs': 'real_logs',
    'recovery': 'recovery',
    'compute': 'compute',
}


class BenchContext:
    """What a suite gets: its arguments, a seeded RNG, an output folder and a progress line.

    Attributes:
        args: the parsed command line (``map``, ``fiducials``, ``trials``, ``seed``, ``out``,
            ``speed``, ``quick`` and the suite options).
        suite: the suite's name.
        rng: ``numpy.random.Generator`` seeded with ``args.seed``: draw every random choice
            of the trials from it (or from generators derived from it), so a seed fixes them.
        out: the output folder (exists).
        log_dir: where the graph's logs go (``out/logs/<suite>``).
    """

    def __init__(self, args, suite, stream=None):
        """Create the output folders."""
        self.args = args
        self.suite = suite
        self.rng = np.random.default_rng(args.seed)
        self.out = os.path.abspath(args.out)
        self.log_dir = os.path.join(self.out, 'logs', suite)
        os.makedirs(self.log_dir, exist_ok=True)
        self._stream = stream or sys.stdout
        self._start = time.monotonic()

    def progress(self, text):
        """One progress line, prefixed with the suite and the wall time so far."""
        self._stream.write('[bench %s %6.0f s] %s\n' % (self.suite, time.monotonic() -
                                                        self._start, text))
        self._stream.flush()

    def path(self, name):
        """A file in the output folder."""
        return os.path.join(self.out, name)

    @property
    def wall_time(self):
        """Wall seconds since the suite started."""
        return time.monotonic() - self._start


def parser():
    """The command line."""
    p = argparse.ArgumentParser(
        prog='bench', description='Benchmarks of lost_and_found on the real ROS graph '
        '(simulator + package, sim time). Writes DIR/<suite>.json, DIR/<suite>.md and plots.')
    p.add_argument('suite', choices=sorted(SUITES), help='which suite to run')
    p.add_argument('--map', help='map_server YAML of the map (default: the package\'s office '
                   'map)')
    p.add_argument('--fiducials', help='fiducial map YAML of the tags on that map, or '
                   '"auto": hang tags on the map\'s walls with this seed, as '
                   'tools/place_fiducials.py does, into DIR/<label>_fiducials.yaml (default: '
                   'the map\'s <name>_fiducials.yaml next to it, if any; else no tags)')
    p.add_argument('--trials', type=int, help='number of trials (default: per suite)')
    p.add_argument('--seed', type=int, default=0, help='seed of every random choice '
                   '(default 0)')
    p.add_argument('--out', default='bench-results', help='output folder (default '
                   './bench-results)')
    p.add_argument('--speed', type=float, default=0.0, help='sim time per wall time of the '
                   'simulator (default 0: as fast as it can)')
    p.add_argument('--particles', type=int, default=2000, help='the localizer\'s '
                   'max_particles (default 2000)')
    p.add_argument('--quick', action='store_true', help='a few short trials: checks that '
                   'the harness works, not a measurement')
    p.add_argument('--strategies', default='spiral,reactive,none', help='recovery: '
                   'comma-separated strategies (default spiral,reactive,none)')
    p.add_argument('--detector-config', help='detection/real-logs: lost_detector YAML to '
                   'evaluate (default: the shipped config/lost_detector.yaml)')
    p.add_argument('--logs', help='real-logs: folder of the Carmen logs (default: '
                   '../shared/data/logs next to the package, if present)')
    p.add_argument('--clutter', type=float, default=0.0, help='detection/recovery: '
                   'unmapped boxes per 100 m^2 of free space in the simulated world (chairs, '
                   'bins, people: the laser sees them, the package\'s map does not; default 0)')
    p.add_argument('--stale', type=float, default=0.0, help='detection/recovery: openings '
                   'per 100 m^2 of free space cut into the mapped obstacles of the simulated '
                   'world (doors open that were shut when mapped, furniture moved away: the '
                   'laser sees through mapped walls; default 0)')
    p.add_argument('--label', help='a name for this map in the tables (default: the map '
                   'file\'s name)')
    p.add_argument('--laser-no-return', choices=NO_RETURN, help='detection/recovery: how the '
                   'simulated laser reports beams without a valid range: inf (REP 117) or nan '
                   '(as depthimage_to_laserscan reports a Kinect\'s; default: '
                   'config/sim_world.yaml, inf)')
    p.add_argument('--panorama', choices=('on', 'off'), help='recovery: start the package '
                   'with panorama_localizer (on) or without (off) (lost_and_found.launch '
                   'use_panorama; default: the launch file\'s default)')
    p.add_argument('--panorama-config', help='recovery: panorama_localizer YAML to start it '
                   'with (lost_and_found.launch panorama_localizer_config; default: the '
                   'shipped config/panorama_localizer.yaml)')
    p.add_argument('--localizer-config', help='detection/recovery: sim_localizer (the amcl '
                   'stand-in) YAML to start the simulator with (sim.launch '
                   'sim_localizer_config; default: the shipped config/sim_localizer.yaml), '
                   'e.g. with the laser model of a robot\'s own amcl launch file; '
                   '--particles, the seed and the start pose still apply)')
    return p


def package_dir():
    """The package's root folder (where maps/ and config/ are): the repository itself, also
    when run through the workspace's folder of links (so that ../shared is found beside it).
    """
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.normpath(os.path.join(here, '..', '..', '..'))
    return os.path.dirname(os.path.realpath(os.path.join(root, 'package.xml')))


def resolve_inputs(args):
    """Fill in the default map and fiducials; refuse files that do not exist."""
    root = package_dir()
    if not args.map:
        args.map = os.path.join(root, 'maps', 'office.yaml')
    args.map = os.path.abspath(args.map)
    if not os.path.isfile(args.map):
        raise SystemExit('bench: --map %s: no such file' % args.map)
    if args.fiducials == AUTO_FIDUCIALS:
        if args.suite == 'real-logs':
            raise SystemExit('bench: --fiducials auto: the real-logs suite replays logs, it '
                             'has no map to hang tags on')
    elif not args.fiducials:
        guess = os.path.splitext(args.map)[0] + '_fiducials.yaml'
        args.fiducials = guess if os.path.isfile(guess) else ''
    elif not os.path.isfile(args.fiducials):
        raise SystemExit('bench: --fiducials %s: no such file' % args.fiducials)
    if args.fiducials and args.fiducials != AUTO_FIDUCIALS:
        args.fiducials = os.path.abspath(args.fiducials)
    if args.detector_config:
        args.detector_config = os.path.abspath(args.detector_config)
    else:
        args.detector_config = os.path.join(root, 'config', 'lost_detector.yaml')
    if not args.label:
        args.label = os.path.splitext(os.path.basename(args.map))[0]
    if args.trials is not None and args.trials < 1:
        raise SystemExit('bench: --trials %d: must be >= 1' % args.trials)
    for name in ('clutter', 'stale'):
        value = getattr(args, name)
        if not (value >= 0 and value < float('inf')):
            raise SystemExit('bench: --%s %r: must be a finite number >= 0' % (name, value))
        if value and args.suite not in ('detection', 'recovery'):
            raise SystemExit('bench: --%s is for the detection and recovery suites only'
                             % name)
    if args.panorama and args.suite != 'recovery':
        raise SystemExit('bench: --panorama is for the recovery suite only')
    if args.panorama_config:
        if args.suite != 'recovery':
            raise SystemExit('bench: --panorama-config is for the recovery suite only')
        if args.panorama == 'off':
            raise SystemExit('bench: --panorama-config with --panorama off: the node does not '
                             'run')
        args.panorama_config = os.path.abspath(args.panorama_config)
        if not os.path.isfile(args.panorama_config):
            raise SystemExit('bench: --panorama-config %s: no such file' % args.panorama_config)
    if args.localizer_config:
        if args.suite not in ('detection', 'recovery'):
            raise SystemExit('bench: --localizer-config is for the detection and recovery '
                             'suites only')
        args.localizer_config = os.path.abspath(args.localizer_config)
        if not os.path.isfile(args.localizer_config):
            raise SystemExit('bench: --localizer-config %s: no such file'
                             % args.localizer_config)
    if args.laser_no_return and args.suite not in ('detection', 'recovery'):
        raise SystemExit('bench: --laser-no-return is for the detection and recovery suites '
                         'only (the others do not run the simulated laser)')
    return args


def place_tags(ctx):
    """``--fiducials auto``: hang ArUco tags on the walls of ``--map`` with the run's seed and
    the defaults of ``tools/place_fiducials.py`` (the same tags as ``tools/place_fiducials.py
    MAP --seed S``), write them to ``DIR/<label>_fiducials.yaml`` and return its path.
    SystemExit naming the map when it cannot be read or has no wall a tag can hang on."""
    from lost_and_found.bench import fiducials, oracle
    from lost_and_found.bench.places import PlacesError
    from lost_and_found.core.config import ConfigError
    from lost_and_found.sim.gridmap import MapError, load_map
    args = ctx.args
    ctx.progress('--fiducials auto: hanging tags on the walls of %s (seed %d)...'
                 % (args.map, args.seed))
    try:
        grid = load_map(args.map)
        tags, check = fiducials.place_and_check(grid, seed=args.seed,
                                                camera_config=oracle.load_camera_config())
    except (MapError, ConfigError, PlacesError, fiducials.PlacementError,
            oracle.OracleError) as error:
        raise SystemExit('bench: --fiducials auto: %s' % error)
    if not tags:
        raise SystemExit('bench: --fiducials auto: no wall of %s can hold a tag' % args.map)
    path = ctx.path('%s_fiducials.yaml' % args.label)
    header = ['ArUco tags of %s, placed by `bench --fiducials auto` with seed %d (the same as '
              'tools/place_fiducials.py MAP --seed %d).' % (args.map, args.seed, args.seed),
              '%d tags; a 360 deg spin in place sees a tag from %.1f %% of the free region.'
              % (len(tags), 100.0 * check['coverage'])]
    with open(path, 'w') as stream:
        stream.write(fiducials.to_yaml(tags, header))
    ctx.progress('--fiducials auto: %d tags (a spin sees one from %.1f %% of the free region) '
                 '-> %s' % (len(tags), 100.0 * check['coverage'], path))
    return path


def write_results(ctx, result, command):
    """Write ``<suite>.json`` and ``<suite>.md``; return the paths."""
    name = ctx.suite.replace('-', '_')
    result = dict(result)
    result.setdefault('suite', ctx.suite)
    result['command'] = command
    result['seed'] = ctx.args.seed
    result['map'] = ctx.args.map
    result['fiducials'] = ctx.args.fiducials
    result['wall_time_s'] = round(ctx.wall_time, 1)
    json_path = ctx.path('%s.json' % name)
    report.write_json(json_path, result)
    md_path = ctx.path('%s.md' % name)
    report.write_markdown(md_path, '%s (%s)' % (ctx.suite, result.get('label', ctx.args.label)),
                          command, result.get('markdown', ''), result.get('plots', []),
                          ctx.wall_time)
    return json_path, md_path


def main(argv=None):
    """Run one suite; exit 0 when it completed (whatever its figures), 1 when it could not."""
    argv = sys.argv[1:] if argv is None else argv
    argv = [a for a in argv if not a.startswith('__')]     # roslaunch's __name:= / __log:=
    args = resolve_inputs(parser().parse_args(argv))
    command = 'rosrun lost_and_found bench ' + shlex.join(argv)
    # A SIGTERM (timeout, kill) unwinds like Ctrl-C: every graph the suite started is stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ctx = BenchContext(args, args.suite)
    module = importlib.import_module('lost_and_found.bench.' + SUITES[args.suite])
    if args.fiducials == AUTO_FIDUCIALS:
        args.fiducials = place_tags(ctx)
    elif not args.fiducials and args.suite in ('detection', 'recovery', 'compute'):
        ctx.progress('no fiducial map (none given, none named <map>_fiducials.yaml beside the '
                     'map): the simulated world has no tags, so no tag fixes%s; '
                     '--fiducials auto hangs tags on its walls'
                     % (' and no oracle bound' if args.suite == 'recovery' else ''))
    ctx.progress('map %s, fiducials %s, seed %d -> %s' % (
        args.map, args.fiducials or '(none)', args.seed, ctx.out))
    result = module.run(ctx)
    if result is None:
        return 1
    json_path, md_path = write_results(ctx, result, command)
    ctx.progress('wrote %s and %s' % (json_path, md_path))
    if result.get('markdown'):
        print(result['markdown'])
    return 0 if not result.get('error') else 1
