#!/usr/bin/python3
"""What the recovery node's first spin after a put-down can see, frame by frame.

Usage: tools/first_spin.py MAP.yaml --fiducials FID.yaml [--poses 1000] [--seed 7]
       [--clearance 0.35] [--hop D [--hop-clearance 0.23]]

After a put-down the recovery node spins one full turn in place (``spin_speed``) before it
searches, and a tag the camera saw in that turn too far or too obliquely for fiducial_localizer
(its ``distant_tags``) is approached only once the turn is over. This tool draws ``--poses``
put-downs uniformly over the map's free region (``--clearance`` m from every wall, as the
recovery suite draws them; a uniform heading) and replays that turn with the simulated camera
of ``config/sim_world.yaml`` (one frame every 1 / ``camera_rate`` s, the turn at the recovery
node's ``spin_speed``), noting in which frame the camera first reports a mapped tag
fiducial_localizer keeps (its ``max_distance``, ``max_view_angle`` and ``max_object_error``)
and in which it first reports one it refuses. Each put-down counts in one row: the turn sees no
tag; it sees a kept tag first (or at the same frame as a refused one); it sees a refused tag
first and a kept one later in the turn; it sees refused tags only. For the last two, the
seconds from the first refused tag to the first kept one, and to the end of the turn: what
going for the refused tag at once, instead of finishing the turn, would cost or save, before
the approach itself.

With ``--hop D``, the put-downs whose turn sees no tag at all are also tried with a short hop
and a second turn: D m straight in each of ``HOP_DIRECTIONS`` directions whose segment keeps
``--hop-clearance`` m from the walls (default: the wander's ``robot_radius`` plus
``side_margin``), a full turn at the hop's end. The directions are ranked as a robot that
knows nothing but its laser could rank them, by the free range along them (capped at the
simulated laser's ``range_max``), and a second table counts the put-downs from which a kept
tag, or any tag, is seen after the first 1, 2 or 3 hops in that order (each from the
put-down), and after a hop in any direction. Prints Markdown; writes nothing.
"""
import argparse
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from approach_geometry import least_clearance  # noqa: E402  (the sibling tool's segment check)

#: Directions a hop is tried in (evenly spaced, the first due east).
HOP_DIRECTIONS = 16
#: Default least clearance (m) along a hop: the wander's robot_radius 0.18 plus side_margin 0.05.
HOP_CLEARANCE = 0.23
#: Step (m) along a hop and along a direction's free range.
HOP_STEP = 0.05

#: The rows, in the order printed.
NOTHING, KEPT_FIRST, REFUSED_THEN_KEPT, REFUSED_ONLY = (
    'no tag in the turn', 'a kept tag first', 'a refused tag first, a kept one later',
    'refused tags only')


def classify(seen, kept):
    """The row of one turn and ``(first refused frame, first kept frame)`` (None when none).

    Args:
        seen: per frame, whether the camera reports any mapped tag.
        kept: per frame, whether it reports one fiducial_localizer keeps (implies ``seen``).
    """
    first_kept = next((k for k, ok in enumerate(kept) if ok), None)
    first_refused = next((k for k, (s, ok) in enumerate(zip(seen, kept)) if s and not ok),
                         None)
    if first_kept is None and first_refused is None:
        return NOTHING, None, None
    if first_refused is None or (first_kept is not None and first_kept <= first_refused):
        return KEPT_FIRST, first_refused, first_kept
    if first_kept is None:
        return REFUSED_ONLY, first_refused, None
    return REFUSED_THEN_KEPT, first_refused, first_kept


def turn_frames(spin_speed, camera_rate):
    """Camera frames in one full turn (the frame at the turn's start counted once)."""
    return max(1, int(round(2.0 * math.pi / spin_speed * camera_rate)))


def spin_views(grid, camera, tags, acceptance, pose, frames):
    """``(seen, kept)``: per frame of one turn from ``pose`` (x, y, yaw), whether the camera
    reports any of ``tags`` (oracle tag arrays) and whether fiducial_localizer keeps one."""
    import numpy as np
    from lost_and_found.bench.oracle import visible_pairs
    x, y, yaw = pose
    count = len(tags)
    yaws = np.repeat(yaw + 2.0 * math.pi * np.arange(frames) / frames, count)
    index = np.tile(np.arange(count), frames)
    xs, ys = np.full(yaws.shape, x), np.full(yaws.shape, y)
    seen = visible_pairs(grid, camera, tags, xs, ys, yaws, index)
    kept = visible_pairs(grid, camera, tags, xs, ys, yaws, index, acceptance)
    return (seen.reshape(frames, count).any(axis=1).tolist(),
            kept.reshape(frames, count).any(axis=1).tolist())


def free_range(grid, x, y, heading, reach):
    """How far (m, at most ``reach``) the map is free from (x, y) along ``heading``, in
    HOP_STEP steps."""
    steps = int(math.floor(reach / HOP_STEP + 1e-9))
    for i in range(1, steps + 1):
        if not grid.is_free(x + i * HOP_STEP * math.cos(heading),
                            y + i * HOP_STEP * math.sin(heading)):
            return (i - 1) * HOP_STEP
    return steps * HOP_STEP


