#!/usr/bin/python3
"""Where the simulated robot may go on each map: the cells its planner and the bench count.

Usage: tools/map_cells.py MAP.yaml [MAP.yaml ...] [--clearance 0.35]

For each map prints one Markdown row: the sim_navigator planner's traversable cells (default
``PlannerConfig``, the values ``config/sim_navigator.yaml`` ships), the sum of their costs per
metre (the inflation gradient that keeps paths in the middle of corridors), and the cells of
the bench's reachable free space (``FreeSpace`` at ``--clearance``, where every benchmark pose
is drawn from). Run it in two checkouts (or with ``PYTHONPATH`` on another checkout's
``src``) to see what a change to the simulator's map handling moves on which map. Writes
nothing.
"""
import argparse
import os
import sys

from lost_and_found.bench.places import CLEARANCE, FreeSpace, PlacesError
from lost_and_found.sim.gridmap import MapError, load_map
from lost_and_found.sim.planner import Planner


def map_cells(grid, clearance=CLEARANCE):
    """(planner traversable cells, their summed cost, bench free-space cells) of one map."""
    planner = Planner(grid)
    try:
        free = int(FreeSpace(grid, clearance).mask.sum())
    except PlacesError:
        free = 0
    return (int(planner.traversable.sum()), float(planner.cost[planner.traversable].sum()),
            free)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('maps', nargs='+', help='map_server YAML files')
    parser.add_argument('--clearance', type=float, default=CLEARANCE,
                        help='the bench free space\'s least distance from obstacles (m)')
    args = parser.parse_args(argv)
    print('| map | planner traversable cells | their summed cost | bench free-space cells |')
    print('|---|---:|---:|---:|')
    for path in args.maps:
        try:
            grid = load_map(path)
        except MapError as error:
            print('map_cells: %s' % error, file=sys.stderr)
            return 1
        traversable, cost, free = map_cells(grid, args.clearance)
        print('| %s | %d | %.1f | %d |' % (os.path.basename(path), traversable, cost, free))
    return 0


if __name__ == '__main__':
    sys.exit(main())
