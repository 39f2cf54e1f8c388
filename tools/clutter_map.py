#!/usr/bin/python3
"""A cluttered copy of a map: small square blobs (chair legs, bins) standing alone in open floor.

Usage: tools/clutter_map.py MAP.yaml OUT.yaml [--seed 7] [--attempts 200]

Every blob is a square of 2, 3 or 4 cells a side, its corner cell on known-free floor whose
disc of ``--clear`` (0.5 m) is all known free, at least ``--spacing`` (1.2 m) from every
other blob's corner: obstacles a robot passes on both sides, as in the Intel lab's clutter.
The blobs are drawn into the map itself, so a laser-only test of the wander
(``tools/wander_trials.py``, whose world is the map) drives among them. Writes OUT.yaml and
its PGM (``sim.gridmap.save_map``); prints how many blobs it placed. Same map, seed and
options -> the same file.
"""
import argparse
import math
import os
import sys

import numpy as np

from lost_and_found.sim.gridmap import GridMap, MapError, load_map, save_map

#: Tries of random free cells for each blob before it is given up.
TRIES = 200


def add_blobs(grid, seed, attempts, clear=0.5, spacing=1.2):
    """(the cluttered GridMap, the blobs' (row, column, side) in image rows, top down).

    Cells are drawn in the image's row order (top row first), as the map's file stores them.
    """
    free = grid.free[::-1]
    occupied = grid.occupied[::-1].copy()
    res = grid.resolution
    rng = np.random.default_rng(seed)
    reach = int(math.ceil(clear / res))
    dy, dx = np.mgrid[-reach:reach + 1, -reach:reach + 1]
    disc = (dx ** 2 + dy ** 2) * res * res <= clear * clear
    rows, cols = np.nonzero(free)
    if len(rows) == 0:
        return grid, []
    blobs = []
    for _ in range(attempts):
        for _ in range(TRIES):
            k = rng.integers(len(rows))
            r, c = rows[k], cols[k]
            if r < reach or c < reach or r + reach >= free.shape[0] or \
                    c + reach >= free.shape[1]:
                continue
            if not free[r - reach:r + reach + 1, c - reach:c + reach + 1][disc].all():
                continue
            if any((r - r2) ** 2 + (c - c2) ** 2 < (spacing / res) ** 2
                   for r2, c2, _ in blobs):
                continue
            side = int(rng.integers(2, 5))
            occupied[r:r + side, c:c + side] = True
            blobs.append((int(r), int(c), side))
            break
    return GridMap(occupied[::-1], free[::-1] & ~occupied[::-1], res, grid.origin), blobs


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('map', help='map_server YAML of the map to clutter')
    parser.add_argument('out', help='the cluttered map\'s YAML (its PGM goes beside it)')
    parser.add_argument('--seed', type=int, default=7, help='seed of the blobs\' places')
    parser.add_argument('--attempts', type=int, default=200, help='blobs to try to place')
    parser.add_argument('--clear', type=float, default=0.5,
                        help='known-free radius around a blob\'s corner cell (m)')
    parser.add_argument('--spacing', type=float, default=1.2,
                        help='least distance between two blobs\' corner cells (m)')
    args = parser.parse_args(argv)
    try:
        grid = load_map(args.map)
    except MapError as error:
        print('clutter_map: %s' % error, file=sys.stderr)
        return 2
    cluttered, blobs = add_blobs(grid, args.seed, args.attempts, args.clear, args.spacing)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    save_map(cluttered, args.out)
    print('%s: %d blobs placed of %d tried (seed %d)' % (args.out, len(blobs), args.attempts,
                                                         args.seed))
    return 0


if __name__ == '__main__':
    sys.exit(main())