def hop_views(grid, camera, tags, acceptance, pose, frames, hop, clearance, reach):
    """``[(free range, kept, seen)]`` of the hops of ``hop`` m from ``pose`` whose straight
    segment keeps ``clearance`` m from the map's walls, longest free range first: whether a
    full turn at the hop's end sees a tag fiducial_localizer keeps, and any tag."""
    x, y = pose[:2]
    out = []
    for k in range(HOP_DIRECTIONS):
        heading = 2.0 * math.pi * k / HOP_DIRECTIONS
        end = (x + hop * math.cos(heading), y + hop * math.sin(heading))
        if least_clearance(grid.distance_at, (x, y), end, HOP_STEP) < clearance:
            continue
        seen, kept = spin_views(grid, camera, tags, acceptance, end + (heading,), frames)
        out.append((free_range(grid, x, y, heading, reach), any(kept), any(seen)))
    out.sort(key=lambda view: -view[0])
    return out


def hop_report(hops, hop):
    """Markdown lines from the :func:`hop_views` of the put-downs whose turn saw no tag."""
    lines = ['| hops of %.2f m, longest free range first | put-downs whose turn saw no tag | '
             'a kept tag after 1 / 2 / 3 hops | after a hop in any direction | any tag after '
             '1 / 2 / 3 hops | after a hop in any direction |' % hop, '|---|---|---|---|---|---|']
    counts = []
    for column in (1, 2):
        counts.append(' / '.join(str(sum(1 for views in hops if any(v[column] for v in views[:n])))
                                 for n in (1, 2, 3)))
        counts.append(str(sum(1 for views in hops if any(v[column] for v in views))))
    lines.append('| %d directions | %d | %s |' % (HOP_DIRECTIONS, len(hops), ' | '.join(counts)))
    return lines


def report(results, frames, camera_rate, poses):
    """Markdown lines from ``[(row, first refused, first kept)]`` of ``poses`` put-downs."""
    lines = ['| first turn (%d frames, %.1f s) | put-downs | share | s from the first refused '
             'tag to the first kept one (median) | s left in the turn after the first refused '
             'tag (median) |' % (frames, frames / camera_rate), '|---|---|---|---|---|']
    for row in (NOTHING, KEPT_FIRST, REFUSED_THEN_KEPT, REFUSED_ONLY):
        mine = [r for r in results if r[0] == row]
        gap = ('%.1f' % (statistics.median(k - r for _, r, k in mine) / camera_rate)
               if mine and row == REFUSED_THEN_KEPT else '-')
        left = ('%.1f' % (statistics.median(frames - r for _, r, _ in mine) / camera_rate)
                if mine and row in (REFUSED_THEN_KEPT, REFUSED_ONLY) else '-')
        lines.append('| %s | %d | %.1f %% | %s | %s |' % (
            row, len(mine), 100.0 * len(mine) / max(1, poses), gap, left))
    return lines


def main(argv):
    import numpy as np
    from lost_and_found.bench.oracle import (_config_number, _tag_arrays, load_camera_config,
                                             localizer_acceptance)
    from lost_and_found.bench.places import CLEARANCE, FreeSpace, PlacesError
    from lost_and_found.core.config import ConfigError
    from lost_and_found.core.fiducial import load_fiducial_map
    from lost_and_found.core.recovery import RecoveryConfig
    from lost_and_found.sim.gridmap import load_map
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('map', metavar='MAP.yaml')
    parser.add_argument('--fiducials', required=True, help='the fiducial YAML')
    parser.add_argument('--poses', type=int, default=1000, help='put-downs (default 1000)')
    parser.add_argument('--seed', type=int, default=7)
    parser.add_argument('--clearance', type=float, default=CLEARANCE,
                        help='least distance of a put-down from walls (m, default %.2f, the '
                        'recovery suite\'s)' % CLEARANCE)
    parser.add_argument('--hop', type=float, metavar='D',
                        help='also try hops of D m, and a turn, from the put-downs whose turn '
                        'saw no tag')
    parser.add_argument('--hop-clearance', type=float, default=HOP_CLEARANCE,
                        help='least distance of a hop from walls (m, default %.2f)'
                        % HOP_CLEARANCE)
    args = parser.parse_args(argv)
    if args.poses < 1:
        parser.error('--poses %d: give at least 1' % args.poses)
    if args.hop is not None and not (math.isfinite(args.hop) and args.hop > 0):
        parser.error('--hop %r: a distance > 0 m' % args.hop)
    if not (math.isfinite(args.hop_clearance) and args.hop_clearance >= 0):
        parser.error('--hop-clearance %r: a distance >= 0 m' % args.hop_clearance)
    try:
        grid = load_map(args.map)
        _ids, tags = _tag_arrays(load_fiducial_map(args.fiducials))
        free = FreeSpace(grid, args.clearance)
        camera_rate = _config_number(None, 'sim_world.yaml', 'camera_rate')
        reach = _config_number(None, 'sim_world.yaml', 'laser', 'range_max')
    except (ValueError, ConfigError, PlacesError, OSError) as error:
        sys.exit('first_spin: %s' % error)
    camera, acceptance = load_camera_config(None, exact=False), localizer_acceptance()
    frames = turn_frames(RecoveryConfig().spin_speed, camera_rate)
    rng = np.random.default_rng(args.seed)
    results, hops = [], []
    for _ in range(args.poses):
        pose = free.sample(rng)
        seen, kept = spin_views(grid, camera, tags, acceptance, pose, frames)
        results.append(classify(seen, kept))
        if args.hop is not None and not any(seen):
            hops.append(hop_views(grid, camera, tags, acceptance, pose, frames, args.hop,
                                  args.hop_clearance, reach))
    print('## %s\n' % args.map)
    print('\n'.join(report(results, frames, camera_rate, args.poses)))
    if args.hop is not None:
        print('\n' + '\n'.join(hop_report(hops, args.hop)))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
