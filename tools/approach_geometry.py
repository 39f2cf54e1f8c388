#!/usr/bin/python3
"""Where a recovery run's approaches of distant tags began, and whether a straight drive
could have got there.

Usage: tools/approach_geometry.py DIR [DIR ...] --map MAP.yaml --fiducials FID.yaml
       [--standoff M] [--approach-max-distance M] [--approach-max-view-angle RAD]
       [--sight-range 2.5] [--max-view-angle RAD] [--half-width M]

``--standoff``, ``--approach-max-distance``, ``--approach-max-view-angle``, ``--max-view-angle``
and ``--half-width`` default to the package's own defaults: the recovery node's
``approach_standoff``, ``approach_max_distance`` and ``approach_max_view_angle``,
fiducial_localizer's ``max_view_angle``, and the recovery node's ``reactive/robot_radius`` plus
``reactive/side_margin``. A run of the package before ``892da58``, whose approaches all went to
the standoff point, is read with ``--approach-max-distance 1.2 --approach-max-view-angle 0``.

DIR is the output folder of `bench recovery` on MAP with the tags of FID. When the camera sees a
mapped tag too far, too obliquely or too noisily for fiducial_localizer (``recovery: tag N
seen`` in the run's rosout.log), the recovery node drives straight, in the odometry frame, to
its goal (core/approach.py ``approach_point``: the nearest place within
``--approach-max-distance`` of the tag and ``--approach-max-view-angle`` of its face, no nearer
than ``--standoff``) and stops for good when the laser or its memory shows something in its
path. For every approach this tool takes the robot's
true pose from the trial's 1 Hz trace (the sample nearest to the approach's start, within 1 s)
and the tag from FID, and prints how far the tag was, the angle between the tag's
face and the robot (fiducial_localizer keeps detections up to ``--max-view-angle``), and the
least clearance (m, from the simulator's contact check: to the map's occupied cells) along the
straight line to the goal and along the line of sight to ``--sight-range`` m from
the tag, each against ``--half-width`` (the approach's footprint half width: robot radius plus
side margin). How each approach ended is read as tools/recovery_failures.py reads it. Then,
per outcome, how many approaches had the straight line to the goal clear, how many had it
walled but could have gone along the line of sight (clear, the face within the view angle,
farther than the sight range), how many had the line of sight clear but of no use, and how many
had both lines walled (an approach more than 1 s from every trace sample, or of a tag not in
FID, is listed without geometry). With ``approach_clear_way`` on, an approach whose straight
way the laser showed blocked may go to another place than the nearest (``... going to (x, y)
instead`` in the log, just before the approach's own line); such an approach is listed as
gone elsewhere, without geometry, since the lines measured here lead to the nearest place.
Prints Markdown; writes nothing.
"""
import argparse
import math
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import recovery_failures as rf  # noqa: E402  (the sibling tool, for its log readers)

#: Step (m) of the clearance samples along a line.
STEP = 0.02
#: Largest gap (s) between an approach and the trace sample its pose is taken from.
MAX_GAP = 1.0
#: The recovery node's line when approach_clear_way sends an approach elsewhere than the
#: nearest place (logged at the approach's start, before its own line).
ELSEWHERE = re.compile(r'^(\d+(?:\.\d+)?) .*recovery: .*: going to \(\S+, \S+\) instead, ')
#: Largest gap (s) between that line and the approach's own.
ELSEWHERE_GAP = 0.1


def tag_poses(path):
    """{id: (x, y, facing yaw or None)} of the upright tags of a fiducial YAML."""
    from lost_and_found.core.fiducial import facing_yaw, load_fiducial_map
    return {fiducial_id: (float(pose[0, 3]), float(pose[1, 3]), facing_yaw(pose))
            for fiducial_id, pose in load_fiducial_map(path).poses.items()}


def least_clearance(clearance, a, b, step=STEP):
    """Least of ``clearance(x, y)`` over points at most ``step`` m apart along the segment
    ``a``-``b``, both ends included."""
    length = math.hypot(b[0] - a[0], b[1] - a[1])
    n = max(1, int(math.ceil(length / step)))
    return min(clearance(a[0] + (b[0] - a[0]) * k / n, a[1] + (b[1] - a[1]) * k / n)
               for k in range(n + 1))


def geometry(robot, tag, clearance, goal_limits, sight_range):
    """(distance, view angle or None, least clearance to the approach's goal, least clearance
    along the line of sight to ``sight_range`` from the tag) of a robot at ``robot`` (x, y)
    seeing ``tag`` (x, y, facing yaw or None); ``goal_limits`` are approach_point's
    ``(standoff, max_distance, max_view_angle)``."""
    from lost_and_found.core.approach import approach_point
    x, y = robot
    tx, ty, facing = tag
    distance = math.hypot(tx - x, ty - y)
    view = None if facing is None else \
        abs(math.remainder(math.atan2(y - ty, x - tx) - facing, 2.0 * math.pi))
    goal = approach_point((tx, ty), facing, (x, y), *goal_limits)
    share = max(0.0, (distance - sight_range) / distance) if distance > 0.0 else 0.0
    sight = (x + (tx - x) * share, y + (ty - y) * share)
    return (distance, view, least_clearance(clearance, (x, y), goal),
            least_clearance(clearance, (x, y), sight))


def kind(distance, view, to_goal, along_sight, args):
    """Which column of the tally an approach with this geometry counts in: 1 the straight
    line to the goal clear, 2 walled but the line of sight serves, 3 walled and the line of
    sight clear but of no use (the face too far off, a flat tag, or already nearer than the
    sight range), 4 both walled (0 counts the approaches without geometry)."""
    if to_goal >= args.half_width:
        return 1
    if along_sight < args.half_width:
        return 4
    if view is not None and view <= args.max_view_angle and distance > args.sight_range:
        return 2
    return 3


def approaches(folder, trials):
    """[(sim time, trial, tag id, outcome, elsewhere)] of a run's approaches, outcome as
    recovery_failures.approach_outcomes names it; ``elsewhere``: approach_clear_way sent it
    to another place than the nearest."""
    diverted = [t for t, _ in rf.log_matches(folder, ELSEWHERE)]
    found = []
    for t, trial, match, outcome in rf.approach_list(folder, trials):
        try:
            tag_id = int(match.group(2))
        except ValueError:
            tag_id = match.group(2)         # not a mapped id: reported without geometry
        elsewhere = any(t - ELSEWHERE_GAP <= t_other <= t for t_other in diverted)
        found.append((t, trial, tag_id, outcome, elsewhere))
    return found


def report(folder, tags, clearance, args):
    """Markdown lines for one run."""
    run = rf.read_run(folder, 'approach_geometry')
    trials = rf.by_put_down(run['trials'])
    lines = ['## %s' % folder, '',
             '| strategy | trial | s after put-down | tag | outcome | distance (m) | view angle '
             '(rad) | least clearance to the goal (m) | along the line of sight (m) |',
             '|---|---|---|---|---|---|---|---|---|']
    tally = {}
    for t, trial, tag_id, outcome, elsewhere in approaches(folder, trials):
        sample = rf.at(trial, t)
        if sample is not None and abs(trial['t_put_down_sim'] + sample[0] - t) > MAX_GAP:
            sample = None               # e.g. an approach after the trace ended
        if sample is None or tag_id not in tags or elsewhere:
            lines.append('| `%s` | %d | %.0f | %s | %s%s | - | - | - | - |' % (
                trial['strategy'], trial['index'], t - trial['t_put_down_sim'], tag_id,
                outcome, ', gone elsewhere' if elsewhere else ''))
            tally.setdefault(outcome, [0] * 5)[0] += 1
            continue
        distance, view, to_goal, along_sight = geometry(
            (sample[1], sample[2]), tags[tag_id], clearance,
            (args.standoff, args.approach_max_distance, args.approach_max_view_angle),
            args.sight_range)
        lines.append('| `%s` | %d | %.0f | %d | %s | %.2f | %s | %.3f | %.3f |' % (
            trial['strategy'], trial['index'], t - trial['t_put_down_sim'], tag_id, outcome,
            distance, '-' if view is None else '%.2f' % view, to_goal, along_sight))
        column = kind(distance, view, to_goal, along_sight, args)
        tally.setdefault(outcome, [0] * 5)[column] += 1
    lines += ['', '| outcome | approaches | without geometry (tag not in the YAML, no trace '
              'sample within %.0f s, gone elsewhere) | straight line to the goal clear | walled '
              'there: the line of sight to %.1f m clear, the face within %.2f rad | walled there: '
              'the line of sight clear, the face farther off (or a flat tag, or nearer than %.1f '
              'm) | '
              'both lines walled |' % (MAX_GAP, args.sight_range, args.max_view_angle,
                                       args.sight_range), '|---|---|---|---|---|---|---|']
    for outcome in sorted(tally):
        lines.append('| %s | %d | %s |' % (outcome, sum(tally[outcome]),
                                           ' | '.join(str(n) for n in tally[outcome])))
    return lines


def main(argv):
    """Print the report of every folder."""
    from lost_and_found.core.config import ConfigError
    from lost_and_found.core.fiducial import FiducialLocalizerConfig
    from lost_and_found.core.recovery import RecoveryConfig
    from lost_and_found.sim.gridmap import load_map
    from lost_and_found.sim.robot import DiffDrive, RobotConfig
    recovery = RecoveryConfig()
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('folders', nargs='+', metavar='DIR')
    parser.add_argument('--map', required=True, help='the map_server YAML the run used')
    parser.add_argument('--fiducials', required=True, help='the fiducial YAML the run used')
    parser.add_argument('--standoff', type=float, default=recovery.approach_standoff)
    parser.add_argument('--approach-max-distance', type=float,
                        default=recovery.approach_max_distance)
    parser.add_argument('--approach-max-view-angle', type=float,
                        default=recovery.approach_max_view_angle)
    parser.add_argument('--sight-range', type=float, default=2.5)
    parser.add_argument('--max-view-angle', type=float,
                        default=FiducialLocalizerConfig().max_view_angle)
    parser.add_argument('--half-width', type=float,
                        default=recovery.reactive_config().half_width)
    args = parser.parse_args(argv[1:])
    try:
        grid = load_map(args.map)
        tags = tag_poses(args.fiducials)
    except (ValueError, ConfigError) as error:
        sys.exit('approach_geometry: %s' % error)
    drive = DiffDrive(RobotConfig(), grid)

    def clearance(x, y):
        return drive.clearance(x, y, within=math.inf)

    for folder in args.folders:
        print('\n'.join(report(folder, tags, clearance, args)) + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
